package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testenv"
)

// TestBenchInstructionsBadInput: what an instruction count cannot honour
// (an open-loop rate, more than one client or thread, think time, a
// server by port, no abtest cluster) exits 2 with the reason, before
// anything runs.
func TestBenchInstructionsBadInput(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--instructions", "-w", "select1"}, "--cluster NAME"},
		{[]string{"bench", "--instructions", "--cluster", "pg", "-R", "100"}, "with -R"},
		{[]string{"bench", "--instructions", "--cluster", "pg", "-c", "4"}, "with -c 4"},
		{[]string{"bench", "--instructions", "--cluster", "pg", "-j", "2"}, "with -j 2"},
		{[]string{"bench", "--instructions", "--cluster", "pg", "-S", "5"}, "with -S"},
		{[]string{"bench", "--instructions", "--cluster", "pg", "-p", "5432"}, "-p and --host"},
	} {
		code, _, stderr := abtest(t, env, tc.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2, one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestBenchInstructions: bench --instructions on an abtest cluster
// (Debian's PostgreSQL 15) stops it, prints select1's instructions per
// transaction with the method and its top functions, and leaves it
// stopped.
func TestBenchInstructions(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	env, install := clusterEnv(t)
	if code, out, stderr := abtest(t, env, "switch", "-w", "pg", "--install", install, "-p", "auto"); code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	out := filepath.Join(testenv.SharedTempDir(t), "instr")
	code, stdout, stderr := abtest(t, env, "bench", "--instructions", "--cluster", "pg", "-w", "select1", "-t", "500", "-o", out)
	t.Logf("%s%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"select1", "instr/tx (valgrind-", "500 transactions", "top functions, instructions per transaction", "stopped cluster pg"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	st, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg")
	if err != nil {
		t.Fatal(err)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Error("the cluster runs after bench --instructions")
	}
}
