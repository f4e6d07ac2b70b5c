package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// The fault suite (issue 14): what a killed, interrupted, raced or
// starved run leaves behind, and that --resume finishes exactly the
// missing cells. Each run is the A/A matrix of TestMatrixAAOnPrebuiltInstall
// (Debian's PostgreSQL 15 as a prebuilt install, 2-second cells; 1-second
// where the fault lands before the first window), started as a separate
// process so that it can be signalled and killed.

// child is an abtest matrix running in its own process.
type child struct {
	cmd *exec.Cmd
	out *strings.Builder
}

func startMatrix(t *testing.T, env map[string]string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ABTEST_TEST_MAIN=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &child{cmd: cmd, out: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return c
}

// waitCells waits until dir's cells.jsonl has n complete lines.
func waitCells(t *testing.T, c *child, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for countLines(filepath.Join(dir, results.CellsFile)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d cells after 90 s:\n%s", n, c.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postmasters returns the running postmasters of the clusters under root.
func postmasters(root string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if pid, ok := cluster.PID(filepath.Join(root, e.Name())); ok {
			out[e.Name()] = pid
		}
	}
	return out
}

// noServerLeft waits up to 15 s for every server under root to be gone.
func noServerLeft(t *testing.T, root string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := postmasters(root)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers left running: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exactlyOnce checks that every planned cell has one record.
func exactlyOnce(t *testing.T, dir string) []results.Record {
	t.Helper()
	plan, err := results.ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, dir)
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.Cell]++
	}
	for _, c := range plan.Cells {
		if seen[c.ID] != 1 {
			t.Errorf("cell %s has %d records", c.ID, seen[c.ID])
		}
	}
	if len(recs) != len(plan.Cells) {
		t.Errorf("%d records for %d cells", len(recs), len(plan.Cells))
	}
	return recs
}

// aaArgs is the fault suite's A/A matrix: repeats of cells of seconds
// after a warm-up of 1 s, open-loop at 500 transactions/s. The faults
// land on phases, files and processes, never on a figure: a closed
// loop burned both cores in pgbench's and the backends' system calls
// for nothing the tests read. Alone, closed loop against 500/s:
// TestFaultInterruptAtFivePoints 30.8 against 9.6 CPU-seconds,
// AbtestKilledThenResume 27.4 against 5.3, PostmasterKilledMidCell 23.8
// against 5.0, DiskFullMidAppend 20.5 against 4.7; the same wall time.
func aaArgs(install, out string, repeats, seconds int) []string {
	return []string{"matrix", "-k", "a=install:" + install + ",b=install:" + install, "-c", "2", "-w", "select1",
		"-r", fmt.Sprint(repeats), "-d", fmt.Sprint(seconds), "--warmup", "1", "-R", plumbingRate, "-o", out, "--sample-every", "1s"}
}

// plumbingRate is the offered rate (transactions/s) of the tests whose
// proof is no figure: what a run leaves, resumes and restores.
const plumbingRate = "500"

// SIGINT at five points of a run: while preparing (its results
// directory made, no cluster yet), during initdb (its staging directory appears),
// during start (its postmaster.pid appears), during the warm-up (the
// first cell's warm-up directory appears); the fifth, measurement, is
// TestMatrixInterruptAndResume's interrupt in its third cell. Each point
// is seen on disk before the signal, so the test knows where it landed:
// no server of the run is left, cells.jsonl holds only whole lines, and
// --resume runs exactly the missing cells. Every point lands before the
// first window: cells of 1 s, not the suite's 2 (alone at load 6–7,
// 31–32 s and 21 CPU-seconds against 40.6 s and 26.7).
func TestFaultInterruptAtFivePoints(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	install := testenv.PGInstall(t)
	// clusterFile: name is in the data directory of one of the run's
	// clusters (name "": that directory exists).
	clusterFile := func(env map[string]string, name string) bool {
		found, _ := filepath.Glob(filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("*"), name))
		for _, f := range found {
			if fi, err := os.Stat(f); err == nil && (name != "" || fi.IsDir()) {
				return true
			}
		}
		return false
	}
	for _, point := range []struct {
		name    string
		reached func(env map[string]string, out string) bool
	}{
		// The results directory exists (the run holds its lock: its
		// signal handling is in place) and no cluster does yet. The
		// window is short (a prebuilt install builds nothing): a run
		// that made its cluster first is tried again.
		{"preparing", func(env map[string]string, out string) bool {
			_, err := os.Stat(out)
			return err == nil && !clusterFile(env, "")
		}},
		{"initdb", func(env map[string]string, _ string) bool {
			staged, _ := filepath.Glob(cluster.InitdbStaging(env["PG_DATA_DIR"], matrix.ClusterName("*")))
			return len(staged) > 0
		}},
		{"start", func(env map[string]string, out string) bool {
			return clusterFile(env, "postmaster.pid") && !hasDir(filepath.Join(out, "cells"), "warm-up")
		}},
		{"warm-up", func(env map[string]string, out string) bool { return hasDir(filepath.Join(out, "cells"), "warm-up") }},
	} {
		t.Run(point.name, func(t *testing.T) {
			var env map[string]string
			var out string
			var c *child
			for try := 1; c == nil; try++ {
				env = matrixEnv(t)
				out = filepath.Join(env["BENCH_RESULTS_DIR"], "int")
				c = startMatrix(t, env, aaArgs(install, out, 1, 1)...)
				deadline := time.Now().Add(60 * time.Second)
				for !point.reached(env, out) {
					if point.name == "preparing" && clusterFile(env, "") && try < 5 {
						t.Logf("try %d made its cluster before it was seen preparing: again", try)
						c.cmd.Process.Signal(syscall.SIGINT)
						c.cmd.Wait()
						noServerLeft(t, env["PG_DATA_DIR"])
						c = nil
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the run did not reach %s in 60 s:\n%s", point.name, c.out)
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
			c.cmd.Process.Signal(syscall.SIGINT)
			err := c.cmd.Wait()
			t.Logf("SIGINT in %s: %v\n%s", point.name, err, c.out)
			noServerLeft(t, env["PG_DATA_DIR"])
			if _, statErr := os.Stat(filepath.Join(out, results.PlanFile)); statErr != nil {
				// Interrupted before the plan was written: nothing to resume,
				// and nothing may be half there.
				if c.cmd.ProcessState.ExitCode() != 3 {
					t.Fatalf("interrupted before the plan: %v, want exit 3 (an interruption is no bad input):\n%s", err, c.out)
				}
				return
			}
			before := records(t, out)
			code, stdout, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
			if code != 0 {
				t.Fatalf("resume after SIGINT in %s: exit %d\n%s\n%s\nfirst run:\n%s", point.name, code, stdout, stderr, c.out)
			}
			after := exactlyOnce(t, out)
			for i, r := range before {
				if after[i].Cell != r.Cell || after[i].Seq != r.Seq {
					t.Errorf("record %d changed by the resume: %s -> %s", i, r.Cell, after[i].Cell)
				}
			}
			noServerLeft(t, env["PG_DATA_DIR"])
		})
	}
}

// hasDir reports whether a directory called name is under root.
func hasDir(root, name string) bool {
	found := false
	filepath.WalkDir(root, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// kill -9 of the postmaster in the middle of a cell: that cell fails with
// the reason and the server log's tail, the run goes on (the next cell
// starts the cluster again), and the report is written.
func TestFaultPostmasterKilledMidCell(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "kill")
	c := startMatrix(t, env, aaArgs(install, out, 2, 2)...)
	waitCells(t, c, out, 1)
	// The second cell: wait for its warm-up to end and kill its server
	// in the measured window.
	time.Sleep(1800 * time.Millisecond)
	killed := 0
	for name, pid := range postmasters(env["PG_DATA_DIR"]) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed++
			t.Logf("killed the postmaster of %s (pid %d)", name, pid)
		}
	}
	if killed == 0 {
		t.Fatalf("no postmaster to kill:\n%s", c.out)
	}
	if err := c.cmd.Wait(); err != nil && !strings.Contains(err.Error(), "exit status") {
		t.Fatalf("matrix: %v\n%s", err, c.out)
	}
	recs := exactlyOnce(t, out)
	failed := 0
	for _, r := range recs {
		if r.Status == results.StatusFailed {
			failed++
			if r.Error == "" || len(r.LogTail) == 0 {
				t.Errorf("failed cell %s says nothing: error %q, log tail %q", r.Cell, r.Error, r.LogTail)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed cells, want the one whose server was killed:\n%s", failed, c.out)
	}
	if recs[len(recs)-1].Status != results.StatusOK {
		t.Errorf("the run did not go on after the killed cell: last %+v", recs[len(recs)-1])
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
		t.Errorf("no report after a killed server: %v\n%s", err, c.out)
	}
	noServerLeft(t, env["PG_DATA_DIR"])
}

// kill -9 of abtest itself: a second run on the same directory meanwhile
// is refused naming the holder; the kill leaves the run's cluster
// running (nothing can stop it) and recorded in clusters.json; --resume
// runs exactly the missing cells and stops every server, the killed
// run's from its clusters.json.
func TestFaultAbtestKilledThenResume(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "kill9")
	c := startMatrix(t, env, aaArgs(install, out, 2, 2)...)
	waitCells(t, c, out, 1)

	code, _, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
	if code != 2 || !strings.Contains(stderr, fmt.Sprint(c.cmd.Process.Pid)) {
		t.Errorf("a second run on a directory in use: exit %d %q, want 2 naming pid %d", code, stderr, c.cmd.Process.Pid)
	}
	code, _, stderr = abtest(t, env, aaArgs(install, out, 2, 2)...)
	if code != 2 || !strings.Contains(stderr, fmt.Sprint(c.cmd.Process.Pid)) {
		t.Errorf("a fresh run with the same -o: exit %d %q, want 2 naming pid %d", code, stderr, c.cmd.Process.Pid)
	}

	time.Sleep(1500 * time.Millisecond)
	c.cmd.Process.Kill()
	c.cmd.Wait()
	dataDir := filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("a"))
	if _, running := cluster.PID(dataDir); !running {
		t.Fatalf("after kill -9 the run's cluster is not running: the test proves nothing\n%s", c.out)
	}
	if _, err := os.Stat(filepath.Join(out, matrix.ClustersFile)); err != nil {
		t.Fatalf("the killed run recorded no clusters: %v", err)
	}
	before := records(t, out)
	code, stdout, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("resume after kill -9: exit %d\n%s\n%s", code, stdout, stderr)
	}
	after := exactlyOnce(t, out)
	if len(after) <= len(before) {
		t.Errorf("the resume ran nothing: %d records before, %d after", len(before), len(after))
	}
	noServerLeft(t, env["PG_DATA_DIR"])
	if len(cluster.Processes(dataDir)) != 0 {
		t.Error("server processes of the killed run left")
	}
}

// A disk that fills up while a record is appended: the run stops with an
// infrastructure error, and after space is freed --resume cuts the torn
// line (saying so) and records every cell exactly once.
func TestFaultDiskFullMidAppend(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	testenv.Require(t, os.Geteuid() == 0, "root, to mount a small tmpfs")
	testenv.RequireTools(t, "mount", "umount")
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	mnt := filepath.Join(env["BENCH_RESULTS_DIR"], "small")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", mnt).CombinedOutput(); err != nil {
		testenv.Require(t, false, "mounting a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	out := filepath.Join(mnt, "run")
	c := startMatrix(t, env, aaArgs(install, out, 2, 2)...)
	waitCells(t, c, out, 1)
	// Leave less room than the next record needs.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, max(free-600, 0)), 0o644); err != nil && !strings.Contains(err.Error(), "no space") {
		t.Fatal(err)
	}
	err := c.cmd.Wait()
	if err == nil {
		t.Logf("the run finished despite the full disk (every later write fit):\n%s", c.out)
	}
	noServerLeft(t, env["PG_DATA_DIR"])
	os.Remove(filler)
	cells, _ := os.ReadFile(filepath.Join(out, results.CellsFile))
	torn := len(cells) > 0 && cells[len(cells)-1] != '\n'
	t.Logf("first run: %v; cells.jsonl torn: %v", err, torn)
	code, stdout, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("resume after a full disk: exit %d\n%s\n%s\nfirst run:\n%s", code, stdout, stderr, c.out)
	}
	if torn && !strings.Contains(stdout+stderr, "torn last line") {
		t.Errorf("resume did not say it repaired the torn line:\n%s%s", stdout, stderr)
	}
	exactlyOnce(t, out)
	noServerLeft(t, env["PG_DATA_DIR"])
}
