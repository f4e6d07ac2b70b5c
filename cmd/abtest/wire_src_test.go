package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// notePatch is a patch that adds a file: another build fingerprint for
// the same source, at the price of an install over the prefix (the
// matrix resets the worktree in place: make finds nothing to compile).
func notePatch(t *testing.T, n string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "note-"+n+".patch")
	body := "diff --git a/wire-note.txt b/wire-note.txt\nnew file mode 100644\n--- /dev/null\n+++ b/wire-note.txt\n@@ -0,0 +1 @@\n+" + n + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkMeasured asserts that every cell of label in dir measured the
// planned build: a server version, an executable that is not
// "(deleted)", and the plan's fingerprint (one, when built); it returns
// that fingerprint.
func checkMeasured(t *testing.T, dir, label string, built bool) string {
	t.Helper()
	plan, err := results.ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := plan.Commit(label)
	n := 0
	for _, r := range records(t, dir) {
		if r.Commit != label {
			continue
		}
		n++
		s := r.Server
		switch {
		case r.Status != results.StatusOK:
			t.Errorf("cell %s: %s: %s", r.Cell, r.Status, r.Error)
		case s == nil:
			t.Errorf("cell %s: no server recorded", r.Cell)
		case strings.HasSuffix(s.Exe, "(deleted)") || s.Exe == "":
			t.Errorf("cell %s measured %q", r.Cell, s.Exe)
		case s.Fingerprint != c.Fingerprint || built && s.Fingerprint == "":
			t.Errorf("cell %s: server fingerprint %q, plan's %q", r.Cell, s.Fingerprint, c.Fingerprint)
		case !strings.Contains(s.Version, "PostgreSQL 15"):
			t.Errorf("cell %s: version %q", r.Cell, s.Version)
		}
	}
	if n == 0 {
		t.Errorf("no cells of %s", label)
	}
	return c.Fingerprint
}

// TestMatrixMeasuresThePlannedBinary is issue 12's must-show (a) and
// (c) on PostgreSQL 15 from source: the user's cluster wire-x runs (from
// `switch`), then a matrix rebuilds wire-x in place with a patch, then
// another matrix rebuilds it in place without the patch, under the same
// label. Every cell records the server it measured, and it is the
// planned build, never the binary installed over; the user's cluster
// runs again afterwards, on the new binary, and the matrix's own cluster
// is stopped.
//
// The second matrix leaves wire-x at base, which the next run's switch
// finds built: a second patch there (abtest commits a patch at the time
// it applies it, so every application is a new build) made that switch
// rebuild too: three in-place builds where two prove the same, each
// 15–22 s at load 5–6 (make 5–7 s, make install 9–16 s) and 54 s at
// load 12. Alone at load 5.5–6.5: 72.5 s, 31.6 CPU-s with three; 61.6
// s, 29.8 CPU-s with two.
func TestMatrixMeasuresThePlannedBinary(t *testing.T) {
	t.Parallel()               // its proof is no TPS figure: it may share the CPUs
	testbuild.Base(t)          // the cached PostgreSQL 15 build
	testbuild.Own(t, "wire-x") // which abtest builds, twice
	cache := testenv.CacheRoot(t)
	base := testenv.SharedTempDir(t)
	env := map[string]string{
		"PG_SOURCE_DIR":     testenv.PG15Source(t),
		"PG_WORKTREES_DIR":  filepath.Join(cache, "wt"),
		"PG_INSTALL_DIR":    filepath.Join(cache, "install"),
		"PG_DATA_DIR":       filepath.Join(base, "data"),
		"BENCH_RESULTS_DIR": filepath.Join(base, "results"),
	}
	testpg.ManagerAt(t, env["PG_DATA_DIR"]) // stops the clusters left running
	for _, args := range [][]string{
		{"switch", "-k", "base", "--worktree", "wire-x"},
		{"switch", "--worktree", "wire-x", "-b", "release"},
		{"switch", "--worktree", "wire-x", "-p", "auto"},
	} {
		if code, out, stderr := abtest(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
	}
	user := filepath.Join(env["PG_DATA_DIR"], "wire-x")
	debian := testenv.PGInstall(t)
	var prints []string
	for i, k := range []string{"base+" + notePatch(t, "one"), "base"} {
		out := filepath.Join(env["BENCH_RESULTS_DIR"], fmt.Sprint(i+1))
		code, stdout, stderr := abtest(t, env, "matrix", "-k", "wire-x="+k+",deb=install:"+debian,
			"-c", "1", "-w", "select1", "-r", "1", "-d", "1", "--warmup", "0", "-o", out, "--sample-every", "1s")
		if code != 0 {
			t.Fatalf("matrix %d: exit %d\n%s\n%s", i+1, code, stdout, stderr)
		}
		prints = append(prints, checkMeasured(t, out, "wire-x", true))
		checkMeasured(t, out, "deb", false)
		pid, running := cluster.PID(user)
		if !running {
			t.Fatalf("matrix %d left the user's cluster wire-x stopped:\n%s", i+1, stdout)
		}
		if exe, _ := procfs.Exe(pid); strings.HasSuffix(exe, "(deleted)") {
			t.Errorf("the user's cluster runs %s after matrix %d", exe, i+1)
		}
		if _, running := cluster.PID(filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("wire-x"))); running {
			t.Errorf("matrix %d left its own cluster running", i+1)
		}
	}
	if prints[0] == prints[1] {
		t.Errorf("two builds, one fingerprint %s", prints[0])
	}
}
