package store

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestCellBatches: the rows are made of the cells as their records
// come, block by block, run of them at a time in name order (or as they
// come), each cell once (its first record), the cells already
// stored left out, in batches of size rows but the last, each buffer
// used again once given back; a configuration comes with the first
// batch that names it, unless stored before; a reader that stops early
// leaves no goroutine waiting (the race detector and the test's end
// would see it hang); a full batch has no more values than SQLite takes
// parameters.
func TestCellBatches(t *testing.T) {
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
	for _, c := range []struct {
		sortRun int
		cells   string
	}{
		{1 << 30, "[c00 c01 c02 c03 c05 c06 c07 c08 c09 c10]"},
		{4, "[c00 c01 c02 c03 c05 c06 c07 c08 c09 c10]"},
		{1, "[c00 c02 c05 c01 c03 c06 c07 c08 c09 c10]"},
		{0, "[c00 c05 c02 c03 c01 c06 c07 c08 c09 c10]"},
	} {
		w := &cellRows{run: "r", shard: "1/1", known: map[string]bool{stored: true}}
		q := newChunks()
		q.put(recs[:3])
		q.put(recs[3:8])
		q.put(recs[8:])
		q.end()
		batches, release, stop := w.batches(q.next, present, c.sortRun, width, 3)
		var cells, metrics, configs []string
		var sizes []int
		for b := range batches {
			sizes = append(sizes, len(b.args)/width)
			for k := 0; k < len(b.args); k += width {
				cells = append(cells, b.args[k].(string))
				metrics = append(metrics, b.args[k+width-1].(string))
			}
			for id := range b.configs {
				configs = append(configs, fmt.Sprintf("%d:%s", len(sizes), id))
			}
			release(b)
		}
		stop()
		if got := fmt.Sprint(cells); got != c.cells {
			t.Errorf("sortRun %d: cells %s, want %s", c.sortRun, got, c.cells)
		}
		if got, want := fmt.Sprint(sizes), "[3 3 3 1]"; got != want {
			t.Errorf("sortRun %d: batches of %s rows, want %s", c.sortRun, got, want)
		}
		if metrics[slices.Index(cells, "c02")] != `{"tps":2.5}` || metrics[slices.Index(cells, "c05")] != `{"tps":1.5}` {
			t.Errorf("sortRun %d: metrics columns %s", c.sortRun, metrics)
		}
		if want := fmt.Sprintf("[%d:%s]", 1+slices.Index(cells, "c06")/3, recs[6].Config.ID()); fmt.Sprint(configs) != want {
			t.Errorf("sortRun %d: configurations %s, want %s", c.sortRun, configs, want)
		}
		if len(w.seen) != 11 {
			t.Errorf("sortRun %d: %d cells seen, want 11", c.sortRun, len(w.seen))
		}
	}

	q := newChunks()
	q.put(recs)
	w := &cellRows{run: "r", shard: "1/1", known: map[string]bool{}}
	batches, _, stop := w.batches(q.next, nil, 1, width, 2)
	<-batches
	stop()
	for range batches {
	}
	// Stopped while waiting for a block that never comes.
	w = &cellRows{run: "r", shard: "1/1", known: map[string]bool{}}
	batches, _, stop = w.batches(newChunks().next, nil, 1, width, 2)
	stop()
	for range batches {
	}
}

// TestMetricsText: each cell's metrics column is its values as JSON
// (names quoted as json.Marshal quotes them, NaN and infinities left
// out), read back exactly, whatever names the cell before had.
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
	var q metricQuotes
	var buf []byte
	for i, m := range cells {
		var text string
		buf, text = metricsText(buf, results.ValuesOf(m), &q)
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
