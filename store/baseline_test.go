package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestHistoryBaseline: a trend of a run of two commits carries both arms:
// the patch's point and the baseline's, each the median of its repeats
// as the report has them; the baseline is not a point of the series (its
// change points are the patch's).
func TestHistoryBaseline(t *testing.T) {
	ctx := context.Background()
	dir := demoRun(t)
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t)
	if _, err := s.Import(ctx, dir); err != nil {
		t.Fatal(err)
	}
	var row *analysis.Row
	for i := range rep.Rows {
		if rep.Rows[i].Metric == results.MetricTPS {
			row = &rep.Rows[i]
			break
		}
	}
	if row == nil {
		t.Fatal("the demo's report has no tps row")
	}
	median := map[string]float64{}
	for _, st := range row.Stats {
		median[st.Commit] = st.Median
	}
	ser, err := s.History(ctx, store.HistoryQuery{Metric: results.MetricTPS, Config: row.Config})
	if err != nil {
		t.Fatal(err)
	}
	if len(ser.Points) != 1 || len(ser.Baseline) != 1 {
		t.Fatalf("%d points and %d baseline points, want 1 and 1", len(ser.Points), len(ser.Baseline))
	}
	p, b := ser.Points[0], ser.Baseline[0]
	if p.Commit == rep.Baseline || b.Commit != rep.Baseline || p.Value != median[p.Commit] || b.Value != median[b.Commit] || p.Value == b.Value {
		t.Errorf("points %+v, baseline %+v; the report's medians %v (baseline %s)", p, b, median, rep.Baseline)
	}
}

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
