package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// abtest runs the CLI in-process with env as its whole environment and
// returns its exit code, stdout and stderr.
//
// Tests that time nothing (help, flags, bad input, stores, formats,
// clusters, instruction counts) call t.Parallel: Go runs them after the
// sequential ones, two at a time (-parallel is GOMAXPROCS), so they
// never overlap a test that measures TPS, and the TPS tests, sequential,
// never overlap each other.
func abtest(t testing.TB, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	return abtestIn(t, env, t.TempDir(), args...)
}

// abtestIn is abtest run in the working directory wd (Env.Getwd): the
// directory relative paths of its flags are taken against.
func abtestIn(t testing.TB, env map[string]string, wd string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := Main(context.Background(), append([]string{"abtest"}, args...), &Env{
		Stdout:  &stdout,
		Stderr:  &stderr,
		Getenv:  func(k string) string { return env[k] },
		Getwd:   func() (string, error) { return wd, nil },
		Home:    "/nonexistent-home",
		Now:     time.Now,
		Geteuid: os.Geteuid,
	})
	return code, stdout.String(), stderr.String()
}

func setup(t testing.TB) (map[string]string, string) {
	repo := testenv.NewRepo(t, map[string]string{"a.c": "int a;\n"})
	testenv.Commit(t, repo, "second", map[string]string{"a.c": "int a = 2;\n"})
	root := filepath.Join(t.TempDir(), "wt")
	return map[string]string{"PG_SOURCE_DIR": repo, "PG_WORKTREES_DIR": root}, repo
}

func TestUnknownRefExits2AndCreatesNothing(t *testing.T) {
	t.Parallel()
	env, repo := setup(t)
	exclude, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	code, stdout, stderr := abtest(t, env, "switch", "-k", "nosuchref", "--worktree", "x")
	if code != 2 {
		t.Errorf("exit = %d, want 2", code)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `"nosuchref"`) || !strings.Contains(stderr, repo) {
		t.Errorf("stderr = %q, want one line naming the ref and %s", stderr, repo)
	}
	if stdout != "" {
		t.Errorf("stdout = %q", stdout)
	}
	if _, err := os.Stat(env["PG_WORKTREES_DIR"]); err == nil {
		t.Error("the worktrees root was created")
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude")); string(after) != string(exclude) {
		t.Error("info/exclude changed")
	}
	if got := testenv.Git(t, repo, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Errorf("worktrees registered: %s", got)
	}
}

func TestSourceErrorsSayWhichSetting(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope")
	notRepo := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"PG_SOURCE_DIR": missing}, nil, "environment variable PG_SOURCE_DIR"},
		{map[string]string{"PG_SOURCE_DIR": notRepo}, nil, "environment variable PG_SOURCE_DIR"},
		{nil, []string{"--source", notRepo}, "flag --source"},
		{nil, nil, "set PG_SOURCE_DIR"},
	} {
		env := map[string]string{"PG_WORKTREES_DIR": filepath.Join(t.TempDir(), "wt")}
		for k, v := range tc.env {
			env[k] = v
		}
		args := append([]string{"switch", "-k", "HEAD", "--worktree", "x"}, tc.args...)
		code, _, stderr := abtest(t, env, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 and one line naming %q", tc.env, tc.args, code, stderr, tc.want)
		}
	}
}

func TestSwitchPatchStatusRemove(t *testing.T) {
	t.Parallel()
	env, repo := setup(t)
	// switch says what it did on stderr (its stdout is for eval).
	code, out, stderr := abtest(t, env, "switch", "-k", "HEAD~1", "--worktree", "lru")
	if code != 0 || !strings.Contains(stderr, "worktree lru: created at") || out != "" {
		t.Fatalf("create: %d %q %q", code, out, stderr)
	}
	patch := filepath.Join(t.TempDir(), "fix.diff")
	os.WriteFile(patch, []byte("--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a;\n+int a = 9;\n"), 0o644)
	code, out, stderr = abtest(t, env, "switch", "--worktree", "lru", "--patch", patch)
	if code != 0 || !strings.Contains(stderr, "applied "+patch) {
		t.Fatalf("patch: %d %q %q", code, out, stderr)
	}
	code, out, _ = abtest(t, env, "status", "--json")
	var st Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
	base := testenv.Git(t, repo, "rev-parse", "HEAD~1")
	if len(st.Worktrees) != 1 || st.Worktrees[0].SHA != base || len(st.Worktrees[0].Patches) != 1 || st.Worktrees[0].Dirty {
		t.Errorf("status = %+v", st.Worktrees[0])
	}
	os.WriteFile(filepath.Join(env["PG_WORKTREES_DIR"], "lru", "a.c"), []byte("edited\n"), 0o644)
	_, out, _ = abtest(t, env, "status")
	if !strings.Contains(out, "lru") || !strings.Contains(out, "fix.diff") || !strings.Contains(out, "yes") {
		t.Errorf("status table:\n%s", out)
	}

	code, out, _ = abtest(t, env, "-n", "switch", "--remove", "--worktree", "lru")
	if code != 0 || !strings.Contains(out, "worktree remove --force --force") {
		t.Errorf("dry-run remove: %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(env["PG_WORKTREES_DIR"], "lru")); err != nil {
		t.Fatal("dry-run removed the worktree")
	}
	code, _, stderr = abtest(t, env, "switch", "--remove", "--worktree", "lru")
	if code != 0 || !strings.Contains(stderr, "removed") {
		t.Errorf("remove: %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(env["PG_WORKTREES_DIR"], "lru")); err == nil {
		t.Error("worktree still there")
	}
}

func TestBadUsageExits2(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	for _, args := range [][]string{
		{"switch", "-k", "HEAD", "--worktree", "../x"},
		{"switch", "-k", "HEAD", "--worktree", "a/b"},
		{"switch", "-k", "HEAD"},
		{"switch", "--worktree", "x"},
		{"switch", "--worktree", "x", "--remove", "-k", "HEAD"},
		{"switch", "--no-such-flag"},
		{"switch", "--worktree", "nothere", "--patch", "/dev/null"},
	} {
		code, _, stderr := abtest(t, env, args...)
		if code != 2 || !strings.HasPrefix(stderr, "abtest: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	if _, err := os.Stat(env["PG_WORKTREES_DIR"]); err == nil {
		t.Error("bad usage created the worktrees root")
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := abtest(t, nil, "--version")
	if code != 0 || !strings.Contains(out, version) {
		t.Errorf("--version: %d %q", code, out)
	}
}

func TestBuildBadInput(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["PG_INSTALL_DIR"] = filepath.Join(t.TempDir(), "install")
	code, _, stderr := abtest(t, env, "switch", "--worktree", "x", "-b", "fast")
	if code != 2 || !strings.Contains(stderr, "release, debug, debug_noassert") {
		t.Errorf("unknown build type: %d %q", code, stderr)
	}
	code, _, stderr = abtest(t, env, "switch", "--worktree", "nothere", "-b", "release")
	if code != 2 || !strings.Contains(stderr, "abtest switch nothere -k COMMIT") {
		t.Errorf("missing worktree: %d %q", code, stderr)
	}
	code, _, stderr = abtest(t, env, "switch", "--worktree", "x", "--force")
	if code != 2 || !strings.Contains(stderr, "-b TYPE") {
		t.Errorf("--force without -b: %d %q", code, stderr)
	}
	if _, err := os.Stat(env["PG_INSTALL_DIR"]); err == nil {
		t.Error("bad input created the install root")
	}
}

// TestPerfReportCompareView runs the perf subcommands on profiles made
// from a captured perf script.
func TestPerfReportCompareView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, cur := filepath.Join(dir, "base.pb.gz"), filepath.Join(dir, "new.pb.gz")
	writeTestProfile(t, base, map[string]int{"entry_dealloc": 40, "exec_simple_query": 60})
	writeTestProfile(t, cur, map[string]int{"entry_dealloc": 10, "exec_simple_query": 70})
	code, out, stderr := abtest(t, nil, "perf", "report", base, "--top", "3")
	if code != 0 || !strings.Contains(out, "exec_simple_query") || !strings.Contains(out, "60.00%") {
		t.Errorf("perf report: %d %q %q", code, out, stderr)
	}
	diff := filepath.Join(dir, "diff.pb.gz")
	code, out, stderr = abtest(t, nil, "perf", "compare", base, cur, "--per-tx", "100,100", "-o", diff)
	if code != 0 || !strings.Contains(out, "entry_dealloc") || !strings.Contains(out, "-300.0") {
		t.Errorf("perf compare: %d %q %q", code, out, stderr)
	}
	if _, err := os.Stat(diff); err != nil {
		t.Error(err)
	}
	code, _, stderr = abtest(t, nil, "perf", "compare", base, cur, "--per-tx", "x")
	if code != 2 {
		t.Errorf("bad --per-tx: %d %q", code, stderr)
	}
	code, _, _ = abtest(t, nil, "perf", "view", base, "--http", "0.0.0.0:0")
	if code != 2 {
		t.Errorf("view on a public address: exit %d, want 2", code)
	}
	// The web UI: pprof's handlers answer on the flame graph page.
	served := false
	err := viewForTest(t, diff, base, func(h http.Handler) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/flamegraph", nil))
		served = rec.Code == 200 && strings.Contains(rec.Body.String(), "exec_simple_query")
	})
	if err != nil || !served {
		t.Errorf("perf view: served=%v err=%v", served, err)
	}
}
