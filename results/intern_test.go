package results

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestDecodeSharesConfigs: the records of one configuration share its
// settings map and their metric names (issue 27: at 10⁵ cells, each
// record's own copies were a third of the memory), and equal maps of
// different records stay equal while different ones stay apart.
func TestDecodeSharesConfigs(t *testing.T) {
	lines := `{"cell":"a/r1/base","commit":"base","workload":"w","settings":{"work_mem":"4MB"},"status":"ok","metrics":{"tps":1}}
{"cell":"a/r1/patch","commit":"patch","workload":"w","settings":{"work_mem":"4MB"},"status":"ok","metrics":{"tps":2}}
{"cell":"b/r1/base","commit":"base","workload":"w","settings":{"work_mem":"8MB"},"status":"ok","metrics":{"tps":null}}
{"cell":"c/r1/base","commit":"base","workload":"w","settings":{},"status":"ok"}
`
	recs, warnings, err := DecodeRecords(strings.NewReader(lines), "cells.jsonl")
	if err != nil || len(warnings) != 0 || len(recs) != 4 {
		t.Fatalf("%d records, %v, %v", len(recs), warnings, err)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(recs[0].Settings, recs[1].Settings) || same(recs[0].Settings, recs[2].Settings) {
		t.Errorf("settings shared wrongly: %v %v %v", recs[0].Settings, recs[1].Settings, recs[2].Settings)
	}
	if recs[2].Settings["work_mem"] != "8MB" || recs[3].Settings == nil || len(recs[3].Settings) != 0 {
		t.Errorf("settings changed: %v, %#v", recs[2].Settings, recs[3].Settings)
	}
	name := func(r Record) *byte {
		for k := range r.Metrics.All() {
			return unsafe.StringData(k)
		}
		return nil
	}
	if name(recs[0]) != name(recs[1]) || recs[0].Metrics.Value("tps") != 1 || recs[1].Metrics.Value("tps") != 2 {
		t.Errorf("metric names not shared, or values lost: %v %v", recs[0].Metrics, recs[1].Metrics)
	}
	if v, ok := recs[2].Metrics.Get("tps"); !ok || !math.IsNaN(v) {
		t.Errorf("a null metric must stay NaN: %v", recs[2].Metrics)
	}
	p, err := DecodePlan([]byte(`{"version":1,"commits":[{"label":"base"}],"cells":[{"id":"x","commit":"base","settings":{"a":"1"}},{"id":"y","commit":"base","settings":{"a":"1"}}]}`), "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if !same(p.Cells[0].Settings, p.Cells[1].Settings) {
		t.Errorf("plan cells' settings not shared")
	}
}
