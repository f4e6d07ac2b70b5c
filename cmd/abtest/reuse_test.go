package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/demo"
)

// TestDemoReuseHintRuns: the matrix command the demo prints at its end,
// run verbatim (as -n) with the environment it prints, plans the
// demo's two builds by their names (demo-base, demo-patch) with the
// patch the demo wrote.
func TestDemoReuseHintRuns(t *testing.T) {
	t.Parallel()
	_, repo := setup(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, demo.PatchName), []byte(aPatch), 0o644)
	c := demo.Defaults("/nonexistent-home", root)
	c.SourceDir = repo
	env := map[string]string{}
	var matrix []string
	for _, l := range strings.Split(demo.Reuse(&c, root), "\n") {
		if kv, ok := strings.CutPrefix(l, "  export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if strings.HasPrefix(l, "  abtest matrix ") {
			matrix = shellWords(strings.TrimSpace(l), env)
		}
	}
	if len(env) != 5 || len(matrix) < 4 {
		t.Fatalf("no exports or no matrix command in the hint:\n%s", demo.Reuse(&c, root))
	}
	code, out, stderr := abtest(t, env, append([]string{"-n"}, matrix[1:]...)...)
	if code != 0 || !strings.Contains(out, "# commit demo-base: HEAD ") || !strings.Contains(out, "+ "+demo.PatchName+" (build demo-patch)") {
		t.Errorf("%q: exit %d, %s\n%s", matrix, code, stderr, out)
	}
	if _, err := os.Stat(c.ResultsDir); err == nil {
		t.Error("the dry run created the results directory")
	}
}
