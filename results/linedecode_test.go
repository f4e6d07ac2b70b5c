package results_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/results/resultstest"
)

// TestDecodeLineFullRecord: a record with every field set is decoded by
// the fast path, to what json.Unmarshal makes of it.
func TestDecodeLineFullRecord(t *testing.T) {
	for _, status := range []results.Status{results.StatusOK, results.StatusFailed} {
		line, err := json.Marshal(resultstest.FullRecord("base", 1, status))
		if err != nil {
			t.Fatal(err)
		}
		got, fast, err := results.DecodeLine(line)
		if err != nil || !fast {
			t.Fatalf("fast path: fast %v, err %v; want it to decode %s", fast, err, line)
		}
		want, err := results.UnmarshalLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRecord(got, want) {
			t.Errorf("fast path:\n%+v\njson.Unmarshal:\n%+v", got, want)
		}
	}
}

// TestDecodeLineAsUnmarshal: lines the fast path reads and lines it must
// leave to json.Unmarshal (escapes, nulls, other spellings, bad syntax,
// values a field cannot hold) decode to the same record, or fail with
// the same error, as by json.Unmarshal alone.
func TestDecodeLineAsUnmarshal(t *testing.T) {
	full, err := json.Marshal(resultstest.FullRecord("patch", 2, results.StatusOK))
	if err != nil {
		t.Fatal(err)
	}
	line := string(full)
	edits := [][2]string{
		{"", ""},
		{`"cell":"`, `"cell":"\u00e9\n`},
		{`"commit":"patch"`, `"commit":"pätch"`},
		{`"commit":"patch"`, "\"commit\":\"p\xffatch\""},
		{`"commit":"patch"`, `"Commit":"patch"`},
		{`"commit":"patch"`, `"commit":"patch","commit":"base"`},
		{`"commit":"patch"`, `"commit":null`},
		{`"commit":"patch"`, `"commit":"patch","unknown":[1,{"a":"}"}]`},
		{`"seq":2`, `"seq":2.5`},
		{`"seq":2`, `"seq":1e2`},
		{`"seq":2`, `"seq":02`},
		{`"seq":2`, `"seq":99999999999999999999`},
		{`"seq":2`, `"seq":-0`},
		{`"seq":2`, `"seq":"2"`},
		{`"seq":2`, ` "seq" : 2 `},
		{`"duration_s":10.5`, `"duration_s":1e999`},
		{`"duration_s":10.5`, `"duration_s":-1.5E-3`},
		{`"duration_s":10.5`, `"duration_s":.5`},
		{`"duration_s":10.5`, `"duration_s":1.`},
		{`"saturated":true`, `"saturated":tru`},
		{`"saturated":true`, `"saturated":false`},
		{`"tps":1000.5`, `"tps":null`},
		{`"tps":1000.5`, `"tps":1000.5,"tps":7`},
		{`"metrics":{`, `"metrics":{},"x":{`},
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":{}`},
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":{"b":"1","a":"2"}`},
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":{"a":"1","a":"2"}`},
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":null`},
		{`"progress":[`, `"progress":[],"x":[`},
		{`"progress":[{`, `"progress":[{"t":1},{`},
		{`"lat_ms":1`, `"lat_ms":1,"lat_ms":2`},
		{`"lat_ms":1`, `"LAT_MS":1`},
		{`"failed":1`, `"failed":1.5`},
		{`"waits":{`, `"waits":null,"x":{`},
		{`"started_at":"`, `"started_at":"x`},
		{`"rate_unit":"ops"`, `"rate_unit":null`},
		{`"rate_unit":"ops"`, `"rate_unit":""`},
		{`"rate_unit":"ops"`, `"rate_unit":"o\u0070s"`},
		{`"rate_unit":"ops"`, `"rate_unit":7`},
		{`"rate_unit":"ops"`, `"Rate_Unit":"ops"`},
		{`"rate_unit":"ops"`, `"rate_unit":"ops","rate_unit":"ops"`},
		{`,"rate_unit":"ops"`, ``},
		{`"log_tail":["`, `"log_tail":["\"]}`},
		{`}`, `]`},
		{`{"cell"`, `[{"cell"`},
		{`"cell":"`, `"cell":"`},
	}
	for _, e := range edits {
		variants := []string{strings.Replace(line, e[0], e[1], 1)}
		if e[0] == "" {
			variants = append(variants, " "+line+"\t", line[:len(line)/2], line+"}", `{"cell":"x"}`, `{}`, `{"cell":""}`)
		}
		for _, v := range variants {
			got, _, gotErr := results.DecodeLine([]byte(v))
			want, wantErr := results.UnmarshalLine([]byte(v))
			// A line that does not decode is skipped: only its error counts.
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || wantErr == nil && !sameRecord(got, want) {
				t.Errorf("%s:\nfast path: %+v (%v)\njson.Unmarshal: %+v (%v)", v, got, gotErr, want, wantErr)
			}
		}
	}
}

// sameRecord is reflect.DeepEqual with a NaN metric (a null in the
// line) equal to a NaN.
func sameRecord(a, b results.Record) bool {
	ma, mb := nanless(a.Metrics), nanless(b.Metrics)
	a.Metrics, b.Metrics = results.Values{}, results.Values{}
	return reflect.DeepEqual(ma, mb) && reflect.DeepEqual(a, b)
}

func nanless(m results.Values) map[string]float64 {
	if m.Len() == 0 {
		return nil
	}
	out := make(map[string]float64, m.Len())
	for k, v := range m.All() {
		if math.IsNaN(v) {
			k += " NaN"
		}
		out[k] = 0
		if !math.IsNaN(v) {
			out[k] = v
		}
	}
	return out
}

// TestDecodePlanAsUnmarshal: a plan's cells, decoded by the fast path
// or by json.Unmarshal (where it gives up), come out as json.Unmarshal
// makes them, errors included.
func TestDecodePlanAsUnmarshal(t *testing.T) {
	full := resultstest.FullRecord("base", 1, results.StatusOK)
	p := results.Plan{Version: results.Version, Baseline: "base", Commits: []results.Commit{{Label: "base"}, {Label: "patch"}}, Configs: []results.Config{full.Config}}
	for i, commit := range []string{"base", "patch"} {
		p.Cells = append(p.Cells, results.Cell{ID: "c/" + commit, Seq: i + 1, Commit: commit, Repeat: 1, Config: full.Config})
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	plan := string(data)
	cells, err := json.Marshal(p.Cells)
	if err != nil {
		t.Fatal(err)
	}
	if !results.DecodeCells(cells) {
		t.Errorf("the fast path gives up on %s", cells)
	}
	if !results.CutCells(data) {
		t.Errorf("the fast path does not cut the cells out of %s", data)
	}
	for _, e := range [][2]string{
		{"", ""},
		{`"cells":[`, `"cells":[],"x":[`},
		{`"cells":[`, `"cells":null,"x":[`},
		{`"cells":[`, `"x":[`},
		{`"cells":[`, `"cells":[{},`},
		{`"seq":1`, `"seq":"1"`},
		{`"seq":1`, `"seq":1.5`},
		{`"seq":1`, `"seq":1,"Seq":3`},
		{`"seq":1`, `"seq":1,"unknown":{"a":[1]}`},
		{`"id":"c/base"`, `"id":"c\/base"`},
		{`"commit":"patch"`, `"commit":null`},
		{`"vars":{"batch":"10"}`, `"vars":{"b":"2","a":"1"}`},
		{`"instructions":true`, `"instructions":1`},
		{`"rate_unit":"ops"`, `"rate_unit":1`},
		{`,"rate_unit":"ops"`, ``},
		{`"cells":[`, `"cells":{`},
		{`"cells":[`, `"Cells":[],"cells":[`},
		{`"cells":[`, `"cells":[{"seq":"x"}],"cells":[`},
		{`"cells":[`, `"cells":[],"cells":[`},
		{`"version":`, `"cells":[{"seq":"x"}],"version":`},
		// The cells cut out of the plan (cutCells): keys json.Unmarshal
		// also gives them, a "cells" only inside a string, and bad
		// syntax before, in and after them.
		{`"cells":[`, `"cellſ":[],"cells":[`},
		{`"cells":[`, `"CELLS":null,"cells":[`},
		{`"cells":[`, `"c\u0065lls":[],"cells":[`},
		{`"baseline":"base"`, `"baseline":"b\",\"cells\":[]"`},
		{`"baseline":"base"`, `"baseline":"base",`},
		{`"baseline":"base"`, `"baseline":tru`},
		{`"baseline":"base"`, `"baseline":"base"]`},
		{`"cells":[`, `"cells" : [ `},
		{`"cells":[`, `"cells":[`},
		{`"id":"c/base"`, `"id":"c/base",`},
	} {
		variants := []string{strings.Replace(plan, e[0], e[1], 1)}
		if e[0] == "" {
			end := len(plan) - 1 // the plan's closing brace
			variants = append(variants, plan[:end]+`,"cells":null}`, plan[:end]+`,"cells":[]}`, plan[:end]+`,}`, plan+"}", " "+plan+"\n",
				plan[:end], plan[:strings.Index(plan, `"cells":[`)+10], `{"cells":[]}`, `{"cells":[],"version":1}`, `{}`, `[]`)
		}
		for _, v := range variants {
			got, gotErr := results.DecodePlanCells([]byte(v))
			var want results.Plan
			wantErr := json.Unmarshal([]byte(v), &want)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || wantErr == nil && !reflect.DeepEqual(*got, want) {
				t.Errorf("%s:\nfast path: %+v (%v)\njson.Unmarshal: %+v (%v)", v, got, gotErr, want, wantErr)
			}
		}
	}
}

// Every key json.Marshal writes for a Record is one lineDecoder knows:
// a field added to Record and not to recordFields would send every line
// that has it to json.Unmarshal, right but slow, and nothing would say.
func TestLineDecoderKnowsEveryField(t *testing.T) {
	known := map[string]bool{}
	for _, f := range results.RecordFields {
		known[f] = true
	}
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if !known[name] {
				t.Errorf("Record's key %q (field %s) is not in results.RecordFields", name, f.Name)
			}
		}
	}
	walk(reflect.TypeOf(results.Record{}))
}
