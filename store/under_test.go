package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestRunsUnderDir: the runs under a directory (a nightly job's
// root/runs) are those stored from there, with their commits; a run from
// elsewhere in the same store is neither one of them nor a point of
// their series, though History (every run) has it. On SQLite and on
// PostgreSQL.
func TestRunsUnderDir(t *testing.T) {
	checkRunsUnder(t, openSQLite(t))
}

func TestRunsUnderDirPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), startPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkRunsUnder(t, s)
}

func checkRunsUnder(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	nights, _ := storetest.Nights(filepath.Join(root, "runs"), 3, nil)
	other, _ := storetest.Nights(filepath.Join(root, "elsewhere"), 4, nil)
	for _, d := range append(nights, other[3]) {
		if _, err := s.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := history.RunsUnder(ctx, s, filepath.Join(root, "runs"), analysis.Options{})
	if err != nil || len(got) != 3 {
		t.Fatalf("runs under: %+v, %v", got, err)
	}
	for i, r := range got {
		if len(r.Commits) != 2 || r.Baseline != "base" || r.Commits[0].Label != "base" || r.Commits[0].SHA != storetest.BaseSHA ||
			r.Commits[1].Label != "head" || r.Commits[1].SHA != storetest.NightSHA(i) ||
			r.Dir != nights[i] || r.Status != results.GateOK || r.Failed != "" || len(r.Regressions) != 0 {
			t.Errorf("run %d = %+v", i, r)
		}
	}
	series, err := s.SeriesUnder(ctx, filepath.Join(root, "runs"), []string{"tps"})
	if err != nil || len(series) != 1 || len(series[0].Points) != 3 || series[0].Metric != "tps" {
		t.Errorf("series under: %+v, %v", series, err)
	}
	all, _ := s.History(ctx, store.HistoryQuery{Metric: "tps", Config: "select1/c16"})
	if len(all.Points) != 4 {
		t.Errorf("history of every run: %d points, want 4", len(all.Points))
	}
	if none, err := history.RunsUnder(ctx, s, filepath.Join(root, "run"), analysis.Options{}); err != nil || len(none) != 0 {
		t.Errorf("a directory that is only a prefix of runs/: %+v, %v", none, err)
	}
}

// TestExists: a dry run reads a store that exists and creates none.
func TestExists(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.DefaultFile)
	if store.Exists(path) || store.Exists("") {
		t.Error("a missing SQLite file exists")
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !store.Exists(path) || !store.Exists("sqlite:"+path) || !store.Exists("postgres://db.example/abtest") {
		t.Error("an existing store or a URL does not exist")
	}
}

// TestRunStatusIsTheGate: a run's status in the store (RunsUnder) is what
// analysis.Report.Gate says of it (regression → 1, could not answer
// → 3, else 0), incomplete metrics kept: a gated metric missing in one
// head cell fails the run; beside a regression in another
// configuration the regression wins (the store used to say failed); a
// report-only metric missing, or nothing wrong, is ok; a failed cell
// fails it; every cell there but TPS too noisy for an answer is
// unanswered (exit 3), neither ok nor failed.
func TestRunStatusIsTheGate(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	root := filepath.Join(t.TempDir(), "runs")
	other := results.Config{Workload: "churn", Clients: 16, Settings: map[string]string{}}
	cases := []struct {
		name string
		// drop is the metric the head's third repeat of select1 lacks;
		// slower the head's TPS drop on churn; fail fails that cell;
		// noise the spread of TPS (0.5 % when zero).
		drop   string
		slower float64
		fail   bool
		noise  float64
		want   results.GateStatus
		code   int
	}{
		{"incomplete", "tps", 0, false, 0, results.GateFailed, exitcode.Infra},
		{"regression beside incomplete", "tps", 0.1, false, 0, results.GateRegression, exitcode.Regression},
		{"report-only metric missing", "latency_p99_ms", 0, false, 0, results.GateOK, exitcode.OK},
		{"clean", "", 0, false, 0, results.GateOK, exitcode.OK},
		{"failed cell", "", 0, true, 0, results.GateFailed, exitcode.Infra},
		{"too noisy to answer", "", 0, false, 0.15, results.GateUnanswered, exitcode.Infra},
	}
	var dirs []string
	for i, tc := range cases {
		dir := filepath.Join(root, fmt.Sprintf("night-%d", i))
		rng := rand.New(rand.NewSource(int64(i)))
		_, err := storetest.Write(dir, storetest.Run{
			Created: time.Date(2025, 1, 1+i, 2, 0, 0, 0, time.UTC), Seed: int64(i), Repeats: 8,
			Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "head", SHA: storetest.NightSHA(i), Build: "head"}},
			Configs: []results.Config{storetest.Config, other},
			Value: func(k results.Commit, c results.Config, rep int) map[string]float64 {
				v := 10000 * (1 + max(tc.noise, 0.005)*rng.NormFloat64())
				if k.Label == "head" && c.Workload == "churn" {
					v *= 1 - tc.slower
				}
				m := map[string]float64{"tps": v, "latency_p99_ms": 1.5e4 / v}
				if k.Label == "head" && c.Workload == "select1" && rep == 3 {
					delete(m, tc.drop)
				}
				return m
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if tc.fail {
			failCell(t, dir, storetest.Config.ID()+"/r3/head")
		}
		if _, err := s.Import(ctx, dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	runs, err := history.RunsUnder(ctx, s, root, analysis.Options{})
	if err != nil || len(runs) != len(cases) {
		t.Fatalf("runs under: %+v, %v", runs, err)
	}
	for i, tc := range cases {
		in, err := analysis.Load(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analysis.Analyze(in, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		gate := rep.Gate()
		r := runs[i]
		if exitcode.Code(gate) != tc.code || analysis.GateStatus(gate) != tc.want || r.Status != tc.want {
			t.Errorf("%s: gate %v (exit %d), store's run %q (%s); want %s, exit %d", tc.name, gate, exitcode.Code(gate), r.Status, r.Failed, tc.want, tc.code)
		}
		if (r.Failed != "") != (tc.want == results.GateFailed) || (len(r.Regressions) > 0) != (tc.want == results.GateRegression) {
			t.Errorf("%s: run %+v", tc.name, r)
		}
	}
	// The caller's gate options decide too: a 10 % TPS drop under a 20 %
	// threshold is no regression, and the incomplete metric beside it
	// fails the run.
	runs, err = history.RunsUnder(ctx, s, root, analysis.Options{Thresholds: map[string]float64{"tps": 20}})
	if err != nil || runs[1].Status != results.GateFailed {
		t.Errorf("with a 20 %% TPS threshold: %+v, %v; want the regression run failed (incomplete), not a regression", runs[1], err)
	}
}

// failCell marks a cell of the run in dir failed, without metrics.
func failCell(t *testing.T, dir, cell string) {
	t.Helper()
	path := filepath.Join(dir, results.CellsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	found := false
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r results.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Cell == cell {
			found = true
			r.Status, r.Metrics, r.Error = results.StatusFailed, results.Values{}, "server would not start"
			if line, err = json.Marshal(&r); err != nil {
				t.Fatal(err)
			}
		}
		out = append(append(out, line...), '\n')
	}
	if !found {
		t.Fatalf("no cell %s in %s", cell, path)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
