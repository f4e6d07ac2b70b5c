package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// TestRunRefusesUnknownGate: a --gate or --primary metric the plan does
// not define, or a descriptive --primary, is exit 2 before anything runs
// or prints.
func TestRunRefusesUnknownGate(t *testing.T) {
	plan := &results.Plan{Metrics: results.Builtin}
	if err := analysis.CheckMetrics(plan, analysis.Options{Gate: []string{"tps", "latency_p99_ms"}, Primary: []string{"latency_p95_ms"}}); err != nil {
		t.Errorf("known metrics: %v", err)
	}
	for _, tc := range []struct {
		o    analysis.Options
		want string
	}{
		{analysis.Options{Gate: []string{"tpss"}}, "--gate tpss: unknown metric; known: "},
		{analysis.Options{Primary: []string{"tps", "tpss"}}, "--primary tpss: unknown metric; known: "},
		{analysis.Options{Primary: []string{"pgss_hot"}}, "--primary pgss_hot: a descriptive metric"},
	} {
		var out, errOut bytes.Buffer
		o := RunOptions{Analysis: tc.o, Out: &out, Err: &errOut}
		for _, dry := range []bool{false, true} {
			// A dry run refuses it too: -n is the trace of the real run.
			err := Run(context.Background(), &matrix.Deps{Proc: &proc.Runner{DryRun: dry}}, plan, t.TempDir(), o)
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) || out.Len()+errOut.Len() != 0 {
				t.Errorf("%+v, dry run %v: err %v, out %q %q; want exit 2 with %q", tc.o, dry, err, out.String(), errOut.String(), tc.want)
			}
		}
	}
}

// TestRunStatesReach: a dry run prints the gate's reach after the plan;
// a gated plan below r_min is refused, dry or not, before anything runs
// or prints, and one at r_min is not.
func TestRunStatesReach(t *testing.T) {
	cfg := results.Config{Workload: "select1", Clients: 1, Settings: map[string]string{}}
	plan := &results.Plan{Metrics: results.Builtin, Configs: []results.Config{cfg}}
	plan.Options.Repeats = 2
	for _, dry := range []bool{false, true} {
		var out, errOut bytes.Buffer
		dir := filepath.Join(t.TempDir(), "run")
		err := Run(context.Background(), &matrix.Deps{Proc: &proc.Runner{DryRun: dry}}, plan, dir, RunOptions{Fail: true, Out: &out, Err: &errOut})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "r ≥ 3") || out.Len()+errOut.Len() != 0 {
			t.Errorf("dry run %v, -r 2 gated: err %v, out %q %q; want exit 2 naming r ≥ 3", dry, err, out.String(), errOut.String())
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("dry run %v: a refused plan made its directory", dry)
		}
	}
	var out bytes.Buffer
	deps := &matrix.Deps{Proc: &proc.Runner{DryRun: true}}
	if err := Run(context.Background(), deps, plan, t.TempDir(), RunOptions{Out: &out, Err: &out}); err != nil {
		t.Fatalf("ungated -r 2: %v", err)
	}
	if !strings.Contains(out.String(), "\n# gate: tps in 1 configuration at 2 repeats (reachable from r ≥ 3)") {
		t.Errorf("ungated dry run: no gate line after the plan:\n%s", out.String())
	}
	plan.Options.Repeats = 3
	out.Reset()
	if err := Run(context.Background(), deps, plan, t.TempDir(), RunOptions{Fail: true, Out: &out, Err: &out}); err != nil || !strings.Contains(out.String(), "# gate: tps") {
		t.Errorf("gated -r 3: %v\n%s", err, out.String())
	}
}

// TestGateAllowUnknown: --allow-unknown waives only an unanswered
// primary, in one line on stderr; a regression or an incomplete run
// keeps its exit code, and nothing is gated without fail.
func TestGateAllowUnknown(t *testing.T) {
	unanswered := &analysis.Report{Unanswered: []string{"cand run-level tps unknown over 4 configurations: needs r ≥ 14"}}
	regressed := &analysis.Report{Unanswered: unanswered.Unanswered, Regressions: []analysis.Change{{Commit: "cand", Config: "select1/c1", Metric: "tps", DeltaPct: -9}}}
	incomplete := &analysis.Report{Unanswered: unanswered.Unanswered, Incomplete: []analysis.Incomplete{{Commit: "cand", Config: "select1/c1", Gated: true, Why: "failed"}}}
	for _, tc := range []struct {
		name        string
		rep         *analysis.Report
		fail, allow bool
		code        int
		line        string
	}{
		{"unanswered", unanswered, true, false, exitcode.Infra, ""},
		{"unanswered, allowed", unanswered, true, true, exitcode.OK, "abtest: could not answer: cand run-level tps unknown over 4 configurations: needs r ≥ 14; exit 0 under --allow-unknown\n"},
		{"unanswered, not gated", unanswered, false, true, exitcode.OK, ""},
		{"regression, allowed", regressed, true, true, exitcode.Regression, ""},
		{"incomplete, allowed", incomplete, true, true, exitcode.Infra, ""},
	} {
		var errOut bytes.Buffer
		err := Gate(tc.rep, tc.fail, tc.allow, &errOut)
		if exitcode.Code(err) != tc.code || errOut.String() != tc.line {
			t.Errorf("%s: %v (exit %d), stderr %q; want exit %d, stderr %q", tc.name, err, exitcode.Code(err), errOut.String(), tc.code, tc.line)
		}
	}
}

// TestOutputDir: no -o names a directory after the plan's time under the
// results root; a directory holding a plan is refused.
func TestOutputDir(t *testing.T) {
	root := t.TempDir()
	plan := &results.Plan{Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if dir, err := OutputDir(plan, "", root); err != nil || dir != filepath.Join(root, "abtest_20260102T030405Z") {
		t.Errorf("default: %s, %v", dir, err)
	}
	used := t.TempDir()
	os.WriteFile(filepath.Join(used, results.PlanFile), []byte("{}"), 0o644)
	if _, err := OutputDir(plan, used, root); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "use --resume "+used) {
		t.Errorf("used -o: %v", err)
	}
	// A run is writing it (issue 14 item 3: two fresh runs with one -o):
	// refused naming that run's pid, and the lock file is not made where
	// there was none.
	release, err := results.Lock(used)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OutputDir(plan, used, root)
	if !errors.Is(err, results.ErrLocked) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("-o of a directory a run is writing: %v; want exit 2 naming pid %d", err, os.Getpid())
	}
	release()
	if _, err := OutputDir(plan, used, root); errors.Is(err, results.ErrLocked) || !strings.Contains(err.Error(), "use --resume") {
		t.Errorf("after the run: %v", err)
	}
	fresh := t.TempDir()
	os.WriteFile(filepath.Join(fresh, results.PlanFile), []byte("{}"), 0o644)
	OutputDir(plan, fresh, root)
	if _, err := os.Stat(filepath.Join(fresh, results.LockFile)); err == nil {
		t.Error("OutputDir made a lock file")
	}
}

// TestRunDryRunPrintsThePlan: a dry run prints the plan and nothing
// else, and writes nothing into the directory.
func TestRunDryRunPrintsThePlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var out, errOut bytes.Buffer
	deps := &matrix.Deps{Proc: &proc.Runner{DryRun: true}}
	if err := Run(context.Background(), deps, &results.Plan{Metrics: results.Builtin}, dir, RunOptions{Out: &out, Err: &errOut}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# plan: 0 cells") || !strings.Contains(out.String(), "results in "+dir) || errOut.Len() != 0 {
		t.Errorf("out %q, err %q", out.String(), errOut.String())
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a dry run made the results directory")
	}
}

// TestFinishOrder: after the matrix, the run is recorded before its
// report is written, so that a section (the nightly's trend) can read
// the store back; the section is rendered by the report's writer (the
// report is written once, the section last), and the console says the
// summary, then where the report is, then the store's lines, then the
// last hook's.
func TestFinishOrder(t *testing.T) {
	plan, dir := finishedRun(t)
	var out, errOut bytes.Buffer
	var steps []string
	o := RunOptions{
		Out: &out, Err: &errOut,
		Record: func(_ context.Context, w io.Writer, dirs ...string) error {
			if _, err := os.Stat(filepath.Join(dirs[0], "report.md")); err == nil {
				t.Error("recorded after the report was written")
			}
			steps = append(steps, "record")
			fmt.Fprintln(w, "store: stored")
			return nil
		},
		Hooks: Hooks{
			Sections: func(_ context.Context, rep *analysis.Report, stored bool) error {
				steps = append(steps, fmt.Sprintf("sections stored=%v", stored))
				rep.Trend = &analysis.TrendSection{Nights: 1}
				return nil
			},
			Done: func(_ context.Context, _ *analysis.Report, verdict error) error {
				steps = append(steps, "done")
				fmt.Fprintln(&out, "last line")
				return verdict
			},
		},
	}
	if err := Finish(context.Background(), plan, dir, o); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ", "); got != "record, sections stored=true, done" {
		t.Errorf("steps: %s", got)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(md), "## Trend") != 1 || !strings.HasSuffix(string(md), "Not enough history yet: the trend starts with the second night.\n") {
		t.Errorf("report.md does not end with its one trend section:\n%s", md)
	}
	s := out.String()
	i, j, k, l := strings.Index(s, "Summary\n"), strings.Index(s, "report: "+filepath.Join(dir, "report.md")), strings.Index(s, "store: stored"), strings.Index(s, "last line")
	// The answer comes first (a line per commit naming what changed),
	// then the Summary, the report's path, the store, the last line.
	if first := strings.SplitN(s, "\n", 2)[0]; !strings.Contains(first, " vs ") || i <= 0 || j < i || k < j || l < k || errOut.Len() != 0 {
		t.Errorf("console out of order:\n%s\nstderr %q", s, errOut.String())
	}
}

// TestFinishHoldsTheLock: the results directory stays locked while the
// run is recorded, its sections made, its report written and its last
// hook run, so no second abtest writes it meanwhile (results.Lock is
// refused, results.Holder names this process); it is free again once
// Finish returns, and Finish refuses a directory another run holds.
func TestFinishHoldsTheLock(t *testing.T) {
	plan, dir := finishedRun(t)
	held := func(step string) {
		t.Helper()
		if pid, ok := results.Holder(dir); !ok || pid != fmt.Sprint(os.Getpid()) {
			t.Errorf("%s: holder %q, held %v; want pid %d", step, pid, ok, os.Getpid())
		}
		if release, err := results.Lock(dir); !errors.Is(err, results.ErrLocked) {
			if err == nil {
				release()
			}
			t.Errorf("%s: a second lock: %v, want %v", step, err, results.ErrLocked)
		}
	}
	o := RunOptions{
		Out: io.Discard, Err: io.Discard,
		// With no dirs, Run checks the store before the lock (Recorder).
		Record: func(_ context.Context, _ io.Writer, dirs ...string) error {
			if len(dirs) > 0 {
				held("record")
			}
			return nil
		},
		Hooks: Hooks{
			Sections: func(context.Context, *analysis.Report, bool) error { held("sections"); return nil },
			Summary:  func(*analysis.Report) { held("summary") },
			Done: func(_ context.Context, _ *analysis.Report, verdict error) error {
				held("done")
				if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
					t.Errorf("done before the report: %v", err)
				}
				return verdict
			},
		},
	}
	if err := Finish(context.Background(), plan, dir, o); err != nil {
		t.Fatal(err)
	}
	if pid, ok := results.Holder(dir); ok {
		t.Errorf("still held by %s after Finish", pid)
	}
	release, err := results.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	o.Record, o.Hooks = nil, Hooks{}
	if err := Finish(context.Background(), plan, dir, o); !errors.Is(err, results.ErrLocked) || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("Finish of a directory another run holds: %v; want exit 2, %v", err, results.ErrLocked)
	}
}

// TestRunHoldsTheLock: Run locks the results directory before the first
// cell, passes the lock to the matrix (which cannot take it a second
// time) and releases it only once Finish is done: the hooks after the
// matrix see it held. The run is a --resume of a run whose cells are all
// recorded (on Debian's binaries, so nothing is built or run but the
// settings check). A directory another run holds is refused, through
// the Failed hook, before anything is said.
func TestRunHoldsTheLock(t *testing.T) {
	install := testenv.PGInstall(t)
	cm := testpg.Manager(t)
	deps := &matrix.Deps{Proc: cm.Run, Clusters: cm, Workload: &workload.Runner{Proc: cm.Run, Getenv: func(string) string { return "" }}, Out: io.Discard}
	req := matrix.Request{
		Commits:   []matrix.Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"1"}}, Repeats: 3, Duration: time.Second, Protocol: "simple",
	}
	plan, err := matrix.Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "run")
	os.MkdirAll(dir, 0o755)
	if err := results.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Cells {
		rec := &results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: results.Config{Workload: c.Workload, Clients: c.Clients, Settings: c.Settings}, Repeat: c.Repeat,
			DurationS: 1, Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{"tps": 1000 + float64(c.Seq%2)})}
		if err := results.AppendRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	var steps []string
	held := func(step string) {
		if _, ok := results.Holder(dir); ok {
			steps = append(steps, step)
		}
	}
	o := RunOptions{
		Out: io.Discard, Err: io.Discard,
		// With no dirs, Run checks the store before the lock (Recorder).
		Record: func(_ context.Context, _ io.Writer, dirs ...string) error {
			if len(dirs) > 0 {
				held("record")
			}
			return nil
		},
		Hooks: Hooks{
			Started: func(*results.Plan, string, []analysis.Reach) { held("started") },
			Done: func(_ context.Context, _ *analysis.Report, verdict error) error {
				held("done")
				return verdict
			},
		},
	}
	if err := Run(context.Background(), deps, plan, dir, o); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ", "); got != "started, record, done" {
		t.Errorf("held in: %s; want started, record, done", got)
	}
	if _, ok := results.Holder(dir); ok {
		t.Error("still held after Run")
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}
	release, err := results.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	steps = nil
	o.Hooks.Failed = func(err error) error { steps = append(steps, "failed"); return err }
	err = Run(context.Background(), deps, plan, dir, o)
	if !errors.Is(err, results.ErrLocked) || strings.Join(steps, ", ") != "failed" {
		t.Errorf("a held directory: %v, steps %q; want %v through Failed alone", err, steps, results.ErrLocked)
	}
}

// finishedRun writes a finished A/B run (plan and every cell) in a new
// directory, ready for Finish.
func finishedRun(t *testing.T) (*results.Plan, string) {
	t.Helper()
	req := matrix.Request{
		Commits:   []matrix.Commit{{Label: "base", Ref: "a"}, {Label: "patch", Ref: "b"}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"4"}}, Repeats: 3, Duration: time.Second,
		Protocol: "simple", Build: "release", Order: matrix.ABBA, Seed: 1,
	}
	plan, err := matrix.PlanFor(req, []results.Commit{{Label: "base", Ref: "a", SHA: "a"}, {Label: "patch", Ref: "b", SHA: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := results.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Cells {
		rec := &results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: results.Config{Workload: c.Workload, Clients: c.Clients, Settings: c.Settings}, Repeat: c.Repeat,
			DurationS: 1, Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{"tps": 1000 + float64(c.Seq%2)})}
		if err := results.AppendRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	return plan, dir
}

// TestBeforeAnalyzeGC: the analysis collects at half the live heap again
// (GOGC 50), unless the user set GOGC; the soft memory limit stays.
func TestBeforeAnalyzeGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	debug.SetGCPercent(100)
	if err := BeforeAnalyze("json", ""); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GC percent %d, want 50", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 400<<20 {
		t.Errorf("memory limit %d, want %d", got, 400<<20)
	}
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	if err := BeforeAnalyze("json", ""); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("GC percent %d with GOGC=200 set, want it kept", got)
	}
}

// TestAnalyzeOutputFileDeprecated (issue 42): -o names a directory; a
// file name is still written this release, with one deprecation line,
// and a directory gets none.
func TestAnalyzeOutputFileDeprecated(t *testing.T) {
	in, err := analysis.Load(filepath.Join("..", "demo", "testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out  string
		file string
		note bool
	}{
		{filepath.Join(t.TempDir(), "r.txt"), "", true},
		{t.TempDir() + "/", "report.txt", false},
	} {
		var out, errOut strings.Builder
		if err := Analyze(in, analysis.Options{}, GateFlags{}, "text", c.out, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(errOut.String(), "deprecated: analyze -o"); got != c.note || strings.Count(errOut.String(), "deprecated") > 1 {
			t.Errorf("-o %s: stderr %q; want a deprecation line: %v", c.out, errOut.String(), c.note)
		}
		if _, err := os.Stat(filepath.Join(c.out, c.file)); err != nil {
			t.Errorf("-o %s: %v", c.out, err)
		}
	}
}
