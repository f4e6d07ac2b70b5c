package main

import (
	"strings"
	"testing"
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
