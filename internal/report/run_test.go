package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// TestRunRefusesUnknownGate: a --gate metric the plan does not define is
// exit 2 before anything runs or prints.
func TestRunRefusesUnknownGate(t *testing.T) {
	plan := &results.Plan{Metrics: workload.Metrics}
	if err := CheckGate(plan, []string{"tps", "latency_p99_ms"}); err != nil {
		t.Errorf("known metrics: %v", err)
	}
	var out, errOut bytes.Buffer
	o := RunOptions{Out: &out, Err: &errOut}
	o.Analysis.Gate = []string{"tpss"}
	for _, dry := range []bool{false, true} {
		// A dry run refuses it too: -n is the trace of the real run.
		err := Run(context.Background(), &matrix.Deps{Proc: &proc.Runner{DryRun: dry}}, plan, t.TempDir(), o)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "--gate tpss: unknown metric; known: ") || out.Len()+errOut.Len() != 0 {
			t.Errorf("dry run %v: err %v, out %q %q", dry, err, out.String(), errOut.String())
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
	if err := Run(context.Background(), deps, &results.Plan{Metrics: workload.Metrics}, dir, RunOptions{Out: &out, Err: &errOut}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# plan: 0 cells") || !strings.Contains(out.String(), "results in "+dir) || errOut.Len() != 0 {
		t.Errorf("out %q, err %q", out.String(), errOut.String())
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a dry run made the results directory")
	}
}
