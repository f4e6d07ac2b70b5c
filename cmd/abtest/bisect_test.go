package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/bisect"
	"github.com/pgabtest/abtest/internal/demo"
	"github.com/pgabtest/abtest/internal/testenv"
)

// TestBisectDemoPatch: in a chain of six commits on the PostgreSQL 15
// tree, the third applies the demo patch and the others change nothing
// that matters; bisect on churn's pgss_deallocs names exactly that commit
// after at most ⌈log2 6⌉ + 1 = 4 steps.
func TestBisectDemoPatch(t *testing.T) {
	pg15 := testenv.PG15Source(t)
	testenv.RequireTools(t, "cc", "make")
	testenv.PGInstall(t)
	testenv.ServerUser(t)
	base := testenv.SharedTempDir(t)
	t.Cleanup(func() { stopAll(t, filepath.Join(base, "data")) })
	src := filepath.Join(base, "src")
	testenv.Git(t, base, "clone", "-q", pg15, src)
	good := testenv.Git(t, src, "rev-parse", "HEAD")
	patch := filepath.Join(base, demo.PatchName)
	os.WriteFile(patch, demo.Patch, 0o644)
	var want string
	for i := 1; i <= 6; i++ {
		if i == 3 {
			testenv.Git(t, src, "-c", "user.name=T", "-c", "user.email=t@e", "am", "-q", patch)
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
	args := []string{"bisect", "--good", good, "--bad", "HEAD", "-w", "churn", "-c", "2", "-m", "1000", "--metric", "pgss_deallocs",
		"-r", "8", "--max-repeats", "8", "-d", "1", "--warmup", "1", "-o", out}
	code, stdout, _ := abtest(t, env, append([]string{"-n"}, args...)...)
	if code != 0 || !strings.Contains(stdout, "6 first-parent commits") {
		t.Errorf("bisect -n: %d\n%s", code, stdout)
	}
	code, stdout, stderr := abtest(t, env, args...)
	if code != 0 {
		t.Fatalf("bisect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("bisect did not name %s:\n%s", want, stdout)
	}
	var st bisect.State
	data, _ := os.ReadFile(filepath.Join(out, "bisect.json"))
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	for _, s := range st.Steps {
		built[s.SHA] = true
	}
	if len(built) > 4 {
		t.Errorf("%d steps built, want at most 4", len(built))
	}
	// Resuming a finished bisect runs nothing and gives the same answer.
	code, stdout, _ = abtest(t, env, args...)
	if code != 0 || !strings.Contains(stdout, "resuming") || !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("resume: %d\n%s", code, stdout)
	}
}
