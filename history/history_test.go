package history

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// abRun writes a run of base and head, head 10 % slower in one of two
// configurations, into dir; label names the head.
func abRun(t *testing.T, dir, label string) {
	t.Helper()
	configs := []results.Config{{Workload: "select1", Clients: 4, Settings: map[string]string{}}, {Workload: "select1", Clients: 8, Settings: map[string]string{}}}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC), Seed: 7, Repeats: 6, Configs: configs,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: label, SHA: storetest.NightSHA(1), Build: "head"}},
		Value: func(k results.Commit, c results.Config, rep int) map[string]float64 {
			v := 1000 + float64(rep%3)
			if k.Label != "base" && c.Clients == 8 {
				v *= 0.9
			}
			return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 1000 / v}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setVersion plays a change of the statistics until the test ends.
func setVersion(t *testing.T, v string) {
	old := version
	version = v
	t.Cleanup(func() { version = old })
}

// fileVerdicts are the analysis of the files, by commit, configuration
// and metric.
func fileVerdicts(t *testing.T, dir string) map[string]results.Verdict {
	t.Helper()
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]results.Verdict{}
	for _, row := range rep.Rows {
		for _, st := range row.Stats {
			if st.Commit != rep.Baseline {
				out[st.Commit+" "+row.Config+" "+row.Metric] = st.Verdict
			}
		}
	}
	return out
}

// checkEqualsFiles: the verdicts read are the analysis of the files.
func checkEqualsFiles(t *testing.T, when string, got []store.Verdict, want map[string]results.Verdict) {
	t.Helper()
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%s: %d verdicts, the files' analysis has %d", when, len(got), len(want))
	}
	for _, v := range got {
		if w, ok := want[v.Commit+" "+v.Config+" "+v.Metric]; !ok || w != v.Verdict {
			t.Errorf("%s: %s %s %s: %s, the files say %s", when, v.Commit, v.Config, v.Metric, v.Verdict, w)
		}
	}
}

// TestVersionChangeJudgesAgain: an import stores raw cells and warms
// the cache; reading again judges nothing; a new analysis version makes
// the next read judge the run again (the counter moves once), and what
// it reads equals the analysis of the files.
func TestVersionChangeJudgesAgain(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ab")
	abRun(t, dir, "head")
	want := fileVerdicts(t, dir)
	s := openStore(t)
	stats, err := Import(ctx, s, dir)
	if err != nil || stats.Verdicts != len(want) {
		t.Fatalf("import: %+v, %v; want %d verdicts", stats, err, len(want))
	}
	before := judgements.Load()
	got, err := Verdicts(ctx, s, stats.Run)
	if err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "warm cache", got, want)
	if _, err := Runs(ctx, s); err != nil {
		t.Fatal(err)
	}
	if n := judgements.Load() - before; n != 0 {
		t.Fatalf("a current cache was judged again %d times", n)
	}
	setVersion(t, "next")
	if stale, err := s.Stale(ctx, version); err != nil || len(stale) != 1 {
		t.Fatalf("after a version change: stale %v, %v", stale, err)
	}
	runs, err := Runs(ctx, s)
	if err != nil || len(runs) != 1 || runs[0].Gate == "" || len(runs[0].Answers) != 1 {
		t.Fatalf("runs read after a version change: %+v, %v", runs, err)
	}
	if n := judgements.Load() - before; n != 1 {
		t.Fatalf("after a version change the run was judged %d times, want once", n)
	}
	if got, err = Verdicts(ctx, s, stats.Run); err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "after a version change", got, want)
	if by, err := s.JudgedBy(ctx, stats.Run); err != nil || by != "next" {
		t.Errorf("the cache is of version %q, %v; want next", by, err)
	}
	var noise string
	if err := s.DB().QueryRowContext(ctx, "SELECT noise FROM run_judged WHERE run_id = ? AND analysis_version = 'next'", stats.Run).Scan(&noise); err != nil || len(noise) < 3 {
		t.Errorf("noise: %q, %v", noise, err)
	}
}

// TestOtherVersionNeverCurrent: a cache written by another (a future)
// analysis version, with a verdict the files do not support, is never
// read as current: the store's rows of this version are empty, and a
// read through history judges the run again and shows the files'
// answer.
func TestOtherVersionNeverCurrent(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ab")
	abRun(t, dir, "head")
	want := fileVerdicts(t, dir)
	s := openStore(t)
	stats, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	forged := &store.Judged{Version: "9999.future", Cells: stats.Cells, Gate: results.GateOK, GateDetail: "forged",
		Answers: []store.Answer{{Commit: "head", Better: 9, Line: "forged: everything better"}}}
	for k := range want {
		f := strings.Fields(k)
		forged.Verdicts = append(forged.Verdicts, store.Verdict{Commit: f[0], Config: f[1], Metric: f[2], Verdict: results.Better, Role: results.RoleGated})
	}
	if ok, err := s.PutJudged(ctx, stats.Run, forged); !ok || err != nil {
		t.Fatalf("forging a cache: %v, %v", ok, err)
	}
	if vs, err := s.Verdicts(ctx, stats.Run, version); err != nil || len(vs) != 0 {
		t.Fatalf("the store read %d rows of another version as this one's, %v", len(vs), err)
	}
	if runs, err := s.Runs(ctx, version); err != nil || runs[0].Gate != "" || len(runs[0].Answers) != 0 {
		t.Fatalf("the store read another version's gate or answers as this one's: %+v, %v", runs, err)
	}
	runs, err := Runs(ctx, s)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	if a, ok := runs[0].Answer("head"); !ok || strings.Contains(a.Line, "forged") || a.Better == 9 || runs[0].GateDetail == "forged" {
		t.Errorf("the forged cache was shown: %+v, gate %s (%s)", a, runs[0].Gate, runs[0].GateDetail)
	}
	got, err := Verdicts(ctx, s, stats.Run)
	if err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "after a forged cache", got, want)
}

// TestNewCellsDropCache: cells imported after the run was judged
// makes its cache stale, and the next read judges every cell.
func TestNewCellsDropCache(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ab")
	abRun(t, dir, "head")
	s := openStore(t)
	// Half the cells first, as a run still being written.
	data, err := os.ReadFile(filepath.Join(dir, results.CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(strings.Join(lines[:len(lines)/2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := Import(ctx, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if by, err := s.JudgedBy(ctx, first.Run); err != nil || by != "" {
		t.Fatalf("new cells left the cache of version %q, %v", by, err)
	}
	got, err := Verdicts(ctx, s, first.Run)
	if err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "after the rest of the cells", got, fileVerdicts(t, dir))
}

// TestAllCellsFailedReads: a run whose every cell failed is stored,
// reads (gate failed, with why) and is not judged again on every read.
func TestAllCellsFailedReads(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "failed")
	abRun(t, dir, "<script>alert(1)</script>")
	data, err := os.ReadFile(filepath.Join(dir, results.CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		rec["status"], rec["error"] = "failed", "pgbench exited 1"
		delete(rec, "metrics")
		b, _ := json.Marshal(rec)
		out = append(out, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	stats, err := Import(ctx, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Runs(ctx, s)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Gate != results.GateFailed || r.GateDetail == "" || r.Failed != r.Cells || r.Cells == 0 {
		t.Errorf("a run whose cells all failed: gate %q (%s), %d of %d cells failed", r.Gate, r.GateDetail, r.Failed, r.Cells)
	}
	before := judgements.Load()
	if _, err := Runs(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := Verdicts(ctx, s, stats.Run); err != nil {
		t.Fatal(err)
	}
	if n := judgements.Load() - before; n != 0 {
		t.Errorf("a failed run was judged again %d times on read", n)
	}
	// The label is kept as written: the pages escape it (dashboard's
	// xss tests), the store does not rewrite it.
	if r.Commits[1].Label != "<script>alert(1)</script>" {
		t.Errorf("label %q", r.Commits[1].Label)
	}
}
