package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// userCluster is the user's cluster, started by switch on a prebuilt
// install, as a matrix found it.
type userCluster struct {
	cm     *cluster.Manager
	name   string
	before *cluster.State
	pid    int
	envSh  []byte
}

// startUserCluster starts the user's cluster name on install, as
// `abtest switch NAME --install DIR -p auto` does.
func startUserCluster(t *testing.T, env map[string]string, install, name string) *userCluster {
	t.Helper()
	if code, out, stderr := abtest(t, env, "switch", "--worktree", name, "--install", install, "-p", "auto"); code != 0 {
		t.Fatalf("switch: %d\n%s\n%s", code, out, stderr)
	}
	u := &userCluster{cm: &cluster.Manager{Root: env["PG_DATA_DIR"]}, name: name}
	var err error
	if u.before, err = u.cm.ReadState(name); err != nil {
		t.Fatal(err)
	}
	u.pid, _ = cluster.PID(u.before.DataDir)
	u.envSh, _ = os.ReadFile(u.before.EnvFile)
	return u
}

// check asserts that the matrix run in dir, whose baseline has the
// user's cluster's name as its label, measured on a cluster of its own
// and left the user's as it was: the same postmaster, port, install and
// env.sh. Every cell records the server it measured (issue 12: the
// planned binary, never "(deleted)"), and a clean run leaves no
// clusters.json.
func (u *userCluster) check(t *testing.T, dir, install string) {
	t.Helper()
	for _, r := range records(t, dir) {
		if r.Status != results.StatusOK || r.Server == nil || r.Server.Exe != filepath.Join(install, "bin", "postgres") || !strings.Contains(r.Server.Version, "PostgreSQL 15") {
			t.Errorf("cell %s: %s %s server %+v", r.Cell, r.Status, r.Error, r.Server)
		} else if r.Server.PID == u.pid {
			t.Errorf("cell %s measured the user's cluster (pid %d)", r.Cell, u.pid)
		}
	}
	after, err := u.cm.ReadState(u.name)
	if err != nil {
		t.Fatal(err)
	}
	if now, running := cluster.PID(after.DataDir); !running || now != u.pid {
		t.Errorf("the user's cluster: running %v, pid %d -> %d", running, u.pid, now)
	}
	if after.Port != u.before.Port || after.Install != u.before.Install || after.StartedAt != u.before.StartedAt {
		t.Errorf("the user's cluster changed: %+v -> %+v", u.before, after)
	}
	if data, _ := os.ReadFile(after.EnvFile); string(data) != string(u.envSh) {
		t.Errorf("env.sh changed:\n%s\n->\n%s", u.envSh, data)
	}
	if _, running := cluster.PID(filepath.Join(u.cm.Root, matrix.ClusterName(u.name))); running {
		t.Error("the matrix left its own cluster running")
	}
	if _, err := os.Stat(filepath.Join(dir, matrix.ClustersFile)); err == nil {
		t.Errorf("%s left behind after a clean run", matrix.ClustersFile)
	}
}

// brokenInstall is a copy of Debian's install whose pg_ctl fails: every
// cell on it fails (its server never starts).
func brokenInstall(t *testing.T, src string) string {
	t.Helper()
	install := testpg.CopyInstall(t, src, "")
	// pg_ctl, not pgbench: one pgbench (the newest build's) drives every
	// server of a run, so a broken pgbench of one build breaks no cell.
	pgctl := filepath.Join(install, "bin", "pg_ctl")
	os.Remove(pgctl)
	if err := os.WriteFile(pgctl, []byte("#!/bin/sh\necho 'pg_ctl: broken on purpose' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return install
}

// TestGateFailsClosed: a candidate whose every cell fails is not "no
// change": matrix and analyze --fail-on-regression exit 3 (issue 13,
// item 1). --gate of a metric no plan defines is bad input (issue 13):
// one line and exit 2 from matrix and analyze, and the matrix creates
// nothing (no results, data, install or worktree directory) before
// refusing, analyze no report. --max-repeats below -r and a --budget
// shorter than one block are TestFlagGapsExit2's. A candidate whose
// server cannot start at all (its pg_ctl broken) is the preflight's exit
// 2 before any cell (issue 39); the candidate whose cells all fail has
// its server killed as each of its cells starts (a condition, which the
// preflight does not hold), the baseline's cells untouched.
func TestGateFailsClosed(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	broken := brokenInstall(t, install)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "broken")
	common := []string{"-c", "1", "-w", "select1", "-r", "3", "-d", "1", "--warmup", "0", "--sample-every", "1s", "--fail-on-regression"}
	args := append([]string{"matrix", "-k", "base=install:" + install + ",cand=install:" + broken}, common...)
	code, stdout, stderr := abtest(t, env, append(args, "-o", out+"-bad", "--gate", "nosuch")...)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--gate nosuch: unknown metric") {
		t.Errorf("matrix --gate nosuch: exit %d, stderr %q; want 2, one line\n%s", code, stderr, stdout)
	}
	for _, d := range []string{env["BENCH_RESULTS_DIR"], env["PG_DATA_DIR"], env["PG_INSTALL_DIR"], env["PG_WORKTREES_DIR"]} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("a refused --gate created %s", d)
		}
	}
	code, stdout, stderr = abtest(t, env, append(args, "-o", out+"-nostart")...)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "preflight before the first cell, select1 on build cand") || !strings.Contains(stderr, "server did not start") {
		t.Errorf("matrix with a candidate that cannot start: exit %d, stderr %q; want the preflight's exit 2\n%s", code, stderr, stdout)
	}
	if _, err := os.Stat(out + "-nostart"); err == nil {
		t.Error("the preflight's refusal left its results directory")
	}
	cand := testpg.CopyInstall(t, install, "")
	killer := filepath.Join(testenv.SharedTempDir(t), "kill-cand.sh")
	os.WriteFile(killer, []byte("#!/bin/sh\n[ \"$1\" = start ] || exit 0\nd=$("+filepath.Join(install, "bin", "psql")+" -XAtc 'show data_directory') || exit 1\n"+
		"case $d in */"+matrix.ClusterName("cand")+") kill -9 \"$(head -1 \"$d/postmaster.pid\")\";; esac\n"), 0o755)
	args = append([]string{"matrix", "-k", "base=install:" + install + ",cand=install:" + cand, "--condition", "file:" + killer}, common...)
	code, stdout, stderr = abtest(t, env, append(args, "-o", out)...)
	if code != 3 || !strings.Contains(stderr, "incomplete") || !strings.Contains(stderr, "every cell of commit cand") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("matrix: exit %d, want 3 in one line\n%s\n%s", code, stdout, stderr)
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
	report := filepath.Join(t.TempDir(), "r.md")
	code, stdout, stderr = abtest(t, env, "analyze", "--gate", "nosuch", "-o", report, out)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--gate nosuch") || stdout != "" {
		t.Errorf("analyze --gate nosuch: exit %d, stdout %q, stderr %q; want 2 and one line", code, stdout, stderr)
	}
	if _, err := os.Stat(report); err == nil {
		t.Error("analyze --gate nosuch wrote its report")
	}
}
