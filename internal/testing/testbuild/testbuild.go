// Package testbuild gives tests PostgreSQL builds from source, shared
// between tests and between runs: worktrees and installs live under
// testenv.CacheRoot, so the build fingerprint skips what is built already
// and ccache makes the rest cheap. Each distinct tree is built once per
// machine, not once per test.
package testbuild

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/worktree"
)

// Env is a source repository with worktrees and installs in the cache.
type Env struct {
	Source    string
	Worktrees string
	Installs  string
	WT        *worktree.Manager
	B         *build.Builder
}

// PG15 returns the environment for the PostgreSQL 15 source repository.
func PG15(t testing.TB) *Env {
	t.Helper()
	return New(t, testenv.PG15Source(t))
}

// New returns the environment for source. It locks nothing: Build and
// Own lock the names a test uses.
func New(t testing.TB, source string) *Env {
	t.Helper()
	root := testenv.CacheRoot(t)
	run := &proc.Runner{}
	e := &Env{
		Source:    source,
		Worktrees: filepath.Join(root, "wt"),
		Installs:  filepath.Join(root, "install"),
	}
	seedCCache(t, e.Installs)
	e.WT = &worktree.Manager{Source: source, Root: e.Worktrees, Run: run}
	e.B = &build.Builder{WorktreesRoot: e.Worktrees, InstallRoot: e.Installs, Run: run}
	if name := testenv.ServerUser(t); name != "" {
		// As root, builds run as the server's account, as abtest's do.
		u, err := proc.LookupUser(name)
		if err != nil {
			t.Fatal(err)
		}
		e.B.User = u
	}
	return e
}

// Build makes worktree name at ref with patches and builds it, and
// holds name shared until the test ends, for the servers the test runs
// from the install (exclusive if the test owns it). Only a build that
// changes the install waits for the other tests that hold it.
func (e *Env) Build(t testing.TB, name, ref string, patches []string, o build.Options) *build.Result {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(e.Worktrees, name)
	use := hold(t, name, false)
	unlock := lockBuild(t, name)
	defer func() { unlock() }()
	prov := e.worktree(t, name, ref, patches)
	if !use.exclusive {
		current, err := e.B.Current(ctx, prov, dir, o)
		if err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		if !current {
			// Built anew: no other test's server may run from it
			// meanwhile. The build lock is let go while the test waits,
			// so that the locks are always taken in one order.
			unlock()
			hold(t, name, true)
			defer hold(t, name, false)
			unlock = lockBuild(t, name)
			prov = e.worktree(t, name, ref, patches)
		}
	}
	res, err := e.B.Build(ctx, prov, dir, o)
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	return res
}

// worktree makes worktree name at ref with patches, unless it is made.
func (e *Env) worktree(t testing.TB, name, ref string, patches []string) *worktree.Provenance {
	t.Helper()
	ctx := context.Background()
	if _, err := e.WT.Switch(ctx, name, ref); err != nil {
		t.Fatalf("worktree %s: %v", name, err)
	}
	if len(patches) > 0 {
		prov, err := e.WT.Info(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(prov.Patches) == 0 {
			if _, err := e.WT.Apply(ctx, name, patches); err != nil {
				t.Fatalf("patching %s: %v", name, err)
			}
		}
	}
	prov, err := e.WT.Info(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

// Base returns the release install of the PostgreSQL 15 tree's base
// commit, building it on first use, and holds it shared until the test
// ends.
func Base(t testing.TB) string {
	t.Helper()
	e := PG15(t)
	return e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release}).Info.Install
}
