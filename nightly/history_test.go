package nightly

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
)

// TestHistoryTrends: history.jsonl's trends, one per configuration and
// metric with values, over the last n nights, each point labelled with
// its night's date and short sha; a 10 % TPS step is found (unexpected:
// history.jsonl knows no annotations).
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
	trends := historyTrends(nights, 12, TrendMetrics)
	if len(trends) != 2 || trends[0].Config != "select1/c16" || trends[0].Metric != "tps" || len(trends[0].Values) != 12 || trends[1].Metric != "instructions_per_tx" {
		t.Fatalf("trends: %+v", trends)
	}
	if trends[0].Labels[0] != "2025-01-03 02000000" {
		t.Errorf("first label %q, want the third night's date and short sha", trends[0].Labels[0])
	}
	if cps := trends[0].ChangePoints; len(cps) != 1 || cps[0].Index != 5 || cps[0].Expected {
		t.Errorf("tps change points: %+v, want one at the 6th of the last 12 nights", cps)
	}
	dir := t.TempDir()
	var w bytes.Buffer
	if err := analysis.WriteTrends(&w, trends, 12, filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| select1/c16 | tps | 12 | 1002 | 900.9 | 2025-01-08 07000000 (-10.0%, p=", ") UNEXPECTED |", "| select1/instr | instructions_per_tx | 12 | 34820 | 34820 | none |"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("trend section lacks %q:\n%s", want, w.String())
		}
	}
}
