package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// TestStoreLocationsCreateNothing (issue 24 item 6): a store location of
// another scheme is refused, not made a relative SQLite file; readers
// (history, dashboard) never create a database; both exit 2 in one line.
func TestStoreLocationsCreateNothing(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	root := t.TempDir()
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	missing := filepath.Join(root, "nonexistent", "x.db")
	for _, args := range [][]string{
		{"history", "--metric", "tps", "--configuration", "select1/c16", "--store", "ftp://example/x"},
		{"store", "import", "--store", "ftp://example/x", root},
		{"history", "--metric", "tps", "--configuration", "select1/c16", "--store", missing},
		{"dashboard", "-o", filepath.Join(root, "site"), "--store", missing},
	} {
		code, _, stderr := abtest(t, env, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 in one line", args, code, stderr)
		}
	}
	for _, p := range []string{filepath.Join(cwd, "ftp:"), filepath.Dir(missing), filepath.Join(root, "site")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestDashboardKeepsTheUsersFiles (issue 24 item 6): dashboard -o of a
// directory holding the user's own index.html is refused and the file
// kept; a site dashboard wrote is rewritten.
func TestDashboardKeepsTheUsersFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	if code, _, stderr := abtest(t, env, append([]string{"store", "import"}, dirs...)...); code != 0 {
		t.Fatal(stderr)
	}
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "index.html"), []byte("my page"), 0o644)
	code, _, stderr := abtest(t, env, "dashboard", "-o", mine)
	if data, _ := os.ReadFile(filepath.Join(mine, "index.html")); code != 2 || string(data) != "my page" || !strings.Contains(stderr, mine) {
		t.Errorf("dashboard -o a directory of the user's: exit %d (%q), index.html %.20q; want exit 2, the file kept", code, stderr, data)
	}
	site := filepath.Join(root, "site")
	for i := range 2 {
		if code, _, stderr := abtest(t, env, "dashboard", "-o", site); code != 0 {
			t.Errorf("dashboard -o a site it wrote, time %d: exit %d %s", i+1, code, stderr)
		}
	}
}

// TestMatrixChecksTheStoreFirst (issue 24 item 6): a --store URL that
// does not parse fails before the first cell (exit 2, no cell run).
func TestMatrixChecksTheStoreFirst(t *testing.T) {
	t.Parallel()
	install := testenv.PGInstall(t)
	env, _ := setup(t)
	out := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	code, _, stderr := abtest(t, env, append(aaArgs(install, out, 1, 2), "--store", "postgres://bad host:x/db")...)
	if code != 2 || !strings.Contains(stderr, "does not parse") {
		t.Errorf("matrix --store 'postgres://bad host:x/db': exit %d after %s, %q; want exit 2 before any cell", code, time.Since(start), stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "cells.jsonl")); err == nil {
		t.Error("cells were run")
	}
}
