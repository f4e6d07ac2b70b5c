package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
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
	if !strings.HasPrefix(got, "design: this host's noise (run last, 2 configurations of this plan)") || !strings.Contains(got, "× r ") || !strings.Contains(got, "this plan: 3s × r 12") ||
		!strings.HasSuffix(got, "(over 60 min: not chosen without -d and -r)") {
		t.Errorf("design line %q", got)
	}
	// An earlier run of the same configurations pools with it: the same
	// noise on twice the blocks, the same design, both runs named.
	earlier := filepath.Join(root, "earlier")
	if err := os.Mkdir(earlier, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"plan.json", "cells.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(last, n))
		if err := os.WriteFile(filepath.Join(earlier, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(earlier, "cells.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	pooled := designLine(plan, filepath.Join(root, "new"), analysis.Options{})
	if !strings.HasPrefix(pooled, "design: this host's noise (run last and 1 run before it, 2 configurations of this plan)") ||
		strings.SplitN(pooled, ")", 2)[1] != strings.SplitN(got, ")", 2)[1] {
		t.Errorf("pooled with an identical earlier run: %q; want %q's design, both runs named", pooled, got)
	}
	if err := os.RemoveAll(earlier); err != nil {
		t.Fatal(err)
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

// TestDesignChosen (issue 43): a run given neither -d nor -r takes the
// cell length and repeats the newest run of this host asks for, and
// says so; -r given, or no earlier run of its configurations, keeps
// the defaults.
func TestDesignChosen(t *testing.T) {
	install := testenv.PGInstall(t)
	root := t.TempDir()
	last := filepath.Join(root, "last")
	if err := os.Mkdir(last, 0o755); err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join("..", "demo", "testdata", "run")
	for _, n := range []string{"plan.json", "cells.jsonl"} {
		b, err := os.ReadFile(filepath.Join(demo, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(last, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prepare := func(resultsDir string, given ...string) *results.Plan {
		t.Helper()
		o := matrix.Options{Commits: "a=install:" + install + ",b=install:" + install, Workloads: "select1,churn", PgssMax: "1000", Axes: map[string][]string{"clients": {"8"}},
			Seconds: 30, Warmup: 1, Repeats: 8, Build: "release", Protocol: "simple", Order: "abba",
			Given: func(f string) bool { return slices.Contains(given, f) }}
		o.UntilDecided = slices.Contains(given, "until-decided")
		if slices.Contains(given, "max-repeats") {
			o.MaxRepeats = 20
		}
		req, err := o.Request()
		if err != nil {
			t.Fatal(err)
		}
		plan, _, err := Prepare(context.Background(), &matrix.Deps{Proc: &proc.Runner{DryRun: true}}, req, "", resultsDir)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	if p := prepare(root, "commits"); p.Options.Design != "" {
		t.Errorf("a design of more than %g min chosen: %s", designMaxMinutes, p.Options.Design)
	}
	designMaxMinutes = 200
	defer func() { designMaxMinutes = 60 }()
	p := prepare(root, "commits")
	t.Logf("design: %s", p.Options.Design)
	if p.Options.Design == "" || p.Options.DurationS == 30 || p.Options.Repeats == 8 || len(p.Cells) != 2*2*p.Options.Repeats {
		t.Errorf("no -d, no -r: %gs × r %d, %d cells, design %q; want the host's design", p.Options.DurationS, p.Options.Repeats, len(p.Cells), p.Options.Design)
	}
	if !strings.Contains(p.Options.Design, "run last") || !strings.Contains(p.Options.Design, "give either to choose") {
		t.Errorf("design %q: want the run it came from and how to choose", p.Options.Design)
	}
	// --until-decided: the design's repeats are planned, its looks after
	// them go to twice that, or to the user's --max-repeats.
	if u := prepare(root, "commits", "until-decided"); u.Options.Repeats != p.Options.Repeats || u.Options.MaxRepeats != 2*p.Options.Repeats || !strings.Contains(u.Options.Design, fmt.Sprintf("up to r %d", 2*p.Options.Repeats)) {
		t.Errorf("--until-decided: r %d, max %d, design %q; want r %d, then up to %d", u.Options.Repeats, u.Options.MaxRepeats, u.Options.Design, p.Options.Repeats, 2*p.Options.Repeats)
	}
	if u := prepare(root, "commits", "until-decided", "max-repeats"); u.Options.Repeats != 20 || u.Options.MaxRepeats != 20 {
		t.Errorf("--until-decided --max-repeats 20: r %d, max %d; want both 20 (the design's r %d capped)", u.Options.Repeats, u.Options.MaxRepeats, p.Options.Repeats)
	}
	if p := prepare(root, "commits", "repeats"); p.Options.Design != "" || p.Options.Repeats != 8 || p.Options.DurationS != 30 {
		t.Errorf("-r given: %gs × r %d, design %q; want the defaults", p.Options.DurationS, p.Options.Repeats, p.Options.Design)
	}
	if p := prepare(t.TempDir(), "commits"); p.Options.Design != "" || p.Options.Repeats != 8 {
		t.Errorf("no earlier run: r %d, design %q; want the defaults", p.Options.Repeats, p.Options.Design)
	}
	// An earlier run of 2 blocks: a spread too uncertain to size by.
	few := t.TempDir()
	if err := os.Mkdir(filepath.Join(few, "last"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan, _ := os.ReadFile(filepath.Join(last, "plan.json"))
	cells, _ := os.ReadFile(filepath.Join(last, "cells.jsonl"))
	var kept []string
	for _, l := range strings.Split(string(cells), "\n") {
		if strings.Contains(l, `"repeat":1,`) || strings.Contains(l, `"repeat":2,`) {
			kept = append(kept, l)
		}
	}
	os.WriteFile(filepath.Join(few, "last", "plan.json"), plan, 0o644)
	os.WriteFile(filepath.Join(few, "last", "cells.jsonl"), []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	if len(kept) < 8 {
		t.Fatalf("%d cells of repeats 1 and 2 in the fixture", len(kept))
	}
	if d, ok := designFor(&results.Plan{Configs: prepare(few, "commits", "repeats").Configs, Commits: make([]results.Commit, 2)}, filepath.Join(few, "new"), analysis.Options{}); !ok || d.df >= designMinDF {
		t.Errorf("an earlier run of 2 blocks: %+v %v; want a design from fewer degrees of freedom than %d", d, ok, designMinDF)
	}
	designMaxMinutes = math.Inf(1) // only the blocks may refuse it here
	if p := prepare(few, "commits"); p.Options.Design != "" {
		t.Errorf("an earlier run of 2 blocks: design %q; want the defaults", p.Options.Design)
	}
}
