package analysis

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteTrends: the trend section has a row per trend with its change
// points (an unexpected one with its p, an expected one with its note)
// and each trend's plot; with one night it says there is no trend yet.
func TestWriteTrends(t *testing.T) {
	var tps []float64
	var labels []string
	for i := range 12 {
		v := 1000 + float64(i%3)
		if i >= 5 {
			v *= 0.9
		}
		tps = append(tps, v)
		labels = append(labels, fmt.Sprintf("2025-01-%02d %02d000000", i+3, i+2))
	}
	trends := []Trend{
		{Config: "select1/c16", Metric: "tps", Labels: labels, Values: tps,
			ChangePoints: []TrendChange{{ChangePoint: ChangePoint{Index: 5, P: 0.002, DeltaPct: -10}}}},
		{Config: "select1/instr", Metric: "instructions_per_tx", Labels: labels, Values: []float64{34820, 34820, 34820, 34820, 34820, 34820, 34820, 34820, 34820, 34820, 34820, 34820}},
		{Config: "select1/c64", Metric: "tps", Labels: labels[:2], Values: []float64{900, 950},
			ChangePoints: []TrendChange{{ChangePoint: ChangePoint{Index: 1, DeltaPct: 5.6}, Expected: true, Note: "new | default"}}},
	}
	dir := t.TempDir()
	var w bytes.Buffer
	if err := WriteTrends(&w, trends, 12, filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Trend (last 12 nights)", "| select1/c16 | tps | 12 | 1000 | 901.8 | 2025-01-08 07000000 (-10.0%, p=0.002) UNEXPECTED |",
		"| select1/instr | instructions_per_tx | 12 | 34820 | 34820 | none |", `| select1/c64 | tps | 2 | 900 | 950 | 2025-01-04 03000000 (+5.6%) expected, annotated: new \| default |`,
		"](plots/trend-select1_instr-instructions_per_tx.svg)"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("trend section lacks %q:\n%s", want, w.String())
		}
	}
	for _, f := range []string{"trend-select1_c16.svg", "trend-select1_instr-instructions_per_tx.svg", "trend-select1_c64.svg"} {
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

// WriteTrends writes the trend section of the last nights nights, its
// plots in plotsDir linked relative to relTo (TrendSection as a
// report's last section has it).
func WriteTrends(w io.Writer, trends []Trend, nights int, plotsDir, relTo string) error {
	s := &TrendSection{Trends: trends, Nights: nights}
	if err := s.WritePlots(plotsDir, relTo); err != nil {
		return err
	}
	writeMarkdown(w, s.blocks())
	return nil
}
