package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// bisectChain makes, or finds made, a clone of the PostgreSQL 15
// source with five commits added to its head: the third is made by
// change (run in the clone), the others are empty. It returns the
// environment of an abtest run on the clone, the head it started from
// (good) and the third commit's sha.
//
// Builds go to the shared install root of testbuild, where ccache and
// the configure cache live too: git's dates are pinned, so the chain's
// shas, and with them the build fingerprints, are the same in every run
// and in both bisect tests (base and the first two commits). A second
// run builds nothing; a chain built in a root of its own compiled
// PostgreSQL cold, 9 min of TestBisectInstructions' 18 at load 13.
// The two tests run side by side: abtest's own build lock (one per
// install name) makes the second that needs b-<sha> wait for the first
// and find it built; a test lock around the whole of each made
// TestBisectInstructions wait 150–200 s for TestBisectDemoPatch.
//
// The harmless commits are empty, so the chain has two trees, the
// good one and the changed one: bisect (build.Options.ReuseFrom "b-")
// builds each once, and the two chains share the good one, three
// builds in all where README edits made six b-<sha> installs of 49 s
// and 62 CPU-s each (ccache hits, alone), one after another: on a
// fresh machine the tests took 617 s and 575 s (s14a), 415 s and 252 s
// with the empty commits (s15a). Both trees are testbuild's too
// (pg15-base and the patched build): with --reuse (reuseBuilds) the
// bisects build none.
//
// The clone and its worktrees are kept too, in the cache root under
// bisect-NAME (the test owns NAME while it runs): a new clone and a
// worktree checked out for each of the four commits a bisect measures
// cost every run five checkouts of the tree (9 s of wall time each for
// a clone at load 6, 2.3 CPU-seconds) and their removal. Both tests side
// by side at load 4.5–6: 146 s and 173 CPU-seconds made anew, 126 s and
// 157 kept (with TestBisectInstructions' 100 transactions a run).
func bisectChain(t *testing.T, name string, change func(src string)) (env map[string]string, good, want string) {
	t.Helper()
	testenv.RequireTools(t, "cc", "make")
	e := testbuild.PG15(t)
	testbuild.Own(t, "bisect-"+name)
	kept := filepath.Join(testenv.CacheRoot(t), "bisect-"+name)
	src := filepath.Join(kept, "src")
	good = testenv.Git(t, e.Source, "rev-parse", "HEAD")
	marker := filepath.Join(kept, "chain-empty") // not "chain": its chains had README edits
	if data, err := os.ReadFile(marker); err == nil {
		f := strings.Fields(string(data))
		if head, err := testenv.GitInput(src, "", "rev-parse", "HEAD"); err == nil && len(f) == 3 && f[0] == good && f[2] == head {
			want = f[1]
		}
	}
	if want == "" {
		// None kept, or of another source head: made anew, worktrees
		// (of the old clone) and all.
		if err := os.RemoveAll(kept); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(kept, 0o755); err != nil {
			t.Fatal(err)
		}
		testenv.Git(t, kept, "clone", "-q", e.Source, src)
		for i := 1; i <= 5; i++ {
			if i == 3 {
				change(src)
				want = testenv.Git(t, src, "rev-parse", "HEAD")
				continue
			}
			testenv.Commit(t, src, "harmless change "+string(rune('0'+i)), nil)
		}
		head := testenv.Git(t, src, "rev-parse", "HEAD")
		if err := os.WriteFile(marker, []byte(good+" "+want+" "+head+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := testenv.SharedTempDir(t)
	testpg.ManagerAt(t, filepath.Join(base, "data")) // stops the clusters left running
	return map[string]string{
		"PG_SOURCE_DIR":     src,
		"PG_WORKTREES_DIR":  filepath.Join(kept, "wt"),
		"PG_INSTALL_DIR":    e.Installs,
		"PG_DATA_DIR":       filepath.Join(base, "data"),
		"BENCH_RESULTS_DIR": filepath.Join(base, "results"),
	}, good, want
}

// reuseBuilds builds (or finds built) testbuild's release installs of a
// bisect chain's two trees, pg15-base and changed (the base with
// patch), in that order, and holds them shared while the test runs: the
// test's bisect is given them with --reuse, so that on a fresh machine
// its b-<sha> steps are measured on these instead of building the same
// trees again (two ccache-hit builds of 62 CPU-seconds each per chain,
// three in all, where the suite is CPU-bound). It returns the --reuse
// flags.
func reuseBuilds(t *testing.T, changed, patch string) []string {
	t.Helper()
	e := testbuild.PG15(t)
	e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release})
	e.Build(t, changed, "base", []string{patch}, build.Options{Type: build.Release})
	return []string{"--reuse", "pg15-base", "--reuse", changed}
}
