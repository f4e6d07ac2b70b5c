package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/bisect"
	"github.com/pgabtest/abtest/internal/testenv"
)

// TestBisectInstructions: in a chain of five commits on the PostgreSQL
// 15 tree, the third adds a busy loop to exec_simple_query and the
// others change nothing compiled; bisect --metric instructions_per_tx
// with one repeat per step names exactly that commit, every step called
// from one instruction cell per arm. The loop adds 2 503 instructions
// to select1's 34 549 a transaction, exact at any N: 100 transactions a
// run, not 500, spare each of the 6 cells 3 × 400 transactions under
// valgrind (about 1 ms each).
func TestBisectInstructions(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	patch, err := filepath.Abs("../../workload/testdata/slow_exec_simple_query.patch")
	if err != nil {
		t.Fatal(err)
	}
	env, good, want := bisectChain(t, "instr", func(src string) {
		testenv.Git(t, src, "apply", patch)
		testenv.Git(t, src, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-am", "slow exec_simple_query")
	})
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "bisect")
	start := time.Now()
	code, stdout, stderr := abtest(t, env, "bisect", "--good", good, "--bad", "HEAD", "-w", "select1", "-c", "1",
		"--metric", "instructions_per_tx", "-r", "1", "--max-repeats", "1", "--instr-transactions", "100", "-o", out)
	t.Logf("bisect: %s wall\n%s", time.Since(start).Round(time.Second), stdout)
	if code != 0 {
		t.Fatalf("bisect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("bisect did not name %s", want)
	}
	var st bisect.State
	data, _ := os.ReadFile(filepath.Join(out, "bisect.json"))
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Steps {
		if s.Repeats != 1 || s.Verdict == bisect.Inconclusive {
			t.Errorf("step %+v: want one repeat and a verdict", s)
		}
		arms := map[string]int{}
		for _, r := range records(t, s.Dir) {
			t.Logf("step %s: cell %s: %.0f instructions/tx, %.1f s", s.SHA[:8], r.Cell, r.Metrics.Value("instructions_per_tx"), r.WallS)
			arms[r.Commit]++
			if r.Instr == nil || r.Instr.Transactions != 100 {
				t.Errorf("step %s: cell %s counted %+v, want 100 transactions (--instr-transactions)", s.SHA, r.Cell, r.Instr)
			}
		}
		if len(arms) != 3 || arms["good"] != 1 || arms["step"] != 1 || arms["bad"] != 1 {
			t.Errorf("step %s: cells per arm %v, want one of good, step and bad", s.SHA, arms)
		}
	}
}
