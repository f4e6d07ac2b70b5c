package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testenv"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// TestMatrixLeavesUserClusterAsFound: the user's cluster "a" runs (from
// switch, on Debian's binaries); a matrix whose baseline is labelled "a"
// measures on a cluster of its own and leaves "a" as it was: the same
// postmaster, port, install and env.sh. Every cell records the server it
// measured (issue 12: the planned binary, never "(deleted)").
func TestMatrixLeavesUserClusterAsFound(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	if code, out, stderr := abtest(t, env, "switch", "-w", "a", "--install", install, "-p", "auto"); code != 0 {
		t.Fatalf("switch: %d\n%s\n%s", code, out, stderr)
	}
	cm := &cluster.Manager{Root: env["PG_DATA_DIR"]}
	before, err := cm.ReadState("a")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := cluster.PID(before.DataDir)
	envSh, _ := os.ReadFile(before.EnvFile)

	out := filepath.Join(env["BENCH_RESULTS_DIR"], "found")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "a=install:"+install+",b=install:"+install,
		"-c", "1", "-w", "select1", "-r", "1", "-d", "1", "--warmup", "0", "-o", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("matrix: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range records(t, out) {
		if r.Status != results.StatusOK || r.Server == nil || r.Server.Exe != filepath.Join(install, "bin", "postgres") || !strings.Contains(r.Server.Version, "PostgreSQL 15") {
			t.Errorf("cell %s: %s %s server %+v", r.Cell, r.Status, r.Error, r.Server)
		} else if r.Server.PID == pid {
			t.Errorf("cell %s measured the user's cluster (pid %d)", r.Cell, pid)
		}
	}
	after, err := cm.ReadState("a")
	if err != nil {
		t.Fatal(err)
	}
	if now, running := cluster.PID(after.DataDir); !running || now != pid {
		t.Errorf("the user's cluster: running %v, pid %d -> %d", running, pid, now)
	}
	if after.Port != before.Port || after.Install != before.Install || after.StartedAt != before.StartedAt {
		t.Errorf("the user's cluster changed: %+v -> %+v", before, after)
	}
	if data, _ := os.ReadFile(after.EnvFile); string(data) != string(envSh) {
		t.Errorf("env.sh changed:\n%s\n->\n%s", envSh, data)
	}
	if _, running := cluster.PID(filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("a"))); running {
		t.Error("the matrix left its own cluster running")
	}
	if _, err := os.Stat(filepath.Join(out, matrix.ClustersFile)); err == nil {
		t.Errorf("%s left behind after a clean run", matrix.ClustersFile)
	}
}

// TestMatrixResumeAfterKillStopsItsClusters: abtest killed with SIGKILL
// leaves its cluster running (nothing can stop it); --resume runs the
// rest and stops it too, from the run's clusters.json.
func TestMatrixResumeAfterKillStopsItsClusters(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "kill")
	cmd := exec.Command(os.Args[0], "matrix", "-k", "a=install:"+install+",b=install:"+install, "-c", "1", "-w", "select1",
		"-r", "3", "-d", "1", "--warmup", "0", "-o", out, "--sample-every", "1s")
	cmd.Env = append(os.Environ(), "ABTEST_TEST_MAIN=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if countLines(filepath.Join(out, results.CellsFile)) >= 1 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	dataDir := filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("a"))
	if _, running := cluster.PID(dataDir); !running {
		t.Fatalf("after kill -9 the run's cluster is not running: the test proves nothing\n%s", output.String())
	}
	if _, err := os.Stat(filepath.Join(out, matrix.ClustersFile)); err != nil {
		t.Fatalf("the killed run recorded no clusters: %v", err)
	}
	code, stdout, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := len(records(t, out)); n != 6 {
		t.Errorf("%d cells after resume, want 6", n)
	}
	if _, running := cluster.PID(dataDir); running {
		t.Errorf("resume left the killed run's cluster running:\n%s", stdout)
	}
	if len(cluster.Processes(dataDir)) != 0 {
		t.Error("server processes left")
	}
}

// brokenInstall is a copy of Debian's install whose pgbench fails: every
// cell measured with it fails. The copy keeps Debian's layout (share is
// found relative to bin) and links share to the system's.
func brokenInstall(t *testing.T, src string) string {
	t.Helper()
	root := testenv.SharedTempDir(t)
	install := filepath.Join(root, "usr", "lib", "postgresql", "15")
	os.MkdirAll(filepath.Dir(install), 0o755)
	if out, err := exec.Command("cp", "-a", src, install).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	share, _ := exec.Command(filepath.Join(src, "bin", "pg_config"), "--sharedir").Output()
	if s := strings.TrimSpace(string(share)); s != "" {
		os.MkdirAll(filepath.Join(root, "usr", "share", "postgresql"), 0o755)
		if err := os.Symlink(s, filepath.Join(root, "usr", "share", "postgresql", filepath.Base(s))); err != nil {
			t.Fatal(err)
		}
	}
	pgbench := filepath.Join(install, "bin", "pgbench")
	os.Remove(pgbench)
	if err := os.WriteFile(pgbench, []byte("#!/bin/sh\necho 'pgbench: broken on purpose' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return install
}

// TestGateFailsClosed: a candidate whose every cell fails is not "no
// change": matrix and analyze --fail-on-regression exit 3 (issue 13,
// item 1), and --gate of an unknown metric is exit 2 before anything runs.
func TestGateFailsClosed(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	broken := brokenInstall(t, install)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "broken")
	args := []string{"matrix", "-k", "base=install:" + install + ",cand=install:" + broken,
		"-c", "1", "-w", "select1", "-r", "2", "-d", "1", "--warmup", "0", "--sample-every", "1s", "--fail-on-regression"}
	if code, _, stderr := abtest(t, env, append(args, "-o", out+"-bad", "--gate", "nosuch")...); code != 2 || !strings.Contains(stderr, "--gate nosuch") {
		t.Errorf("--gate nosuch: exit %d %q", code, stderr)
	}
	code, stdout, stderr := abtest(t, env, append(args, "-o", out)...)
	if code != 3 || !strings.Contains(stderr, "incomplete") {
		t.Errorf("matrix: exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range records(t, out) {
		if (r.Commit == "cand") != (r.Status == results.StatusFailed) {
			t.Errorf("cell %s: %s %s", r.Cell, r.Status, r.Error)
		}
	}
	code, _, stderr = abtest(t, env, "analyze", out)
	if code != 0 {
		t.Errorf("analyze without the gate: exit %d %s", code, stderr)
	}
	code, _, stderr = abtest(t, env, "analyze", "--fail-on-regression", out)
	if code != 3 || !strings.Contains(stderr, "cand") {
		t.Errorf("analyze --fail-on-regression: exit %d %q; want 3 naming cand", code, stderr)
	}
	code, _, stderr = abtest(t, env, "analyze", "--gate", "nosuch", out)
	if code != 2 {
		t.Errorf("analyze --gate nosuch: exit %d %q", code, stderr)
	}
}
