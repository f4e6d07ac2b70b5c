package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// demoRun copies the demo's recorded run (demo/testdata/run) into a
// temporary directory named demo-run.
func demoRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo-run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.PlanFile, results.CellsFile} {
		data, err := os.ReadFile(filepath.Join("..", "demo", "testdata", "run", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunAnswers: an import of the demo's run stores the patch's answer
// with the counts of the report's summary line and a line naming the
// finding (pgss_deallocs, better) and what the gated metrics could say;
// a run stored at schema 6 (no answers) opens migrated, and gets them on
// its next import; an import after that analyses nothing again.
func TestRunAnswers(t *testing.T) {
	ctx := context.Background()
	dir := demoRun(t)
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Summaries) != 1 {
		t.Fatalf("the demo's report has %d summaries", len(rep.Summaries))
	}
	sm := rep.Summaries[0]
	path := filepath.Join(t.TempDir(), store.DefaultFile)
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, dir); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		runs, err := history.Runs(ctx, s)
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s: runs %v, %v", when, runs, err)
		}
		a, ok := runs[0].Answer(sm.Commit)
		if !ok || len(runs[0].Answers) != 1 {
			t.Fatalf("%s: answers %+v, want one of %s", when, runs[0].Answers, sm.Commit)
		}
		got := [8]int{a.Better, a.Worse, a.Same, a.Unknown, a.Incomplete, a.Higher, a.Lower, a.Behind}
		want := [8]int{sm.Better, sm.Worse, sm.Same, sm.Unknown, sm.Incomplete, sm.Higher, sm.Lower, sm.Behind}
		if got != want || sm.Better == 0 {
			t.Errorf("%s: answer counts %v, the report's %v", when, got, want)
		}
		if !strings.HasPrefix(a.Line, "pgss_deallocs −6") || !strings.Contains(a.Line, "better on churn") ||
			!strings.Contains(a.Line, "could not detect <") || a.DetectablePct == nil {
			t.Errorf("%s: answer line %q (detectable %v)", when, a.Line, a.DetectablePct)
		}
		if _, ok := runs[0].Answer(rep.Baseline); ok {
			t.Errorf("%s: the baseline has an answer", when)
		}
	}
	check("import")
	// As abtest of schema 6 left the store: no table of answers, no
	// cache of the analysis.
	for _, st := range []string{"DROP TABLE run_answers", "DROP TABLE run_judged", "DELETE FROM schema_version WHERE version >= 7"} {
		if _, err := s.DB().Exec(st); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = store.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if runs, err := s.Runs(ctx, analysis.Version); err != nil || len(runs) != 1 || len(runs[0].Answers) != 0 || runs[0].Gate != "" {
		t.Fatalf("after the migration, the store's rows of a run judged before the cache read as current: %+v, %v", runs, err)
	}
	if again, err := history.Import(ctx, s, dir); err != nil || again.Cells != 0 || again.Verdicts == 0 {
		t.Fatalf("import after the migration: %+v, %v", again, err)
	}
	check("import after the migration")
	if again, err := history.Import(ctx, s, dir); err != nil || again.Verdicts != 0 {
		t.Errorf("a third import analysed again: %+v, %v", again, err)
	}
}
