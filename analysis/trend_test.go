package analysis

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryTrends: history.jsonl's trends, one per configuration and
// metric with values, over the last n nights; a 10 % TPS step is found
// (unexpected: history.jsonl knows no annotations) and each trend has
// its plot.
func TestHistoryTrends(t *testing.T) {
	var nights []Night
	for i := range 14 {
		tps := 1000 + float64(i%3)
		if i >= 7 {
			tps *= 0.9
		}
		nights = append(nights, Night{Date: fmt.Sprintf("2025-01-%02d", i+1), SHA: fmt.Sprintf("%02d%038d", i, 0), Medians: map[string]map[string]Interval{
			"select1/c16":   {"tps": {Median: tps}},
			"select1/instr": {"instructions_per_tx": {Median: 34820}},
		}})
	}
	trends := HistoryTrends(nights, 12, []string{"tps", "instructions_per_tx"})
	if len(trends) != 2 || trends[0].Config != "select1/c16" || trends[0].Metric != "tps" || len(trends[0].Values) != 12 || trends[1].Metric != "instructions_per_tx" {
		t.Fatalf("trends: %+v", trends)
	}
	if cps := trends[0].ChangePoints; len(cps) != 1 || cps[0].Index != 5 || cps[0].Expected {
		t.Errorf("tps change points: %+v, want one at the 6th of the last 12 nights", cps)
	}
	dir := t.TempDir()
	var w bytes.Buffer
	if err := WriteTrends(&w, trends, 12, filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Trend (last 12 nights)", "| select1/c16 | tps | 12 | 1002 | 900.9 | 2025-01-08 07000000 (-10.0%, p=", ") UNEXPECTED |", "| select1/instr | instructions_per_tx | 12 | 34820 | 34820 | none |", "](plots/trend-select1_instr-instructions_per_tx.svg)"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("trend section lacks %q:\n%s", want, w.String())
		}
	}
	for _, f := range []string{"trend-select1_c16.svg", "trend-select1_instr-instructions_per_tx.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil {
			t.Error(err)
		}
	}
	w.Reset()
	WriteTrends(&w, trends[:0], 1, dir, dir)
	if !strings.Contains(w.String(), "Not enough history yet") {
		t.Errorf("one night: %s", w.String())
	}
}
