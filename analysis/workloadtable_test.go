package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestFileWorkloadTables: a workload file (its configuration ids escape
// the path's "/") gets its tables, tps and the metrics it declares
// (as examples/ticker.sql declares delivery_p99_ms) with their
// verdicts, in the markdown and the text report; they were left out.
func TestFileWorkloadTables(t *testing.T) {
	wl := "file:/x/ticker.sql"
	cfg := results.Config{Workload: wl, Clients: 1}
	declared := results.Metric{Name: "delivery_p99_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierBand}
	p := &results.Plan{
		Version: results.Version, Baseline: "pg15",
		Commits: []results.Commit{{Label: "pg15", Build: "pg15"}, {Label: "pg18", Build: "pg18"}},
		Configs: []results.Config{cfg}, Metrics: append(slices.Clone(results.Builtin), declared),
	}
	p.Options.Workloads = []string{wl}
	in := &Input{Plan: p}
	for i := 1; i <= 4; i++ {
		for _, c := range []string{"pg15", "pg18"} {
			p99 := 100 + float64(i)
			if c == "pg18" {
				p99 *= 2
			}
			in.Records = append(in.Records, results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), i, c), Commit: c, Config: cfg, Repeat: i, Status: results.StatusOK,
				Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: 100 + float64(i%2), "delivery_p99_ms": p99})})
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md, text strings.Builder
	r.WriteMarkdown(&md)
	r.WriteText(&text)
	for _, want := range []string{"| c1/cpuall | tps (tx/s) |", "| configuration | metric | pg15 | pg18 | Δ | p | verdict |", "| c1/cpuall | delivery_p99_ms (ms) | 103 (n=4) | 205 (n=4) | +100.00% "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(text.String(), "delivery_p99_ms") {
		t.Errorf("text lacks delivery_p99_ms:\n%s", text.String())
	}
}

// TestHugeDetectableChange: a detectable change beyond 1000 % (two
// repeats of a spread metric) is said as no change of any size, not in
// 150 digits (nor as "could not detect < any size").
func TestHugeDetectableChange(t *testing.T) {
	st := Stat{Commit: "pg18", Verdict: results.Unknown, DetectablePct: 7.03e150, N: 2, Gated: true}
	if got := verdictText(st); got != "unknown (could detect no change of any size)" {
		t.Errorf("got %q", got)
	}
	if got := pctAbs(250); got != "250%" {
		t.Errorf("pctAbs(250) = %q", got)
	}
}
