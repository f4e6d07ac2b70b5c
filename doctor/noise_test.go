package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

// TestNoiseDemo: the recorded demo run says how its cells and seconds
// varied, from the directory itself and as the newest run of a results
// root; a planted link to it is never taken for a run.
func TestNoiseDemo(t *testing.T) {
	demo, err := filepath.Abs(filepath.Join("..", "demo", "testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Noise(demo)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", f.Status, f.Value)
	if !strings.HasPrefix(f.Value, "cells differ ") || !strings.Contains(f.Value, "seconds within a cell ") {
		t.Errorf("finding %q; want cells and seconds", f.Value)
	}
	root := t.TempDir()
	if err := os.Symlink(demo, filepath.Join(root, "planted")); err != nil {
		t.Fatal(err)
	}
	if got, err := NewestRun(root); err != nil || got != "" {
		t.Errorf("NewestRun with only a link: %q, %v; want none", got, err)
	}
	old, fresh := filepath.Join(root, "old"), filepath.Join(root, "fresh")
	for _, d := range []string{old, fresh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"plan.json", "cells.jsonl"} {
			b, err := os.ReadFile(filepath.Join(demo, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(old, "cells.jsonl"), past, past); err != nil {
		t.Fatal(err)
	}
	if got, err := NewestRun(root); err != nil || got != fresh {
		t.Errorf("NewestRun = %q, %v; want %s", got, err, fresh)
	}
	// cells.jsonl planted as a link in the newest directory: skipped.
	if err := os.Remove(filepath.Join(fresh, "cells.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(old, "cells.jsonl"), filepath.Join(fresh, "cells.jsonl")); err != nil {
		t.Fatal(err)
	}
	if got, _ := NewestRun(root); got != old {
		t.Errorf("NewestRun with a linked cells.jsonl = %q; want %s", got, old)
	}
	// A newer run whose plan.json is a link to /dev/zero, or whose
	// cells.jsonl is another account's (as root), is not read.
	for _, plant := range []func(d string) error{
		func(d string) error { return os.Symlink("/dev/zero", filepath.Join(d, "plan.json")) },
		func(d string) error {
			if os.Geteuid() != 0 {
				return os.Symlink("/dev/zero", filepath.Join(d, "plan.json"))
			}
			if err := os.WriteFile(filepath.Join(d, "plan.json"), []byte("{}"), 0o644); err != nil {
				return err
			}
			return os.Chown(filepath.Join(d, "cells.jsonl"), 65534, 65534)
		},
	} {
		bad, err := os.MkdirTemp(root, "planted")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bad, "cells.jsonl"), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := plant(bad); err != nil {
			t.Fatal(err)
		}
		if got, _ := NewestRun(root); got != old {
			t.Errorf("NewestRun with a planted %s = %q; want %s", bad, got, old)
		}
		if err := os.RemoveAll(bad); err != nil {
			t.Fatal(err)
		}
	}
	// doctor's own check reads the newest run of the results root.
	if f, ok := measuredNoise(root); !ok || f.Check != "measured noise" || !strings.Contains(f.Value, "(old)") && !strings.Contains(f.Value, "in old") {
		t.Errorf("measuredNoise(root) = %+v, %v; want the old run's noise", f, ok)
	}
	for _, none := range []string{"", t.TempDir(), filepath.Join(root, "nosuch")} {
		if f, ok := measuredNoise(none); ok {
			t.Errorf("measuredNoise(%q) = %+v; want no finding", none, f)
		}
	}
}

// TestNoiseFinding: cells that differ more than their seconds explain
// warn that more, shorter cells answer sooner; seconds that explain it
// all say longer cells do.
func TestNoiseFinding(t *testing.T) {
	cfg := results.Config{Workload: "w", Clients: 8}
	mk := func(cellSD, secSD float64) []results.Record {
		var recs []results.Record
		for rep := 1; rep <= 12; rep++ {
			for i, c := range []string{"a", "b"} {
				lvl := 1000 * (1 + cellSD*float64((rep*7+i*3)%5-2))
				r := results.Record{Cell: cfg.ID() + "/" + c + "/" + string(rune('a'+rep)), Commit: c, Config: cfg, Repeat: rep, Status: results.StatusOK,
					Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: lvl})}
				for s := range 5 {
					r.Progress = append(r.Progress, results.Progress{T: float64(s + 1), TPS: lvl * (1 + secSD*float64(s%3-1))})
				}
				recs = append(recs, r)
			}
		}
		return recs
	}
	p := &results.Plan{Baseline: "a"}
	if f := noiseFindingOf(p, mk(0.03, 0.002)); f.Status != Warn || !strings.Contains(f.Value, "more, shorter cells answer sooner") {
		t.Errorf("between-cell noise: %s %q; want a warning for shorter cells", f.Status, f.Value)
	}
	if f := noiseFindingOf(p, mk(0.0005, 0.05)); f.Status != OK || !strings.Contains(f.Value, "longer cells") {
		t.Errorf("within-cell noise: %s %q; want longer cells", f.Status, f.Value)
	}
}

// noiseFindingOf is Noise of a plan and records in hand.
func noiseFindingOf(p *results.Plan, recs []results.Record) Finding {
	return noiseFinding("run", analysis.NoiseOf(p, recs))
}
