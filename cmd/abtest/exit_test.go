package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// A run that failed never exits 0 (issue 39 item 7): each way every
// cell of a run failed while abtest exited 0 is now exit 2 before the
// first cell (the preflight, or the plan's checks) or exit 3 after the
// run, in one line naming the cause. Each run is an A/A matrix of
// Debian's PostgreSQL 15 with one open-loop cell of 1 s per commit.

// exitArgs is that matrix into out, with extra flags.
func exitArgs(install, out string, extra ...string) []string {
	return append([]string{"matrix", "-k", "a=install:" + install + ",b=install:" + install, "-c", "1", "-w", "select1",
		"-r", "1", "-d", "1", "--warmup", "0", "-R", plumbingRate, "-o", out, "--sample-every", "1s"}, extra...)
}

// oneLine fails unless the run exited want with one line on stderr
// holding each of wants.
func oneLine(t *testing.T, code int, stdout, stderr string, want int, wants ...string) {
	t.Helper()
	ok := code == want && strings.Count(stderr, "\n") == 1
	for _, w := range wants {
		ok = ok && strings.Contains(stderr, w)
	}
	if !ok {
		t.Errorf("exit %d, stderr %q; want %d, one line with %q\nstdout:\n%s", code, stderr, want, wants, stdout)
	}
}

// TestPreflightCatchesBeforeTheFirstCell: a preload the server cannot
// load, initdb options initdb refuses, a setting the server will not
// start with, a data directory another account owns, a script pgbench
// aborts: exit 2 in one line with the server's, initdb's or pgbench's
// own words, before any cell (the directory the run made is gone, no
// record), and no server of the run left running.
func TestPreflightCatchesBeforeTheFirstCell(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	aborts := filepath.Join(testenv.SharedTempDir(t), "aborts.sql")
	os.WriteFile(aborts, []byte("SELECT no_such_column;\n"), 0o644)
	for _, tc := range []struct {
		name  string
		extra []string
		want  []string
		setup func(t *testing.T, env map[string]string)
	}{
		{"preload", []string{"--preload", "../x"}, []string{"preflight before the first cell", `could not access file "../x"`}, nil},
		{"initdb-opt", []string{"--initdb-opt=--bogus"}, []string{"preflight before the first cell", "unrecognized option '--bogus'"}, nil},
		{"ssl", []string{"--set", "ssl=on"}, []string{"preflight before the first cell", "ssl=on", "server.crt"}, nil},
		{"script", []string{"-w", "file:" + aborts}, []string{"preflight before the first cell", `pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR: column "no_such_column" does not exist`}, nil},
		{"datadir", nil, []string{"preflight before the first cell", "belongs to uid 65534"}, func(t *testing.T, env map[string]string) {
			testenv.Require(t, os.Geteuid() == 0, "root, for a data directory of nobody's")
			if err := os.MkdirAll(env["PG_DATA_DIR"], 0o755); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("a"))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := matrixEnv(t)
			if tc.setup != nil {
				tc.setup(t, env)
			}
			out := filepath.Join(env["BENCH_RESULTS_DIR"], "run")
			code, stdout, stderr := abtest(t, env, exitArgs(install, out, tc.extra...)...)
			oneLine(t, code, stdout, stderr, 2, tc.want...)
			if strings.Contains(stderr, "Run was aborted") || strings.Contains(stdout, "[1/2]") {
				t.Errorf("a cell ran, or the cause is pgbench's closing line:\n%s%s", stdout, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a run refused before its first cell left %s", out)
			}
			noServerLeft(t, env["PG_DATA_DIR"])
		})
	}
}

// TestVarsCheckedBeforeAnything: a --var no workload reads (pgbench
// ignores it silently) and a :name a workload reads that nothing sets
// are exit 2 in one line before anything is made, -n included.
func TestVarsCheckedBeforeAnything(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env := matrixEnv(t)
	batch := filepath.Join(testenv.SharedTempDir(t), "batch.sql")
	os.WriteFile(batch, []byte("SELECT :batch;\n"), 0o644)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "run")
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--var", "bacth=100"}, "--var bacth: no workload reads :bacth"},
		{[]string{"-w", "file:" + batch, "--var", "bacth=100"}, "(did you mean batch?)"},
		{[]string{"-w", "file:" + batch}, "workload batch reads :batch, which nothing sets: give --var batch=V"},
	} {
		for _, dry := range []bool{false, true} {
			args := exitArgs(install, out, tc.extra...)
			if dry {
				args = append([]string{"-n"}, args...)
			}
			code, stdout, stderr := abtest(t, env, args...)
			oneLine(t, code, stdout, stderr, 2, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run made %s", out)
	}
	// A variable only the setup SQL reads (${tick_ms}, README's pg_cron
	// run) is the setup SQL's, not a typo.
	setup := filepath.Join(testenv.SharedTempDir(t), "setup.sql")
	os.WriteFile(setup, []byte("SELECT ${tick_ms};\n"), 0o644)
	args := append([]string{"-n"}, exitArgs(install, out, "--var", "tick_ms=1,10", "--setup-sql", setup)...)
	if code, stdout, stderr := abtest(t, env, args...); code != 0 {
		t.Errorf("a --var the setup SQL reads: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestEveryCellFailedExits3: failures the preflight cannot see (a
// client other than the preflight's one aborts; a server killed as
// each cell starts) fail every cell: exit 3 in one line naming the
// first failure's cause, pgbench's own error line and not its "Run was
// aborted"; the report is written, and its summary states no
// detectable change from the zero usable cells.
func TestEveryCellFailedExits3(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	dir := testenv.SharedTempDir(t)
	second := filepath.Join(dir, "second.sql")
	os.WriteFile(second, []byte("\\if :client_id = 1\nSELECT no_such_column;\n\\endif\nSELECT 1;\n"), 0o644)
	kill := filepath.Join(dir, "kill.sh")
	// A condition whose start kills the server (as the server's account).
	os.WriteFile(kill, []byte("#!/bin/sh\n[ \"$1\" = start ] || exit 0\nd=$("+filepath.Join(install, "bin", "psql")+" -XAtc 'show data_directory') || exit 1\nkill -9 \"$(head -1 \"$d/postmaster.pid\")\"\n"), 0o755)
	for _, tc := range []struct {
		name  string
		extra []string
		want  []string
	}{
		{"client 1 aborts", []string{"-c", "2", "-w", "file:" + second}, []string{"every cell of commit a in file:", `the first: workload second: pgbench: exit status 2: pgbench: error: client 1 script 0 aborted in command 1 query 0: ERROR: column "no_such_column" does not exist`}},
		{"server killed", []string{"--condition", "file:" + kill}, []string{"every cell of commit a in select1/", "cannot connect"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := matrixEnv(t)
			out := filepath.Join(env["BENCH_RESULTS_DIR"], "run")
			code, stdout, stderr := abtest(t, env, exitArgs(install, out, tc.extra...)...)
			oneLine(t, code, stdout, stderr, 3, tc.want...)
			if strings.Contains(stderr, "Run was aborted") {
				t.Errorf("the cause is pgbench's closing line: %s", stderr)
			}
			for _, r := range records(t, out) {
				if r.Status != results.StatusFailed {
					t.Errorf("cell %s: %s, want failed", r.Cell, r.Status)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
				t.Errorf("no report: %v", err)
			}
			summary := strings.Join(strings.Fields(stdout), " ")
			if strings.Contains(summary, "could have detected only") || !strings.Contains(summary, "this run has no usable cells") {
				t.Errorf("the summary of zero usable cells:\n%s", stdout)
			}
			noServerLeft(t, env["PG_DATA_DIR"])
		})
	}
}

// TestUnwrittenReportExits3: a report that cannot be written (report.md
// planted as a directory: the error path of a full disk) is exit 3 in
// one line, the medians printed instead.
func TestUnwrittenReportExits3(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env := matrixEnv(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "run")
	if err := os.MkdirAll(filepath.Join(out, "report.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := abtest(t, env, exitArgs(install, out)...)
	oneLine(t, code, stdout, stderr, 3, "no report", filepath.Join(out, "report.md"))
	if !strings.Contains(stdout, "median TPS") {
		t.Errorf("no medians instead of the report:\n%s", stdout)
	}
}

// TestRelativePathsMadeAbsolute: -o res/X, relative to the working
// directory, made every cell fail (pgbench runs in the cell's directory
// and could not open its script, select1's included); it is made
// absolute when parsed, and the run is whole. So is a relative
// file:PATH workload.
func TestRelativePathsMadeAbsolute(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env := matrixEnv(t)
	wd := testenv.SharedTempDir(t)
	os.WriteFile(filepath.Join(wd, "one.sql"), []byte("SELECT 1;\n"), 0o644)
	args := exitArgs(install, "res/X", "-w", "select1,file:one.sql")
	code, stdout, stderr := abtestIn(t, env, wd, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	out := filepath.Join(wd, "res", "X")
	recs := records(t, out)
	if len(recs) != 4 {
		t.Errorf("%d cells in %s, want 4", len(recs), out)
	}
	for _, r := range recs {
		if r.Status != results.StatusOK {
			t.Errorf("cell %s: %s %s", r.Cell, r.Status, r.Error)
		}
	}
	plan, err := results.ReadPlan(out)
	if err != nil || plan.Options.Workloads[1] != "file:"+filepath.Join(wd, "one.sql") {
		t.Errorf("plan workloads %v (%v); want the file's absolute path", plan.Options.Workloads, err)
	}
}

// TestCustomSettingWarned: a custom setting whose prefix no loaded
// library defines (cron.* without pg_cron) is a placeholder PostgreSQL
// accepts: the run says so once and goes on; the preflight shows under
// -n.
func TestCustomSettingWarned(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env := matrixEnv(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "run")
	args := exitArgs(install, out, "--set", "cron.use_backgound_workers=on")
	code, stdout, _ := abtest(t, env, append([]string{"-n"}, args...)...)
	if code != 0 || !strings.Contains(stdout, "# preflight: select1 on build a with cron.use_backgound_workers=on") {
		t.Errorf("-n: exit %d, no preflight line:\n%s", code, stdout)
	}
	code, stdout, stderr := abtest(t, env, args...)
	if code != 0 || strings.Count(stdout, "--set cron.use_backgound_workers: no loaded library defines settings under cron.") != 1 {
		t.Errorf("exit %d, want 0 and one warning\n%s%s", code, stdout, stderr)
	}
}

// TestSmallExit2: item 8's numbers refused up front in one line:
// bench -p -1 (a port is 1 to 65535), analyze --threshold tps=1e308 or
// tps=-1 (a threshold is from 0, an exact counter's, to 50 %).
func TestSmallExit2(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-p", "-1", "-d", "1", "-w", "select1"}, "-p -1: want a port number from 1 to 65535"},
		{[]string{"bench", "-p", "65536"}, "-p 65536"},
		{[]string{"analyze", dir, "--threshold", "tps=1e308"}, "tps=1e308"},
		{[]string{"analyze", dir, "--threshold", "tps=-1"}, "tps=-1"},
	} {
		code, _, stderr := abtest(t, env, tc.args...)
		exit2OneLine(t, tc.args, code, stderr, tc.want)
	}
}

// TestMixedLoopsWarned: -R 0 beside open-loop rates says, before the
// run, that the closed-loop point answers another question (issue 40).
func TestMixedLoopsWarned(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env := batteryRoots(t)
	code, out, stderr := abtest(t, env, "-n", "matrix", "-k", "a=install:"+install+",b=install:"+install, "-w", "select1", "-R", "0,300", "-d", "1")
	if code != 0 || !strings.Contains(out+stderr, "-R 0,300: rate 0 is a closed loop") {
		t.Errorf("-R 0,300 -n: exit %d, no warning:\n%s%s", code, out, stderr)
	}
	code, out, stderr = abtest(t, env, "-n", "matrix", "-k", "a=install:"+install+",b=install:"+install, "-w", "select1", "-R", "300,600", "-d", "1")
	if code != 0 || strings.Contains(out+stderr, "closed loop") {
		t.Errorf("-R 300,600 -n: exit %d, warned:\n%s%s", code, out, stderr)
	}
}
