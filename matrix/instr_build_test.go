package matrix

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestRunInstructionsSlowedBuild: matrix --instructions with one repeat
// on PostgreSQL 15 from source, base against a build whose
// exec_simple_query runs a 500-iteration busy loop and against an A/A
// arm (the same build): the analysis calls the slowed build worse on
// instructions_per_tx, its per-function diff puts exec_simple_query
// first, and the A/A arm is same. The instruction cells leave the
// clusters stopped; the next timed cell restarts them. Under
// --until-decided, with a rule that keeps the timed configuration
// undecided to --max-repeats, the instruction verdicts are the same
// after the extra timed blocks (issue 21: exact is compared, not tested,
// so the α spent on the timed looks cannot turn it unknown).
func TestRunInstructionsSlowedBuild(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	e := testbuild.PG15(t)
	base := e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release}).Info.Install
	patch, err := filepath.Abs("../workload/testdata/slow_exec_simple_query.patch")
	if err != nil {
		t.Fatal(err)
	}
	slow := e.Build(t, "pg15-slow-exec", "base", []string{patch}, build.Options{Type: build.Release}).Info.Install
	deps, _ := prebuiltDeps(t)
	req := Request{
		Commits:   []Commit{{Label: "base", Install: base}, {Label: "slow", Install: slow}, {Label: "aa", Install: base}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"1"}}, Repeats: 1, Duration: time.Second, Protocol: "simple",
		Instructions: true, Adaptive: Adaptive{UntilDecided: true, MaxRepeats: 3},
		// Plumbing, not the count's exactness (workload's tests, at
		// the default N): a quarter of the transactions. The A/A arm
		// stays inside the exact tier's 0.1 % band: the rarest noise
		// seen, 3 864 instructions once in a 2N run (workload's
		// package comment), is 0.022 % of a transaction at N = 500;
		// measured in 2 runs at load 3–7 at N = 200: base and the A/A
		// arm 34 550.2–34 550.4, the slowed build 37 059.0–37 060.2.
		// At N = 200 a full suite once read the base's confirmation
		// 11 520 instructions lower (34 492.4/tx, −0.17 %: spin delays
		// of the loaded VM), beyond the band: the range test then
		// could not call the slowed build with 2 + 2 repeats.
		InstrTransactions: 500,
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	deps.Out = &out
	deps.Decide = func(string, int) ([]string, error) {
		for _, c := range plan.Configs {
			if !c.Instructions {
				return []string{c.ID()}, nil
			}
		}
		return nil, nil
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("run:\n%s", out.String())
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Status != results.StatusOK {
			t.Fatalf("%s: %s %s %v", rec.Cell, rec.Status, rec.Error, rec.LogTail)
		}
		if rec.Instructions && (rec.Instr == nil || rec.Instr.Method == "" || rec.Instr.Profile == "" || rec.Instr.Transactions != 500) {
			t.Errorf("%s: instruction cell without method or profile, or not of 500 transactions: %+v", rec.Cell, rec.Instr)
		}
		t.Logf("%s: wall %.1f s", rec.Cell, rec.WallS)
	}
	timed := 0
	for _, rec := range recs {
		if !rec.Instructions && rec.Commit == "base" {
			timed++
		}
	}
	if timed != 3 {
		t.Errorf("%d timed base cells; want 3 (1 planned, 2 extra blocks)", timed)
	}
	r, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Metric != "instructions_per_tx" {
			continue
		}
		t.Logf("row %s: %+v", row.Config, row.Stats)
		for _, st := range row.Stats[1:] {
			if want := map[string]results.Verdict{"slow": results.Worse, "aa": results.Same}[st.Commit]; st.Verdict != want || st.Method != "exact" {
				t.Errorf("after the timed blocks: %s instructions_per_tx %s by %s; want %s, compared exactly", st.Commit, st.Verdict, st.Method, want)
			}
		}
	}
	t.Logf("incomplete: %+v; metrics %v", r.Incomplete, r.Metrics)
	got := map[string]analysis.InstrWent{}
	for _, iw := range r.Instructions {
		got[iw.Commit] = iw
		t.Logf("%s: %.2f → %.2f instructions/tx (%+.2f, %+.3f %%) %s", iw.Commit, iw.Base, iw.New, iw.Diff, iw.DiffPct, iw.Verdict)
	}
	if iw := got["slow"]; iw.Verdict != results.Worse || len(iw.Deltas) == 0 || iw.Deltas[0].Name != "exec_simple_query" {
		t.Errorf("slowed build: %+v", iw)
	}
	if iw := got["aa"]; iw.Verdict != results.Same {
		t.Errorf("A/A: %+v", iw)
	}
}
