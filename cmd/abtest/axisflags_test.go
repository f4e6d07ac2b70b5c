package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pingFile is the shipped ping workload (it reads :batch), absolute.
func pingFile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "ping.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBisectAxisFlags: bisect takes the registry's axis flags as matrix
// does (--var, --condition, -R …ops reach its one configuration, shown
// by -n) and refuses a second value of any of them in one line.
func TestBisectAxisFlags(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	ping := pingFile(t)
	code, out, stderr := abtest(t, env, "-n", "bisect", "--good", "HEAD~1", "--bad", "HEAD", "-w", "file:"+ping, "-c", "2",
		"--var", "batch=10", "--condition", "xmin-holder", "-R", "2000ops")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "/c2/cpuall/r2000ops/:batch=10/cond=xmin-holder/") {
		t.Errorf("-n does not show the configuration of --var, --condition and -R:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--var", "batch=1,10"}, "bisect measures one configuration, one workload, one offered rate, one value of each axis: not [vars batch=1] and [vars batch=10]"},
		{[]string{"--var", "batch=1", "--condition", "none,xmin-holder"}, "not [] and [condition xmin-holder]"},
		{[]string{"--var", "batch=1", "-c", "1,2"}, "not [clients 1] and [clients 2]"},
		{[]string{"--var", "batch=1", "--set", "work_mem=1MB,2MB"}, "not [settings work_mem=1MB] and [settings work_mem=2MB]"},
		{[]string{"--var", "batch=<script>"}, "--var"},
		{[]string{"--var", "batch=1", "--condition", "file:/nonexistent/x.sql"}, "/nonexistent/x.sql"},
	} {
		args := append([]string{"bisect", "--good", "HEAD~1", "--bad", "HEAD", "-w", "file:" + ping}, tc.args...)
		code, _, stderr := abtest(t, env, args...)
		exit2OneLine(t, args, code, stderr, tc.want)
	}
}

// TestBenchAxisFlags: bench takes -c, -R and --var of the registry, one
// value each (--var reaches pgbench as -D); what needs a server abtest
// starts (--set, -C's server CPUs, --condition) and lists are refused in
// one line, before anything runs.
func TestBenchAxisFlags(t *testing.T) {
	t.Parallel()
	ping := pingFile(t)
	code, out, stderr := abtest(t, nil, "-n", "bench", "-w", "file:"+ping, "-c", "3", "-R", "100", "--var", "batch=10", "-d", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{" -c 3 ", " -R 100 ", "-D batch=10"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--condition", "xmin-holder"}, "--condition xmin-holder: bench takes one -c, -R and --var"},
		{[]string{"--set", "work_mem=64MB"}, "--set work_mem=64MB: bench takes"},
		{[]string{"--var", "batch=1,10"}, "--var batch=1,10: one value"},
		{[]string{"--var", "batch=1", "--var", "batch=2"}, "--var batch=2: one value"},
		{[]string{"--var", "nosuch=1"}, "nosuch"},
		{[]string{"-c", "1,16"}, "--clients 1,16: one value"},
		{[]string{"-c", "x"}, `-c "x"`},
		{[]string{"-R", "1000ops"}, "-R …ops: bench offers transactions"},
		{[]string{"-R", "fast"}, `-R "fast"`},
		{[]string{"--instructions", "--cluster", "pg", "--var", "batch=1"}, "--instructions with --var"},
	} {
		args := append([]string{"bench", "-d", "1", "-w", "file:" + ping, "-o", filepath.Join(dir, "out")}, tc.args...)
		code, _, stderr := abtest(t, nil, args...)
		exit2OneLine(t, args, code, stderr, tc.want)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("refused bench made its output directory")
	}
}
