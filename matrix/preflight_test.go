package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestPreflightPlan: one run per build, settings, workload and
// variables (not per repeat, client count, rate or A/A arm), builds in
// the commits' order, each build's settings together; -n prints them.
func TestPreflightPlan(t *testing.T) {
	req := Request{
		Commits:   []Commit{{Label: "base", Ref: "a"}, {Label: "patch", Ref: "b"}},
		Workloads: []string{"select1", "churn"}, Repeats: 3, Duration: time.Second, Protocol: "simple",
		Axes:  map[string][]string{"clients": {"1,4"}, "settings": {"pg_stat_statements.max=1000,5000"}, "rate": {"100,200"}},
		Order: ABBA, Seed: 1,
	}
	plan, err := PlanFor(req, []results.Commit{{Label: "base", Ref: "a", SHA: "a", Build: "base"}, {Label: "patch", Ref: "b", SHA: "b", Build: "patch"}})
	if err != nil {
		t.Fatal(err)
	}
	runs := Preflight(plan, plan.Cells)
	if len(runs) != 2*2*2 {
		t.Fatalf("%d preflight runs of %d cells; want 8 (2 builds × 2 settings × 2 workloads)", len(runs), len(plan.Cells))
	}
	restarts := 0
	for i, c := range runs {
		if want := []string{"base", "patch"}[i/4]; c.Commit != want {
			t.Errorf("run %d on %s; want the builds in order (%s)", i, c.Commit, want)
		}
		if i%4 > 0 && c.Settings["pg_stat_statements.max"] != runs[i-1].Settings["pg_stat_statements.max"] {
			restarts++
		}
	}
	if restarts != 2 {
		t.Errorf("%d changes of settings within a build; want one a build (its settings together)", restarts)
	}
	aa, _ := PlanFor(req, []results.Commit{{Label: "base", Ref: "a", SHA: "a", Build: "one"}, {Label: "patch", Ref: "a", SHA: "a", Build: "one"}})
	if n := len(Preflight(aa, aa.Cells)); n != 4 {
		t.Errorf("an A/A plan: %d preflight runs; want 4 (one build)", n)
	}
	if len(Preflight(plan, nil)) != 0 {
		t.Error("nothing left to run, and a preflight")
	}
	var b strings.Builder
	PrintPlan(&b, plan, "DIR", nil)
	if n := strings.Count(b.String(), "\n# preflight: "); n != 8 || !strings.Contains(b.String(), "# preflight: select1 on build base with pg_stat_statements.max=1000\n") {
		t.Errorf("-n shows %d preflight lines; want 8:\n%s", n, b.String())
	}
}

// TestWithCause: a failed tool's error names its cause, not its
// closing line: pgbench's first error, initdb's line before its hint.
func TestWithCause(t *testing.T) {
	pgbench := &proc.Error{Cmd: "pgbench", Err: errors.New("exit status 2"), Log: "/x/pgbench.log", Tail: []string{
		`pgbench: error: client 1 script 0 aborted in command 1 query 0: ERROR:  column "no_such_column" does not exist`,
		"pgbench: error: Run was aborted; the above results are incomplete."}}
	initdb := &proc.Error{Cmd: "initdb", Err: errors.New("exit status 1"), Log: "/x/initdb.log", Tail: []string{
		"initdb: unrecognized option '--bogus'", `initdb: hint: Try "initdb --help" for more information.`}}
	for _, tc := range []struct {
		err       error
		want, not string
	}{
		{fmt.Errorf("workload x: %w", pgbench), `workload x: pgbench: exit status 2: pgbench: error: client 1 script 0 aborted in command 1 query 0: ERROR: column "no_such_column" does not exist (log: /x/pgbench.log)`, "Run was aborted"},
		{fmt.Errorf("initdb m-a: %w", initdb), "initdb m-a: initdb: exit status 1: initdb: unrecognized option '--bogus' (log: /x/initdb.log)", "hint"},
		{errors.New("plain"), "plain", "\n"},
	} {
		if got := withCause(tc.err); got != tc.want || strings.Contains(got, tc.not) {
			t.Errorf("withCause:\n got %s\nwant %s", got, tc.want)
		}
	}
}

// TestPreflightRefusesBeforeTheFirstCell: a script pgbench aborts on its
// first transaction is exit 2 in one line with pgbench's own error,
// before any cell: no record, no results directory (the run made it),
// no server of the run left running. The same script given the variable
// it reads passes, and the run leaves no preflight directory behind.
func TestPreflightRefusesBeforeTheFirstCell(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	script := filepath.Join(testenv.SharedTempDir(t), "batch.sql")
	os.WriteFile(script, []byte("SELECT 1 WHERE :batch > 0;\n"), 0o644)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"file:" + script}, Repeats: 1, Duration: time.Second, Protocol: "simple",
		Axes: plumbing("vars", "batch=x"),
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	deps.Out = &out
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	err = Run(context.Background(), deps, plan, dir)
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "preflight before the first cell") ||
		!strings.Contains(err.Error(), "pgbench: error: client 0") || strings.Contains(err.Error(), "Run was aborted") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a script pgbench aborts: %v; want exit 2, one line with pgbench's error\n%s", err, out.String())
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("a refused run left %s", dir)
	}
	if _, running := cluster.PID(filepath.Join(deps.Clusters.Root, ClusterName("a"))); running {
		t.Error("the preflight's server is left running")
	}
	req.Axes = plumbing("vars", "batch=10")
	if plan, err = Prepare(context.Background(), deps, req); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("with :batch a number: %v\n%s", err, out.String())
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil || len(recs) != 2 || recs[0].Status != results.StatusOK || recs[1].Status != results.StatusOK {
		t.Errorf("records %+v, %v", recs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, PreflightDir)); err == nil {
		t.Errorf("the preflight's directory is left in %s", dir)
	}
}
