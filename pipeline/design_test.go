package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

// TestDesignLine: a plan beside the recorded demo run is told the
// design the demo's noise asks for; a plan of other configurations, a
// results root whose only run is a planted link, and the plan's own
// directory are told nothing.
func TestDesignLine(t *testing.T) {
	demo, err := filepath.Abs(filepath.Join("..", "demo", "testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := results.ReadPlan(demo)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(demo, filepath.Join(root, "planted")); err != nil {
		t.Fatal(err)
	}
	if got := designLine(plan, filepath.Join(root, "new"), analysis.Options{}); got != "" {
		t.Errorf("only a planted link: %q, want nothing", got)
	}
	last := filepath.Join(root, "last")
	if err := os.Mkdir(last, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"plan.json", "cells.jsonl"} {
		b, err := os.ReadFile(filepath.Join(demo, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(last, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := designLine(plan, filepath.Join(root, "new"), analysis.Options{})
	t.Log(got)
	if !strings.HasPrefix(got, "design: this host's noise (run last, 2 configurations of this plan)") || !strings.Contains(got, "× r ") || !strings.Contains(got, "this plan: 3s × r 12") {
		t.Errorf("design line %q", got)
	}
	if got := designLine(plan, last, analysis.Options{}); got != "" {
		t.Errorf("the plan's own directory: %q, want nothing", got)
	}
	other := *plan
	other.Configs = []results.Config{{Workload: "select1", Clients: 64}}
	if got := designLine(&other, filepath.Join(root, "new"), analysis.Options{}); got != "" {
		t.Errorf("other configurations: %q, want nothing", got)
	}
}
