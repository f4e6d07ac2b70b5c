package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// pgbenchCause is what a cell whose pgbench aborted records (matrix).
const pgbenchCause = `workload x: pgbench: exit status 2: pgbench: error: client 1 script 0 aborted in command 1 query 0: ERROR: column "no_such_column" does not exist (log: /x/pgbench.log)`

// failedRun is finishedRun with every cell of commit failing (its
// records rewritten), ready for Finish.
func failedRun(t *testing.T, commits ...string) (*results.Plan, string) {
	t.Helper()
	req := matrix.Request{
		Commits:   []matrix.Commit{{Label: "base", Ref: "a"}, {Label: "patch", Ref: "b"}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"4"}}, Repeats: 3, Protocol: "simple", Order: matrix.ABBA, Seed: 1, Duration: 1e9,
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
		for _, f := range commits {
			if c.Commit == f {
				rec.Status, rec.Metrics, rec.Error = results.StatusFailed, results.Values{}, pgbenchCause
			}
		}
		if err := results.AppendRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	return plan, dir
}

// TestEveryCellFailedExits3: a run in which every cell of a commit ×
// configuration failed is exit 3 whether it is gated or not, in one line
// naming the first failure's cause (pgbench's error line); its report
// is written all the same, and its summary states neither a detectable
// change nor "no change called" (it compared nothing).
// One with some cells of each group usable is not.
func TestEveryCellFailedExits3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failed  []string
		fail    bool
		want    int
		summary string
	}{
		{"candidate, ungated", []string{"patch"}, false, exitcode.Infra, "no configuration has usable cells of both"},
		{"candidate, gated", []string{"patch"}, true, exitcode.Infra, "no configuration has usable cells of both"},
		{"both, ungated", []string{"base", "patch"}, false, exitcode.Infra, "this run has no usable cells"},
		{"none", nil, false, exitcode.OK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, dir := failedRun(t, tc.failed...)
			var out, errOut bytes.Buffer
			err := Finish(context.Background(), plan, dir, RunOptions{Out: &out, Err: &errOut, Fail: tc.fail})
			if exitcode.Code(err) != tc.want {
				t.Fatalf("exit %d (%v); want %d\n%s", exitcode.Code(err), err, tc.want, out.String())
			}
			if _, serr := os.Stat(filepath.Join(dir, "report.md")); serr != nil {
				t.Errorf("no report: %v", serr)
			}
			if len(tc.failed) > 0 && (strings.Contains(out.String(), "could have detected only") || strings.Contains(out.String(), "no change called")) {
				t.Errorf("the summary states a detectable change:\n%s", out.String())
			}
			if tc.summary != "" && !strings.Contains(strings.Join(strings.Fields(out.String()), " "), tc.summary) {
				t.Errorf("the summary does not say %q:\n%s", tc.summary, out.String())
			}
			if tc.want == exitcode.OK {
				return
			}
			msg := err.Error()
			if !errors.Is(err, ErrCellsFailed) || strings.Contains(msg, "\n") || !strings.Contains(msg, "the first: "+pgbenchCause) ||
				!strings.Contains(msg, "every cell of commit "+tc.failed[0]+" in select1/c4") || errOut.Len() != 0 {
				t.Errorf("error %q, stderr %q; want one line naming the first failure", msg, errOut.String())
			}
		})
	}
}

// TestUnwrittenReportExits3: a report that cannot be written (report.md
// is a directory; a full disk is the same error path) is exit 3 in one
// line, gated or not, with the median TPS printed instead.
func TestUnwrittenReportExits3(t *testing.T) {
	for _, fail := range []bool{false, true} {
		plan, dir := finishedRun(t)
		if err := os.Mkdir(filepath.Join(dir, "report.md"), 0o755); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err := Finish(context.Background(), plan, dir, RunOptions{Out: &out, Err: &errOut, Fail: fail})
		if exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), "report.md") || strings.Contains(err.Error(), "\n") || errOut.Len() != 0 {
			t.Errorf("gated %v: %v, stderr %q; want exit 3 in one line naming report.md", fail, err, errOut.String())
		}
		if !strings.Contains(out.String(), "median TPS") {
			t.Errorf("gated %v: no medians instead:\n%s", fail, out.String())
		}
	}
}

// TestUnrecordedStoreExits3: a store that cannot record the run is exit
// 3, even when the gate found a regression (said in the same line).
func TestUnrecordedStoreExits3(t *testing.T) {
	plan, dir := finishedRun(t)
	o := RunOptions{
		Out: io.Discard, Err: io.Discard,
		Record: func(context.Context, io.Writer, ...string) error { return errors.New("disk full") },
		Hooks: Hooks{Gate: func(*analysis.Report) (error, error) {
			return exitcode.Regressed(analysis.ErrRegression), nil
		}},
	}
	err := Finish(context.Background(), plan, dir, o)
	if exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), "store: disk full") || !strings.Contains(err.Error(), "regression") {
		t.Errorf("%v (exit %d); want exit 3 naming the store and the regression", err, exitcode.Code(err))
	}
}

// TestMediansOfFailedCommit: the medians printed when no report could
// be made show "—" for a commit whose every cell failed, never NaN.
func TestMediansOfFailedCommit(t *testing.T) {
	plan, dir := failedRun(t, "patch")
	var out bytes.Buffer
	if err := Medians(&out, dir, plan); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "NaN") || !strings.Contains(s, "—") || !strings.Contains(s, "1001") {
		t.Errorf("medians:\n%s\nwant base's median and — for patch", s)
	}
}
