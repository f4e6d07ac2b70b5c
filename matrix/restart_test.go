package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/results"
)

// TestRestartCellsAndWarmupTx (issue 43's factors): --restart-cells
// starts the server anew before every timed cell (pg_ctl start once a
// cell, against about once a run without it), and --warmup-tx N warms
// up with pgbench -t N in place of -T.
func TestRestartCellsAndWarmupTx(t *testing.T) {
	t.Parallel()
	deps, pg := prebuiltDeps(t)
	install := testpg.CopyInstall(t, pg, "fp-restart")
	calls := filepath.Join(testenv.SharedTempDir(t), "calls")
	if err := os.WriteFile(calls, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(calls, 0o666); err != nil { // the server's account appends too
		t.Fatal(err)
	}
	for _, name := range []string{"pg_ctl", "pgbench"} {
		bin := filepath.Join(install, "bin", name)
		if err := os.Rename(bin, bin+".real"); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\necho \"" + name + " $*\" >> " + calls + "\nexec " + bin + ".real \"$@\"\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(restart bool) (starts, warmTx, warmT int) {
		if err := os.Truncate(calls, 0); err != nil {
			t.Fatal(err)
		}
		req := Request{
			Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
			Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 2, Duration: time.Second,
			WarmupTx: 20, RestartCells: restart, Protocol: "simple",
		}
		plan, err := Prepare(context.Background(), deps, req)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Options.WarmupTx != 20 || plan.Options.RestartCells != restart {
			t.Fatalf("plan options %+v", plan.Options)
		}
		var out strings.Builder
		deps.Out = &out
		dir := filepath.Join(testenv.SharedTempDir(t), "r")
		if err := Run(context.Background(), deps, plan, dir); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		recs, _, err := results.ReadRecords(dir)
		if err != nil || len(recs) != 4 {
			t.Fatalf("%d records (%v)", len(recs), err)
		}
		for _, r := range recs {
			if r.Status != results.StatusOK {
				t.Errorf("cell %s: %s %s", r.Cell, r.Status, r.Error)
			}
		}
		data, err := os.ReadFile(calls)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			args := " " + line + " "
			switch {
			case strings.HasPrefix(line, "pg_ctl start"):
				starts++
			case strings.HasPrefix(line, "pgbench") && strings.Contains(args, " -t 20 "):
				warmTx++
				if strings.Contains(args, " -T ") {
					t.Errorf("a warm-up by transactions with a duration too: %s", line)
				}
			case strings.HasPrefix(line, "pgbench") && strings.Contains(args, "warm-up"):
				warmT++
			}
		}
		return starts, warmTx, warmT
	}
	starts, warmTx, warmT := run(true)
	if starts < 4 || warmTx != 4 || warmT != 0 {
		t.Errorf("--restart-cells --warmup-tx 20: %d starts, %d warm-ups of -t 20, %d others; want ≥ 4, 4, 0", starts, warmTx, warmT)
	}
	if starts, _, _ := run(false); starts > 2 {
		t.Errorf("without --restart-cells: %d starts of the server for 4 cells; want at most 2", starts)
	}
}

// TestWarmupOneWay: a warm-up is given in seconds or in transactions,
// not both; a negative count is refused; a resume refuses both flags
// (they decide the plan).
func TestWarmupOneWay(t *testing.T) {
	base := Options{Commits: "a=install:/x,b=install:/x", Workloads: "select1", Axes: map[string][]string{"clients": {"1"}}, PgssMax: "1000", Seconds: 3, Repeats: 3,
		Build: "release", Protocol: "simple", Order: "abba"}
	both := base
	both.Warmup, both.WarmupTx = 2, 100
	both.Given = func(f string) bool { return f == "warmup" || f == "warmup-tx" }
	if _, err := both.Request(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "give one warm-up") {
		t.Errorf("--warmup 2 --warmup-tx 100: %v; want exit 2 asking for one", err)
	}
	neg := base
	neg.WarmupTx = -1
	r, err := neg.Request()
	if err == nil {
		_, err = r.Check()
	}
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("--warmup-tx -1: %v; want exit 2", err)
	}
	tx := base
	tx.Warmup, tx.WarmupTx = 5, 100
	r, err = tx.Request()
	if err != nil || r.Warmup != 0 || r.WarmupTx != 100 {
		t.Errorf("--warmup-tx 100 (default --warmup): %+v %v; want no seconds, 100 transactions", r.Warmup, err)
	}
	for _, f := range []string{"warmup-tx", "restart-cells"} {
		if !slices.Contains(planFlags, f) {
			t.Errorf("--%s decides the plan: a resume must refuse it", f)
		}
	}
}
