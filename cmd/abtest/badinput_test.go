package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// exit2OneLine fails unless the command was refused as bad input in one
// line naming want.
func exit2OneLine(t *testing.T, args []string, code int, stderr, want string) {
	t.Helper()
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("%q: exit %d, stderr %q; want 2, one line with %q", args, code, stderr, want)
	}
}

// TestMeaninglessNumbersExit2: NaN, ±Inf and 0 where they mean nothing
// are refused up front in one line (--alpha NaN panicked in the
// analysis; the others were taken).
func TestMeaninglessNumbersExit2(t *testing.T) {
	t.Parallel()
	dirs, err := storetest.Nights(filepath.Join(t.TempDir(), "nights"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", dirs[0], "--alpha", "NaN"}, "--alpha NaN"},
		{[]string{"analyze", dirs[0], "--alpha", "0"}, "--alpha 0"},
		{[]string{"analyze", dirs[0], "--alpha", "0.5"}, "--alpha 0.5"},
		{[]string{"analyze", dirs[0], "--alpha", "Inf"}, "--alpha +Inf"},
		{[]string{"analyze", dirs[0], "--threshold", "tps=NaN"}, "tps=NaN"},
		{[]string{"analyze", dirs[0], "--threshold", "tps=Inf"}, "tps=Inf"},
		{[]string{"analyze", dirs[0], "--threshold", "tps=-Inf"}, "tps=-Inf"},
		{[]string{"bench", "-R", "NaN"}, "-R NaN"},
		{[]string{"bench", "-R", "Inf"}, "-R +Inf"},
		{[]string{"bench", "-R", "100", "--expected-tps", "5000"}, "drop --expected-tps"},
		{[]string{"bench", "-t", "100", "--expected-tps", "5000"}, "drop --expected-tps"},
	} {
		code, _, stderr := abtest(t, env, tc.args...)
		exit2OneLine(t, tc.args, code, stderr, tc.want)
	}
}

// TestClientsBoundedByOpenFiles: a client count pgbench cannot open
// (clients + 3 files) is refused before anything runs, with the fix,
// instead of every cell failing and the run exiting 0.
func TestClientsBoundedByOpenFiles(t *testing.T) {
	t.Parallel()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= 100_003 {
		t.Skipf("RLIMIT_NOFILE %d: -c 100000 fits", lim.Cur)
	}
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	n := strconv.FormatUint(max(lim.Cur, 1), 10)
	for _, args := range [][]string{
		{"matrix", "-k", "a=install:/nonexistent,b=install:/nonexistent", "-w", "select1", "-c", "100000"},
		{"-n", "matrix", "-k", "a=install:/x,b=install:/x", "-w", "select1", "-c", "1," + n},
		{"bench", "-c", n, "-d", "1"},
	} {
		code, _, stderr := abtest(t, env, args...)
		exit2OneLine(t, args, code, stderr, "ulimit -n")
	}
	if _, err := os.Stat(env["BENCH_RESULTS_DIR"]); err == nil {
		t.Error("bad input created the results directory")
	}
}

// TestMissingInstallCreatesNothing: an install without bin/postgres is
// refused before the results directory (and its lock) exists.
func TestMissingInstallCreatesNothing(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	notExec := t.TempDir()
	os.MkdirAll(filepath.Join(notExec, "bin"), 0o755)
	os.WriteFile(filepath.Join(notExec, "bin", "postgres"), []byte("#!/bin/sh\n"), 0o644)
	for _, k := range []string{"a=install:/nonexistent,b=install:/nonexistent", "a=install:" + notExec + ",b=install:" + notExec} {
		args := []string{"matrix", "-k", k, "-w", "select1", "-r", "1", "-d", "1"}
		code, _, stderr := abtest(t, env, args...)
		exit2OneLine(t, args, code, stderr, "not a PostgreSQL installation")
	}
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"matrix", "-k", "a=install:/nonexistent,b=install:/nonexistent", "-w", "select1", "-r", "1", "-o", out}
	code, _, stderr := abtest(t, env, args...)
	exit2OneLine(t, args, code, stderr, "/nonexistent/bin/postgres")
	for _, dir := range []string{env["BENCH_RESULTS_DIR"], out} {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("bad input created %s", dir)
		}
	}
}

// TestSwitchBadInputChangesNothing: a missing patch is refused before the
// worktree is made, and removing what does not exist is bad input, not
// "removed".
func TestSwitchBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	env, repo := setup(t)
	args := []string{"switch", "-k", "HEAD", "--worktree", "x", "--patch", "/nonexistent.patch"}
	code, _, stderr := abtest(t, env, args...)
	exit2OneLine(t, args, code, stderr, "/nonexistent.patch")
	if _, err := os.Stat(env["PG_WORKTREES_DIR"]); err == nil {
		t.Error("a missing patch created the worktrees root")
	}
	if got := testenv.Git(t, repo, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Errorf("worktrees registered: %s", got)
	}
	for _, args := range [][]string{{"switch", "--remove", "--worktree", "nosuch"}, {"-n", "switch", "--remove", "--worktree", "nosuch"}} {
		code, stdout, stderr := abtest(t, env, args...)
		exit2OneLine(t, args, code, stderr, "nothing named nosuch")
		if stdout != "" {
			t.Errorf("%q: stdout %q", args, stdout)
		}
	}
}

// TestServeAddrExit2: an address no one can listen on is bad input,
// said before the store is opened.
func TestServeAddrExit2(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "abtest.db")
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:nosuchservice", "127.0.0.1"} {
		args := []string{"serve", "--addr", addr, "--store", store}
		code, _, stderr := abtest(t, nil, args...)
		exit2OneLine(t, args, code, stderr, "--addr "+addr)
	}
	if _, err := os.Stat(store); err == nil {
		t.Error("a bad --addr created the store")
	}
}

// TestExtensionBadInputCreatesNothing (issue 26): an extension directory
// without a Makefile and a missing --setup-sql file are one line, exit
// 2, and no results directory.
func TestExtensionBadInputCreatesNothing(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	install := testenv.PGInstall(t)
	k := "a=install:" + install + ",b=install:" + install
	for _, tc := range []struct{ flag, value, want string }{
		{"--extension", t.TempDir(), "no Makefile"},
		{"--setup-sql", "/nonexistent/setup.sql", "/nonexistent/setup.sql"},
	} {
		args := []string{"matrix", "-k", k, "-w", "select1", "-r", "1", "-d", "1", tc.flag, tc.value}
		code, _, stderr := abtest(t, env, args...)
		exit2OneLine(t, args, code, stderr, tc.want)
	}
	if _, err := os.Stat(env["BENCH_RESULTS_DIR"]); err == nil {
		t.Error("bad input created the results directory")
	}
}
