package results_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/resultstest"
	"github.com/pgabtest/abtest/results"
)

// TestDecodeHostileLines: lines a killed run, a hand edit or a hostile
// account leaves (NaN, 1e999, a 10 MB string, a repeated key, a
// truncated last line) read, with their progress reports or without,
// as encoding/json reads each line: a line it refuses is skipped with a
// warning naming it, the others are its records. A repeated settings or
// progress key never writes into what the records around it share (they
// would differ from encoding/json's).
func TestDecodeHostileLines(t *testing.T) {
	full, err := json.Marshal(resultstest.FullRecord("base", 1, results.StatusOK))
	if err != nil {
		t.Fatal(err)
	}
	line := string(full)
	edit := func(old, new string) string {
		if !strings.Contains(line, old) {
			t.Fatalf("the full record has no %s", old)
		}
		return strings.Replace(line, old, new, 1)
	}
	const settings = `"settings":{"pg_stat_statements.max":"5000"}`
	const progress = `"progress":[{"t":1,"tps":1,`
	lines := []string{
		line,
		edit(`"tps":1000.5`, `"tps":NaN`),
		edit(`"tps":1000.5`, `"tps":1e999`),
		edit(`"lat_ms":1`, `"lat_ms":1e999`),
		edit(`"lat_ms":1`, `"lat_ms":NaN`),
		edit(`"t":1,`, `"t":"1",`),
		edit(`"duration_s":10.5`, `"duration_s":-1e999`),
		line,
		edit(`"error":"pgbench: exit 2"`, `"error":"`+strings.Repeat("x", 10<<20)+`"`),
		edit(settings, settings+`,"settings":{"work_mem":"1MB"}`),
		line,
		edit(settings, `"settings":{"pg_stat_statements.max":"5000"},"settings":null`),
		edit(`"vars":{"batch":"10"}`, `"vars":{"batch":"10"},"vars":{"batch":"11","n":"2"}`),
		edit(progress, `"progress":[{"t":9,"tps":9000}],`+progress),
		edit(progress, progress[:len(progress)-1]+`},{"tps":null,`),
		edit(`"cell":"select1`, `"cell":"x","cell":"select1`),
		edit(`"axes":{"think_ms":"5"}`, `"axes":{"think_ms":5}`),
		edit(settings, `"settings":{"a":"1","a":"2"}`),
		line,
		line[:len(line)/2], // a killed run's last line
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var want []results.Record
	var bad []int
	for i, l := range lines {
		var r results.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Cell == "" {
			bad = append(bad, i+1)
			continue
		}
		want = append(want, r)
	}
	if len(bad) != 8 {
		t.Fatalf("encoding/json refuses lines %v: the test's lines are not what it means", bad)
	}
	for _, read := range []struct {
		name string
		f    func(string) ([]results.Record, []string, error)
	}{{"ReadRecords", results.ReadRecords}, {"ReadRecordsNoProgress", results.ReadRecordsNoProgress}} {
		got, warnings, err := read.f(dir)
		if err != nil || len(got) != len(want) || len(warnings) != len(bad) {
			t.Fatalf("%s: %d records, %d warnings, %v; want %d records, warnings for lines %v", read.name, len(got), len(warnings), err, len(want), bad)
		}
		for i, n := range bad {
			if !strings.Contains(warnings[i], fmt.Sprintf("line %d does not decode", n)) {
				t.Errorf("%s: warning %q, want line %d", read.name, warnings[i], n)
			}
		}
		for i := range want {
			w := want[i]
			if read.name == "ReadRecordsNoProgress" {
				w = results.DropProgress(w)
			}
			if !sameRecord(got[i], w) {
				t.Errorf("%s: record %d:\n%+v\nwant\n%+v", read.name, i, got[i], w)
			}
		}
	}
}

// TestDecodeMapsShared: records of one configuration share its maps
// (settings, variables, axes alternate in each line, each shared), and
// a record of another, or with a repeated key, has its own; the plan's
// cells likewise.
func TestDecodeMapsShared(t *testing.T) {
	var b strings.Builder
	for i, s := range []string{`{"a":"1"}`, `{"a":"1"}`, `{"a":"2"}`, `{"a":"2"},"settings":{"b":"3"}`, `{"a":"2"}`} {
		fmt.Fprintf(&b, `{"cell":"c%d","settings":%s,"vars":{"v":"1"},"axes":{"x":"1"}}`+"\n", i, s)
	}
	recs, warnings, err := results.DecodeRecords(strings.NewReader(b.String()), "cells.jsonl")
	if err != nil || len(warnings) != 0 || len(recs) != 5 {
		t.Fatalf("%d records, %q, %v", len(recs), warnings, err)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(recs[0].Settings, recs[1].Settings) || !same(recs[0].Vars, recs[4].Vars) || !same(recs[1].Extra, recs[3].Extra) {
		t.Error("records of one configuration do not share its maps")
	}
	if same(recs[1].Settings, recs[2].Settings) || same(recs[2].Settings, recs[3].Settings) {
		t.Error("records of different settings share them")
	}
	if want := map[string]string{"a": "2", "b": "3"}; !reflect.DeepEqual(recs[3].Settings, want) || len(recs[2].Settings) != 1 || len(recs[4].Settings) != 1 {
		t.Errorf("a repeated settings key: %v, the records around it %v %v", recs[3].Settings, recs[2].Settings, recs[4].Settings)
	}
	p, err := results.DecodePlan([]byte(`{"version":2,"commits":[{"label":"base"}],"cells":[`+
		`{"id":"x","commit":"base","settings":{"a":"1"},"vars":{"v":"1"}},`+
		`{"id":"y","commit":"base","settings":{"a":"1"},"vars":{"v":"1"}},`+
		`{"id":"z","commit":"base","settings":{"a":"1"},"settings":{"b":"2"},"vars":{"v":"1"}},`+
		`null,{"id":"w","commit":"base","settings":{"a":"1"},"vars":{"v":"2"}}]}`), "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cells
	if len(c) != 5 || !same(c[0].Settings, c[1].Settings) || !same(c[0].Vars, c[2].Vars) || c[3].ID != "" || c[3].Settings != nil || c[4].ID != "w" || c[4].Vars["v"] != "2" {
		t.Fatalf("plan cells: %+v", c)
	}
	if want := map[string]string{"a": "1", "b": "2"}; !reflect.DeepEqual(c[2].Settings, want) || len(c[0].Settings) != 1 || len(c[4].Settings) != 1 {
		t.Errorf("a repeated settings key in a plan cell: %v, the others %v %v", c[2].Settings, c[0].Settings, c[4].Settings)
	}
}

// TestConfigFieldsShadow: the maps that decode through a cache are
// Config's, by their JSON names: a renamed one would decode into the
// cache's field and be lost.
func TestConfigFieldsShadow(t *testing.T) {
	typ := reflect.TypeFor[results.Config]()
	var names []string
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type == reflect.TypeFor[map[string]string]() {
			names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
		}
	}
	if want := results.ConfigFieldsNames(); !reflect.DeepEqual(names, want) {
		t.Errorf("Config's string maps are %q; configFields shadows %q", names, want)
	}
}

// TestDecodePlanCellsRoom: a plan's cells get about the room their mean
// size predicts (they grow longer as their numbers do); a hostile plan
// whose first cell is tiny and the rest huge gets no more than one a 64
// bytes of plan (and a size class).
func TestDecodePlanCellsRoom(t *testing.T) {
	plan := func(first string, n int, id string) []byte {
		var b strings.Builder
		b.WriteString(`{"version":2,"commits":[{"label":"base"}],"cells":[` + first)
		for i := range n {
			fmt.Fprintf(&b, `,{"id":"%s%d","seq":%d,"commit":"base","repeat":1,"workload":"select1","clients":8,"cpus":0,"settings":{"pg_stat_statements.max":"100"}}`, id, i, i)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	data := plan(`{"id":"first","seq":0,"commit":"base","repeat":1,"workload":"select1","clients":8,"cpus":0,"settings":{"pg_stat_statements.max":"100"}}`, 4999, "select1/c8/r1/base/")
	p, err := results.DecodePlan(data, "plan.json")
	if err != nil || len(p.Cells) != 5000 || p.Cells[4999].ID != "select1/c8/r1/base/4998" || p.Cells[4999].Settings["pg_stat_statements.max"] != "100" {
		t.Fatalf("%d cells, %v", len(p.Cells), err)
	}
	// The first cell, shorter than the mean, predicts a fifth more.
	if c := cap(p.Cells); c > 5000*13/10 {
		t.Errorf("5000 cells have room for %d", c)
	}
	data = plan(`{}`, 100, strings.Repeat("x", 10000))
	p, err = results.DecodePlan(data, "plan.json")
	if err != nil || len(p.Cells) != 101 || p.Cells[100].Clients != 8 {
		t.Fatalf("%d cells, %v", len(p.Cells), err)
	}
	if c := cap(p.Cells); c > len(data)/64*11/10 {
		t.Errorf("a plan of %d bytes has room for %d cells", len(data), c)
	}
}
