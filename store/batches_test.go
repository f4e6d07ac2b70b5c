package store

import (
	"fmt"
	"math"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestCellBatches: the rows are made in cell name order, the cells
// already stored left out, in batches of size rows but the last, each buffer
// used again once given back; a reader that stops early leaves no
// goroutine waiting (the race detector and the test's end would see it
// hang).
func TestCellBatches(t *testing.T) {
	recs := make([]results.Record, 11)
	for i := range recs {
		recs[i].Cell = fmt.Sprintf("c%02d", i)
		recs[i].Metrics.Set("tps", float64(i)+0.5)
	}
	w := &cellRows{run: "r", shard: "1/1", cfgIDs: make([]string, len(recs))}
	width := len(cellColumns(&results.Record{})) + 6
	present := map[string]int64{"c04": 1}
	recs[1].Cell, recs[2].Cell = recs[2].Cell, recs[1].Cell
	batches, release, stop := w.batches(recs, byName(recs, present), width, 3)
	var cells, metrics []string
	var sizes []int
	for b := range batches {
		sizes = append(sizes, len(b)/width)
		for k := 0; k < len(b); k += width {
			cells = append(cells, b[k].(string))
			metrics = append(metrics, b[k+width-1].(string))
		}
		release(b)
	}
	stop()
	if got, want := fmt.Sprint(cells), "[c00 c01 c02 c03 c05 c06 c07 c08 c09 c10]"; got != want {
		t.Errorf("cells %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(sizes), "[3 3 3 1]"; got != want {
		t.Errorf("batches of %s rows, want %s", got, want)
	}
	if metrics[4] != `{"tps":5.5}` {
		t.Errorf("c05's metrics column %s", metrics[4])
	}

	batches, _, stop = w.batches(recs, byName(recs, nil), width, 2)
	<-batches
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
