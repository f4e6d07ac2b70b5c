package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestFlagGapsExit2: every bad value is refused up front with one line
// and exit 2, and nothing is created.
func TestFlagGapsExit2(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	aa := "a=install:/nonexistent,b=install:/nonexistent"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--sample-every", "-1s"}, "--sample-every"},
		{[]string{"bench", "-d", "0"}, "-d 0"},
		{[]string{"bench", "-t", "-1"}, "-t -1"},
		{[]string{"bench", "-d", "99999999999"}, "-d 99999999999"},
		{[]string{"bench", "-p", "70000"}, "-p 70000"},
		{[]string{"bench", "-w", "select1,select1"}, "select1 given twice"},
		{[]string{"matrix", "-k", aa, "-c", "2,2"}, "client count 2 given twice"},
		{[]string{"matrix", "-k", aa, "-w", "select1,select1"}, "select1 given twice"},
		{[]string{"matrix", "-k", aa, "--warmup", "-1"}, "--warmup -1"},
		{[]string{"matrix", "-k", aa, "-d", "99999999999"}, "-d 99999999999"},
		{[]string{"matrix", "-k", aa, "--set", "work_mem=1MB,4MB", "--set", "work_mem=8MB"}, "work_mem given twice"},
		{[]string{"matrix", "-k", aa, "--set", "port=5433"}, "abtest sets port"},
		{[]string{"matrix", "-k", aa, "--set", "unix_socket_directories=/tmp"}, "abtest sets unix_socket_directories"},
		{[]string{"matrix", "-k", aa, "--set", "work_mem=1MB,1MB"}, "1MB given twice"},
		{[]string{"matrix", "-k", aa, "-c", "1,64", "--set", "max_connections=100,50"}, "-c 64 needs at least 69"},
		{[]string{"matrix", "-k", aa, "-r", "100000000"}, "400000000 cells"},
		{[]string{"-n", "matrix", "-k", aa, "-r", "100000000"}, "above the limit of 100000 cells"},
		{[]string{"matrix", "-k", aa, "--until-decided", "-r", "3", "--max-repeats", "2"}, "--max-repeats 2: below -r 3"},
		{[]string{"matrix", "-k", aa, "--until-decided", "--budget", "10s"}, "--budget 10s"},
		{[]string{"matrix", "-k", aa, "--max-repeats", "4"}, "go with --until-decided"},
		{[]string{"matrix", "-k", aa, "--sample-every", "0s"}, "--sample-every"},
		{[]string{"matrix", "-k", aa, "--allow-unknown"}, "--allow-unknown goes with --fail-on-regression"},
		{[]string{"matrix", "-k", aa, "--instructions-only", "-c", "4"}, "instruction cells run one client"},
		{[]string{"matrix", "-k", aa, "--instructions-only", "-C", "2"}, "-C with --instructions-only"},
		{[]string{"matrix", "-k", aa, "--instructions-only", "--until-decided"}, "--until-decided with --instructions-only"},
		{[]string{"matrix", "-k", aa, "--instructions", "--instr-transactions", "-5"}, "--instr-transactions -5: want 1 to 1000000"},
		{[]string{"matrix", "-k", aa, "--instructions", "--instr-transactions", "0"}, "--instr-transactions 0: want 1 to 1000000"},
		{[]string{"bisect", "--good", "HEAD~1", "--bad", "HEAD", "--metric", "instructions_per_tx", "--instr-transactions", "2000000"}, "--instr-transactions 2000000"},
		{[]string{"bisect", "--good", "HEAD~1", "--bad", "HEAD", "--reuse", ""}, `reuse "": give the start of the names`},
		{[]string{"bisect", "--good", "HEAD~1", "--bad", "HEAD", "--reuse", "pg-", "--reuse", "../i"}, `reuse "../i"`},
		{[]string{"analyze", "--allow-unknown", "/nonexistent"}, "--allow-unknown goes with --fail-on-regression"},
	} {
		code, _, stderr := abtest(t, env, tc.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2, one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(env["BENCH_RESULTS_DIR"]); err == nil {
		t.Error("bad input created the results directory")
	}
}

// TestSettingsAxisOneFlag: --set GUC=V1,V2 is one axis with two values
// (the flag library does not split it), shown by -n; a comma inside a
// value is escaped in the cell id (%2C).
func TestSettingsAxisOneFlag(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	code, out, stderr := abtest(t, env, "-n", "matrix", "-k", "a=install:/x,b=install:/x", "-w", "select1", "-r", "1",
		"--set", "work_mem=1MB,4MB", "--set", `search_path="a, b",c`, "--until-decided", "--max-repeats", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"search_path=a%2C b/work_mem=1MB/r1/a", "search_path=c/work_mem=4MB/r1/", "# plan: 8 cells", "# until decided: at most 24 cells"} {
		if !strings.Contains(out, want) {
			t.Errorf("-n output lacks %q:\n%s", want, out)
		}
	}
}

// TestInstructionsOnlyPlan: --instructions-only plans one instruction
// cell per commit and workload and no timed cell, gated on
// instructions_per_tx at one repeat whatever -r says, and its estimate
// counts no timed window.
func TestInstructionsOnlyPlan(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	code, out, stderr := abtest(t, env, "-n", "matrix", "-k", "a=install:/x,b=install:/x", "-w", "select1,churn", "-r", "8", "--instructions-only", "--fail-on-regression")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cells []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && !strings.HasPrefix(l, "#") {
			cells = append(cells, f[1])
		}
	}
	want := []string{"select1/instr/cpuall/pgss.max=5000/r1/a", "select1/instr/cpuall/pgss.max=5000/r1/b", "churn/instr/cpuall/pgss.max=5000/r1/b", "churn/instr/cpuall/pgss.max=5000/r1/a"}
	if !slices.Equal(cells, want) {
		t.Errorf("cells %q, want %q\n%s", cells, want, out)
	}
	for _, w := range []string{"# gate: instructions_per_tx in 2 configurations, compared exactly within its band: one repeat answers", "+ cells 52s (about"} {
		if !strings.Contains(out, w) {
			t.Errorf("-n output lacks %q:\n%s", w, out)
		}
	}
}

// TestMatrixDryRunStatesReach: -n says after the plan what the gate can
// detect at its repeats; with --fail-on-regression a plan below r_min
// is exit 2 in one line naming it, and so is a --primary the plan does
// not define or that has no direction. --primary takes a comma list.
func TestMatrixDryRunStatesReach(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	args := []string{"-n", "matrix", "-k", "a=install:/x,b=install:/x", "-w", "select1", "-c", "1,16", "-r", "2"}
	code, out, stderr := abtest(t, env, args...)
	if code != 0 || !strings.Contains(out, "\n# gate: tps in 2 configurations at 2 repeats (reachable from r ≥ 3)") {
		t.Errorf("-n -r 2: exit %d, %s; want 0 and the gate line\n%s", code, stderr, out)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--fail-on-regression"}, "r ≥ 3"},
		{[]string{"--fail-on-regression", "--allow-unknown"}, "r ≥ 3"},
		{[]string{"--primary", "tps,nosuch"}, "--primary nosuch: unknown metric"},
		{[]string{"--primary", "pgss_hot"}, "--primary pgss_hot: a descriptive metric"},
	} {
		code, _, stderr := abtest(t, env, append(args, tc.flags...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("-n -r 2 %v: exit %d, stderr %q; want 2, one line with %q", tc.flags, code, stderr, tc.want)
		}
	}
	code, out, stderr = abtest(t, env, append(args[:len(args)-1], "3", "--fail-on-regression", "--primary", "latency_p95_ms,tps", "--primary", "server_cpu_s_per_tx")...)
	for _, m := range []string{"latency_p95_ms", "tps", "server_cpu_s_per_tx"} {
		if !strings.Contains(out, "\n# gate: "+m+" in 2 configurations at 3 repeats") {
			t.Errorf("-r 3 --fail-on-regression --primary: exit %d, %s; no gate line for %s\n%s", code, stderr, m, out)
		}
	}
	if _, err := os.Stat(env["BENCH_RESULTS_DIR"]); err == nil {
		t.Error("a dry run created the results directory")
	}
}

// TestAnalyzeOutputNeverOverwritesResults: -o may not name plan.json,
// cells.jsonl or anything under cells/, nor a directory that does not
// exist; none of those is created or changed.
func TestAnalyzeOutputNeverOverwritesResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := []byte(`{"version":2,"commits":[{"label":"a","build":"a"},{"label":"b","build":"b"}],"baseline":"a"}`)
	os.WriteFile(filepath.Join(dir, results.PlanFile), plan, 0o644)
	os.MkdirAll(filepath.Join(dir, "cells", "x"), 0o755)
	for _, out := range []string{
		filepath.Join(dir, results.PlanFile), filepath.Join(dir, results.CellsFile), filepath.Join(dir, "cells", "x", "r.md"),
		filepath.Join(dir, "nonexistent", "dir", "r.md"), dir,
	} {
		code, _, stderr := abtest(t, nil, "analyze", dir, "-o", out)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("-o %s: exit %d, %q; want 2 and one line", out, code, stderr)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, results.PlanFile)); string(data) != string(plan) {
		t.Error("plan.json changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); err == nil {
		t.Error("analyze -o created a parent directory")
	}
}
