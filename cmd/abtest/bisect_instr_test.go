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
// from one instruction cell per arm.
func TestBisectInstructions(t *testing.T) {
	pg15 := testenv.PG15Source(t)
	testenv.RequireTools(t, "cc", "make", "valgrind")
	testenv.ServerUser(t)
	base := testenv.SharedTempDir(t)
	t.Cleanup(func() { stopAll(t, filepath.Join(base, "data")) })
	src := filepath.Join(base, "src")
	testenv.Git(t, base, "clone", "-q", pg15, src)
	good := testenv.Git(t, src, "rev-parse", "HEAD")
	patch, err := filepath.Abs("../../workload/testdata/slow_exec_simple_query.patch")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for i := 1; i <= 5; i++ {
		if i == 3 {
			testenv.Git(t, src, "apply", patch)
			testenv.Git(t, src, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-am", "slow exec_simple_query")
			want = testenv.Git(t, src, "rev-parse", "HEAD")
			continue
		}
		testenv.Commit(t, src, "harmless change "+string(rune('0'+i)), map[string]string{"README": strings.Repeat("x", i) + "\n"})
	}
	env := map[string]string{
		"PG_SOURCE_DIR":     src,
		"PG_WORKTREES_DIR":  filepath.Join(base, "wt"),
		"PG_INSTALL_DIR":    filepath.Join(base, "install"),
		"PG_DATA_DIR":       filepath.Join(base, "data"),
		"BENCH_RESULTS_DIR": filepath.Join(base, "results"),
	}
	out := filepath.Join(base, "bisect")
	start := time.Now()
	code, stdout, stderr := abtest(t, env, "bisect", "--good", good, "--bad", "HEAD", "-w", "select1", "-c", "1",
		"--metric", "instructions_per_tx", "-r", "1", "--max-repeats", "1", "-o", out)
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
	}
}
