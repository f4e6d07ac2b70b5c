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

// checkEqualsFiles: the report judged from the store is the analysis
// of the files.
func checkEqualsFiles(t *testing.T, when string, rep *analysis.Report, want map[string]results.Verdict) {
	t.Helper()
	n := 0
	for _, row := range rep.Rows {
		for _, st := range row.Stats {
			if st.Commit == rep.Baseline {
				continue
			}
			n++
			if w, ok := want[st.Commit+" "+row.Config+" "+row.Metric]; !ok || w != st.Verdict {
				t.Errorf("%s: %s %s %s: %s, the files say %s", when, st.Commit, row.Config, row.Metric, st.Verdict, w)
			}
		}
	}
	if n != len(want) || n == 0 {
		t.Fatalf("%s: %d verdicts, the files' analysis has %d", when, n, len(want))
	}
}

// TestJudgeEqualsFiles: an import stores raw cells and judges nothing;
// the run judged from the store is the analysis of its files, and it
// has a gate and an answer for its commit.
func TestJudgeEqualsFiles(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ab")
	abRun(t, dir, "head")
	want := fileVerdicts(t, dir)
	s := openStore(t)
	all, err := ImportAll(ctx, s, []string{dir}, nil, nil)
	if err != nil || len(all) != 1 || all[0].Cells == 0 {
		t.Fatalf("import: %+v, %v", all, err)
	}
	rep, err := Judge(ctx, s, all[0].Run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "from the store", rep, want)
	if lines := rep.AnswerLines(); len(lines) != 1 || !strings.HasPrefix(lines[0], "head vs base: ") {
		t.Errorf("answer lines %q", lines)
	}
}

// TestJudgeReadsNewCells: cells imported after the run was first judged
// are in its next judgement: every cell, as the files have them.
func TestJudgeReadsNewCells(t *testing.T) {
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
	first, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Judge(ctx, s, first.Run, analysis.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, dir); err != nil {
		t.Fatal(err)
	}
	rep, err := Judge(ctx, s, first.Run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkEqualsFiles(t, "after the rest of the cells", rep, fileVerdicts(t, dir))
}

// TestAllCellsFailedReads: a run whose every cell failed is stored and
// listed (every cell failed); judged, it could not answer: gate failed,
// and its answer says nothing was compared.
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
	stats, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Failed != r.Cells || r.Cells == 0 {
		t.Errorf("a run whose cells all failed: %d of %d cells failed", r.Failed, r.Cells)
	}
	rep, err := Judge(ctx, s, stats.Run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g := analysis.GateStatus(rep.Gate()); g != results.GateFailed {
		t.Errorf("gate %q, want failed", g)
	}
	if lines := rep.AnswerLines(); len(lines) != 1 || !strings.Contains(lines[0], "nothing compared") {
		t.Errorf("answer lines %q, want nothing compared", lines)
	}
	// The label is kept as written: the pages escape it (dashboard's
	// xss tests), the store does not rewrite it.
	if r.Commits[1].Label != "<script>alert(1)</script>" {
		t.Errorf("label %q", r.Commits[1].Label)
	}
}
