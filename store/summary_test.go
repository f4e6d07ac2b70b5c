package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
)

// TestRunSummary: an import stores the run-level answer of the analysis
// (its geometric means and gate status) and each verdict's interval of
// the change, equal to the report's; the run is named by its directory;
// a run whose summary was lost (as one stored before schema 3) gets it
// back on its next import.
func TestRunSummary(t *testing.T) {
	ctx := context.Background()
	dirs, err := storetest.Shards(filepath.Join(t.TempDir(), "pgss-ab"), 42, []host.Host{{Hostname: "node1"}})
	if err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t)
	st, err := history.Import(ctx, s, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		runs, err := history.Runs(ctx, s)
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s: runs %v, %v", when, runs, err)
		}
		r := runs[0]
		if want := analysis.GateStatus(rep.Gate()); r.Gate != want || r.Gate != results.GateRegression || r.GateDetail == "" {
			t.Errorf("%s: gate %q (%s), want %q", when, r.Gate, r.GateDetail, want)
		}
		if r.Name() != "shard1" || len(r.Metrics) == 0 {
			t.Errorf("%s: name %q, %d metric definitions", when, r.Name(), len(r.Metrics))
		}
		gs, err := history.Geomeans(ctx, s, st.Run)
		if err != nil || len(gs) != len(rep.Geomeans) || len(gs) == 0 {
			t.Fatalf("%s: geomeans %+v, %v; the report has %d", when, gs, err, len(rep.Geomeans))
		}
		for i, g := range rep.Geomeans {
			got := gs[i]
			if got.Commit != g.Commit || got.Metric != g.Metric || got.Verdict != g.Verdict || got.Ratio == nil || *got.Ratio != g.Ratio || *got.Lo != g.Lo {
				t.Errorf("%s: geomean %+v, the report's %+v", when, got, g)
			}
		}
		vs, err := history.Verdicts(ctx, s, st.Run)
		if err != nil {
			t.Fatal(err)
		}
		var withInterval int
		for _, v := range vs {
			if v.DeltaLo != nil && v.DeltaHi != nil && *v.DeltaLo <= *v.DeltaPct && *v.DeltaPct <= *v.DeltaHi {
				withInterval++
			}
		}
		if withInterval == 0 {
			t.Errorf("%s: no verdict has its change's interval", when)
		}
	}
	check("import")
	if _, err := s.DB().Exec("UPDATE runs SET gate = ''"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("DELETE FROM run_geomeans"); err != nil {
		t.Fatal(err)
	}
	// The cache lost with its tag: the run is judged again.
	if _, err := s.DB().Exec("DELETE FROM run_judged"); err != nil {
		t.Fatal(err)
	}
	if again, err := history.Import(ctx, s, dirs[0]); err != nil || again.Cells != 0 || again.Verdicts == 0 {
		t.Fatalf("import again: %+v, %v", again, err)
	}
	check("import again")
	if again, err := history.Import(ctx, s, dirs[0]); err != nil || again.Verdicts != 0 {
		t.Errorf("a third import analysed again: %+v, %v", again, err)
	}
}
