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
