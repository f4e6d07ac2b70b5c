package results_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/resultstest"
	"github.com/pgabtest/abtest/results"
)

// TestDecodeLineFullRecord: a record with every field set decodes to
// one that json.Marshal writes back to the same line: no field is lost.
func TestDecodeLineFullRecord(t *testing.T) {
	for _, status := range []results.Status{results.StatusOK, results.StatusFailed} {
		line, err := json.Marshal(resultstest.FullRecord("base", 1, status))
		if err != nil {
			t.Fatal(err)
		}
		got, err := results.DecodeLine(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		back, err := json.Marshal(got)
		if err != nil || string(back) != string(line) {
			t.Errorf("decoded and written again (%v):\n%s\nwant\n%s", err, back, line)
		}
	}
}

// TestDecodeLineEdits: lines edited as a killed run, a hand edit or an
// older abtest leaves them decode as json.Unmarshal decodes them (a
// repeated key's last value counts, a key's case does not, a null is
// the zero value, an unknown key is ignored) but for a null metric,
// which is NaN (not a measurement); a wrong type, a number a field
// cannot hold, bad syntax or a line without a cell id is an error (the
// line is skipped).
func TestDecodeLineEdits(t *testing.T) {
	full, err := json.Marshal(resultstest.FullRecord("patch", 2, results.StatusOK))
	if err != nil {
		t.Fatal(err)
	}
	line := string(full)
	base, err := results.DecodeLine(full)
	if err != nil {
		t.Fatal(err)
	}
	with := func(edit func(r *results.Record)) results.Record {
		r, err := results.DecodeLine(full)
		if err != nil {
			t.Fatal(err)
		}
		edit(&r)
		return r
	}
	ok := map[[2]string]results.Record{
		{"", ""}:                         base,
		{`"cell":"`, `"cell":"\u00e9\n`}: with(func(r *results.Record) { r.Cell = "é\n" + r.Cell }),
		{`"commit":"patch"`, `"commit":"pätch"`}:                                         with(func(r *results.Record) { r.Commit = "pätch" }),
		{`"commit":"patch"`, "\"commit\":\"p\xffatch\""}:                                 with(func(r *results.Record) { r.Commit = "p\ufffdatch" }),
		{`"commit":"patch"`, `"Commit":"patch"`}:                                         base,
		{`"commit":"patch"`, `"commit":"patch","commit":"base"`}:                         with(func(r *results.Record) { r.Commit = "base" }),
		{`"commit":"patch"`, `"commit":null`}:                                            with(func(r *results.Record) { r.Commit = "" }),
		{`"commit":"patch"`, `"commit":"patch","unknown":[1,{"a":"}"}]`}:                 base,
		{`"seq":2`, `"seq":-0`}:                                                          with(func(r *results.Record) { r.Seq = 0 }),
		{`"seq":2`, ` "seq" : 2 `}:                                                       base,
		{`"duration_s":10.5`, `"duration_s":-1.5E-3`}:                                    with(func(r *results.Record) { r.DurationS = -1.5e-3 }),
		{`"saturated":true`, `"saturated":false`}:                                        with(func(r *results.Record) { r.Saturated = false }),
		{`"tps":1000.5`, `"tps":null`}:                                                   with(func(r *results.Record) { r.Metrics.Set("tps", math.NaN()) }),
		{`"tps":1000.5`, `"tps":1000.5,"tps":7`}:                                         with(func(r *results.Record) { r.Metrics.Set("tps", 7) }),
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":{}`}:                with(func(r *results.Record) { r.Settings = map[string]string{} }),
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":{"a":"1","a":"2"}`}: with(func(r *results.Record) { r.Settings = map[string]string{"a": "2"} }),
		{`"settings":{"pg_stat_statements.max":"5000"}`, `"settings":null`}:              with(func(r *results.Record) { r.Settings = nil }),
		{`"lat_ms":1`, `"lat_ms":1,"lat_ms":2`}:                                          with(func(r *results.Record) { r.Progress[0].LatMS = 2 }),
		{`"rate_unit":"ops"`, `"rate_unit":"o\u0070s"`}:                                  base,
		{`"log_tail":["`, `"log_tail":["\"]}`}:                                           with(func(r *results.Record) { r.LogTail = []string{`"]}` + r.LogTail[0]} }),
		{`,"rate_unit":"ops"`, ``}:                                                       with(func(r *results.Record) { r.RateUnit = "" }),
		// Values and ProgressReports decode token by token: as a map
		// and a slice would.
		{`"metrics":{"instructions_per_tx":123456,"tps":1000.5}`, `"metrics":{"tps":7,"instructions_per_tx":123456,"tps":1000.5,"a":null}`}: with(func(r *results.Record) { r.Metrics.Set("a", math.NaN()) }),
		{`"metrics":{"instructions_per_tx":123456,"tps":1000.5}`, `"metrics":{}`}:                                                           with(func(r *results.Record) { r.Metrics = results.Values{} }),
		{`"metrics":{"instructions_per_tx":123456,"tps":1000.5}`, `"metrics":null`}:                                                         with(func(r *results.Record) { r.Metrics = results.Values{} }),
		{`"progress":[{"t":1,"tps":1,`, `"progress":[{"t":1,"TPS":1,`}:                                                                      base,
		{`"progress":[{"t":1,"tps":1,`, `"progress":[{"t":2},{"t":1,"tps":1,`}:                                                              with(func(r *results.Record) { r.Progress = append(results.ProgressReports{{T: 2}}, r.Progress...) }),
		{`"progress":[{`, `"progress":[],"x":[{`}:                                                                                           with(func(r *results.Record) { r.Progress = results.ProgressReports{} }),
		{`"progress":[{`, `"progress":null,"x":[{`}:                                                                                         with(func(r *results.Record) { r.Progress = nil }),
	}
	for e, want := range ok {
		v := strings.Replace(line, e[0], e[1], 1)
		got, err := results.DecodeLine([]byte(v))
		if err != nil || !sameRecord(got, want) {
			t.Errorf("%s:\n%+v (%v)\nwant\n%+v", v, got, err, want)
		}
	}
	bad := [][2]string{
		{`"seq":2`, `"seq":2.5`},
		{`"seq":2`, `"seq":1e2`},
		{`"seq":2`, `"seq":02`},
		{`"seq":2`, `"seq":99999999999999999999`},
		{`"seq":2`, `"seq":"2"`},
		{`"duration_s":10.5`, `"duration_s":1e999`},
		{`"duration_s":10.5`, `"duration_s":.5`},
		{`"saturated":true`, `"saturated":tru`},
		{`"failed":1`, `"failed":1.5`},
		{`"started_at":"`, `"started_at":"x`},
		{`"rate_unit":"ops"`, `"rate_unit":7`},
		{`"tps":1000.5`, `"tps":"1000.5"`},
		{`}`, `]`},
		{`{"cell"`, `[{"cell"`},
		{`"tps":1000.5`, `"tps":1e999`},
		{`"tps":1000.5`, `"tps":true`},
		{`"tps":1000.5`, `"tps":{}`},
		{`"metrics":{`, `"metrics":[{`},
		{`"progress":[{`, `"progress":[1,{`},
		{`"progress":[{`, `"progress":{"x":{`},
	}
	variants := []string{line[:len(line)/2], line + "}", `{}`, `{"cell":""}`, `{"cell":null}`, `null`}
	for _, e := range bad {
		variants = append(variants, strings.Replace(line, e[0], e[1], 1))
	}
	for _, v := range variants {
		if got, err := results.DecodeLine([]byte(v)); err == nil {
			t.Errorf("%s: decoded, as %+v; want an error", v, got)
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

// TestDecodePlanEdits: a plan's cells decode with their settings, an
// empty map apart from none; a plan of a wrong type or bad syntax is
// bad input naming the file.
func TestDecodePlanEdits(t *testing.T) {
	full := resultstest.FullRecord("base", 1, results.StatusOK)
	p := results.Plan{Version: results.Version, Baseline: "base", Commits: []results.Commit{{Label: "base"}, {Label: "patch"}}, Configs: []results.Config{full.Config}}
	for i, commit := range []string{"base", "patch"} {
		p.Cells = append(p.Cells, results.Cell{ID: "c/" + commit, Seq: i + 1, Commit: commit, Repeat: 1, Config: full.Config})
	}
	p.Cells[1].Settings = map[string]string{}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := results.DecodePlanCells(data)
	if err != nil || !reflect.DeepEqual(*got, p) {
		t.Fatalf("%s:\n%+v (%v)\nwant\n%+v", data, got, err, p)
	}
	plan := string(data)
	for _, v := range []string{
		strings.Replace(plan, `"seq":1`, `"seq":"1"`, 1),
		strings.Replace(plan, `"instructions":true`, `"instructions":1`, 1),
		strings.Replace(plan, `"cells":[`, `"cells":{`, 1),
		plan[:len(plan)-1],
		`[]`,
	} {
		if _, err := results.DecodePlan([]byte(v), "plan.json"); err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "plan.json") {
			t.Errorf("%s: error %v, want bad input naming plan.json", v, err)
		}
	}
}

// TestDecodeConfigs: records of one configuration and of others keep
// their own settings (an empty map apart from none), a null metric is
// NaN, and the values are each record's.
func TestDecodeConfigs(t *testing.T) {
	lines := `{"cell":"a/r1/base","commit":"base","workload":"w","settings":{"work_mem":"4MB"},"status":"ok","metrics":{"tps":1}}
{"cell":"a/r1/patch","commit":"patch","workload":"w","settings":{"work_mem":"4MB"},"status":"ok","metrics":{"tps":2}}
{"cell":"b/r1/base","commit":"base","workload":"w","settings":{"work_mem":"8MB"},"status":"ok","metrics":{"tps":null}}
{"cell":"c/r1/base","commit":"base","workload":"w","settings":{},"status":"ok"}
{"cell":"d/r1/base","commit":"base","workload":"w","status":"ok"}
`
	recs, warnings, err := results.DecodeRecords(strings.NewReader(lines), "cells.jsonl")
	if err != nil || len(warnings) != 0 || len(recs) != 5 || recs[4].Settings != nil {
		t.Fatalf("%d records, %v, %v", len(recs), warnings, err)
	}
	if recs[0].Settings["work_mem"] != "4MB" || recs[1].Settings["work_mem"] != "4MB" || recs[2].Settings["work_mem"] != "8MB" || recs[3].Settings == nil || len(recs[3].Settings) != 0 {
		t.Errorf("settings: %v %v %v %#v", recs[0].Settings, recs[1].Settings, recs[2].Settings, recs[3].Settings)
	}
	if recs[0].Metrics.Value("tps") != 1 || recs[1].Metrics.Value("tps") != 2 {
		t.Errorf("values lost: %v %v", recs[0].Metrics, recs[1].Metrics)
	}
	if v, ok := recs[2].Metrics.Get("tps"); !ok || !math.IsNaN(v) {
		t.Errorf("a null metric must stay NaN: %v", recs[2].Metrics)
	}
	p, err := results.DecodePlan([]byte(`{"version":1,"commits":[{"label":"base"}],"cells":[{"id":"x","commit":"base","settings":{"a":"1"}},{"id":"y","commit":"base","settings":{}}]}`), "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells[0].Settings["a"] != "1" || p.Cells[1].Settings == nil || len(p.Cells[1].Settings) != 0 {
		t.Errorf("plan cells' settings: %#v %#v", p.Cells[0].Settings, p.Cells[1].Settings)
	}
}
