package store

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestCellTodo: an import stores each cell once (its first record),
// leaves out the cells already stored, in name order, and stores the
// configurations the store lacks with them; a full batch has no more
// values than SQLite takes parameters.
func TestCellTodo(t *testing.T) {
	recs := make([]results.Record, 12)
	for i := range recs {
		recs[i].Cell = fmt.Sprintf("c%02d", i)
		recs[i].Metrics.Set("tps", float64(i)+0.5)
		recs[i].Workload = "w"
		recs[i].Clients = 1 + i/6
	}
	recs[1].Cell, recs[5].Cell = recs[5].Cell, recs[1].Cell
	recs[11].Cell = "c02" // again: the first record's values are kept
	width := len(cellColumns(&results.Record{})) + 6
	if width*cellBatch > 32766 {
		t.Errorf("%d rows of %d values a statement: more than SQLite's 32 766 parameters", cellBatch, width)
	}
	present := map[string]int64{"c04": 1}
	stored := recs[0].Config.ID()
	w := &cellRows{run: "r", shard: "1/1", known: map[string]bool{stored: true}, seen: map[string]bool{}}
	todo, configs := w.todo(recs, present)
	var cells, metrics []string
	for _, p := range todo {
		args := w.args(nil, p.rec, p.cfg)
		cells = append(cells, args[0].(string))
		metrics = append(metrics, args[width-1].(string))
	}
	if got, want := fmt.Sprint(cells), "[c00 c01 c02 c03 c05 c06 c07 c08 c09 c10]"; got != want {
		t.Errorf("cells %s, want %s", got, want)
	}
	if metrics[slices.Index(cells, "c02")] != `{"tps":2.5}` || metrics[slices.Index(cells, "c05")] != `{"tps":1.5}` {
		t.Errorf("metrics columns %s", metrics)
	}
	if _, ok := configs[recs[6].Config.ID()]; !ok || len(configs) != 1 {
		t.Errorf("configurations %v, want %s alone", configs, recs[6].Config.ID())
	}
	if len(w.seen) != 11 || w.dup != "c02" {
		t.Errorf("%d cells seen, want 11; first recorded twice %q, want c02", len(w.seen), w.dup)
	}
}

// TestMetricsText: each cell's metrics column is its values as JSON
// (names quoted as json.Marshal quotes them, NaN and infinities left
// out), read back exactly.
func TestMetricsText(t *testing.T) {
	third := 0.1
	third += 0.2
	cells := []map[string]float64{
		{"a": 1, "b": third, "c": 1e-300},
		{"a": 2, "c": 3},
		{"a": 1, "b": math.NaN(), "c": math.Inf(1), `q"<`: 5},
		{},
		{"a": 1, "b": 2, "c": 3},
	}
	want := []string{`{"a":1,"b":0.30000000000000004,"c":1e-300}`, `{"a":2,"c":3}`, `{"a":1,"q\"\u003c":5}`, `{}`, `{"a":1,"b":2,"c":3}`}
	var buf []byte
	for i, m := range cells {
		var text string
		buf, text = metricsText(buf, results.ValuesOf(m))
		if text != want[i] {
			t.Errorf("%v: %s, want %s", m, text, want[i])
		}
		back, err := parseMetrics(text)
		for name, v := range m {
			if got, ok := back.Get(name); err != nil || (ok || !math.IsNaN(v) && !math.IsInf(v, 0)) && got != v {
				t.Errorf("%s read back: %s = %v, %v; want %v", text, name, got, err, v)
			}
		}
	}
}
