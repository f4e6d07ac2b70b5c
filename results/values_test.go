package results

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestValuesAreTheMapInJSON: Values write the bytes a map of them
// wrote (names in order, escaped as map keys, HTML-escaped or not as
// the encoder says), NaN is still an error, and they read back equal.
func TestValuesAreTheMapInJSON(t *testing.T) {
	for _, m := range []map[string]float64{
		nil,
		{"tps": 1234.5, "latency_p99_ms": 0.000012, "b": 1e21, "a": -0, "z": 3},
		{"a<b&c>": 1, "é\u2028\"q\"": 2, "x\ty": 100000000},
	} {
		for _, html := range []bool{true, false} {
			encode := func(v any) string {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(html)
				if err := enc.Encode(v); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			type withMap struct {
				M map[string]float64 `json:"metrics,omitempty"`
			}
			type withValues struct {
				M Values `json:"metrics,omitzero"`
			}
			want, got := encode(withMap{m}), encode(withValues{ValuesOf(m)})
			if got != want {
				t.Errorf("html %v: Values write %s, the map %s", html, got, want)
			}
			var back withValues
			if err := json.Unmarshal([]byte(got), &back); err != nil || !reflect.DeepEqual(back.M.Map(), ValuesOf(m).Map()) {
				t.Errorf("%s read back as %v (%v)", got, back.M, err)
			}
		}
	}
	if _, err := json.Marshal(ValuesOf(map[string]float64{"tps": math.NaN()})); err == nil {
		t.Error("NaN marshalled")
	}
	v := ValuesOf(map[string]float64{"b": 2})
	w := v
	v.Set("a", 1)
	v.Set("b", 3)
	v.Delete("c")
	if got := v.String(); got != "map[a:1 b:3]" || w.Len() != 1 {
		t.Errorf("after Set: %s, the copy has %d", got, w.Len())
	}
}

// TestValuesOneDecoder: encoding/json (UnmarshalJSON) and the lines'
// decoder (UnmarshalJSONFrom) read a metrics object alike, being one:
// a repeated name's last value, names out of order, null as NaN, an
// invalid UTF-8 or HTML name, an empty object and null as no metrics;
// what is not a number, a number no float holds and bad syntax are
// errors for both.
func TestValuesOneDecoder(t *testing.T) {
	for _, c := range []struct {
		obj  string
		want string // Values.String, or "error"
	}{
		{`{"tps":1,"b":2,"tps":3}`, "map[b:2 tps:3]"},
		{`{"z":1,"a":-0.5e1,"m":0}`, "map[a:-5 m:0 z:1]"},
		{`{"tps":null}`, "map[tps:NaN]"},
		{"{\"<script>\":1,\"t\xffps\":2}", "map[<script>:1 t\ufffdps:2]"},
		{`{}`, "map[]"},
		{`null`, "map[]"},
		{`{"tps":"1"}`, "error"},
		{`{"tps":1e999}`, "error"},
		{`{"tps":[1]}`, "error"},
		{`{"tps":1`, "error"},
		{`["tps"]`, "error"},
	} {
		var v1 struct {
			M Values `json:"metrics"`
		}
		err1 := json.Unmarshal([]byte(`{"metrics":`+c.obj+`}`), &v1)
		rec, err2 := DecodeLine([]byte(`{"cell":"x","metrics":` + c.obj + `}`))
		got1, got2 := v1.M.String(), rec.Metrics.String()
		if err1 != nil {
			got1 = "error"
		}
		if err2 != nil {
			got2 = "error"
		}
		if got1 != c.want || got2 != c.want {
			t.Errorf("%s: encoding/json %s (%v), the lines' decoder %s (%v), want %s", c.obj, got1, err1, got2, err2, c.want)
		}
	}
}
