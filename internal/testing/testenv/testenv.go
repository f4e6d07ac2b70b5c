// Package testenv holds helpers for abtest's tests: real git repositories
// in temporary directories, and the rule for prerequisites.
//
// A test that needs something the machine may lack (PostgreSQL binaries,
// perf, a source tree) calls Require: it skips the test, unless
// ABTEST_REQUIRE=1 is set (as .ci/run does), where a missing prerequisite
// fails it, so that CI can never pass by skipping.
package testenv

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/safefile"
)

// Require skips t (or fails it under ABTEST_REQUIRE=1) when ok is false.
func Require(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("ABTEST_REQUIRE") == "1" {
		t.Fatalf("prerequisite missing (ABTEST_REQUIRE=1): "+format, args...)
	}
	t.Skipf("prerequisite missing: "+format, args...)
}

// gitEnv pins everything that would make commits differ between runs.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent",
}

// Git runs git in dir and returns its trimmed stdout, failing t on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitInput(dir, "", args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitInput runs git in dir with stdin and returns its trimmed stdout.
func GitInput(dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), gitEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &gitError{err: err, stderr: stderr.String()}
	}
	return strings.TrimSpace(string(out)), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// NewRepo makes a git repository in a new temporary directory with one
// commit of files (path → content) and returns its path.
func NewRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "master")
	Commit(t, dir, "initial", files)
	return dir
}

// Commit writes files into repo and commits them with message; it returns
// the new commit's sha.
func Commit(t testing.TB, repo, message string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(repo, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, repo, "add", "-A")
	Git(t, repo, "commit", "-q", "--allow-empty", "-m", message)
	return Git(t, repo, "rev-parse", "HEAD")
}

// PGInstall returns a prebuilt PostgreSQL installation for tests:
// $ABTEST_PG_INSTALL, or Debian's postgresql-15 under
// /usr/lib/postgresql/15.
func PGInstall(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ABTEST_PG_INSTALL")
	if dir == "" {
		dir = "/usr/lib/postgresql/15"
	}
	_, err := os.Stat(filepath.Join(dir, "bin", "postgres"))
	Require(t, err == nil, "PostgreSQL binaries in %s (apt-get install postgresql-15, or set ABTEST_PG_INSTALL)", dir)
	return dir
}

// ServerUser returns the account tests run PostgreSQL as: "" when the
// tests are not root, else "postgres".
func ServerUser(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	_, err := exec.LookPath("runuser")
	Require(t, err == nil, "runuser")
	out, err := exec.Command("id", "-u", "postgres").Output()
	Require(t, err == nil && len(out) > 0, "a postgres account to run the server as root: %v", err)
	return "postgres"
}

// SharedTempDir returns a new temporary directory that the unprivileged
// server account can enter (t.TempDir is private to root when the tests
// run as root), removed when the test ends.
func SharedTempDir(t testing.TB) string {
	t.Helper()
	dir, err := MkdirTemp("abtest-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// MkdirTemp makes a new directory under os.TempDir named prefix and ten
// random digits, mode 0700: names of one length (safefile.MkdirTemp
// says why).
func MkdirTemp(prefix string) (string, error) {
	return safefile.MkdirTemp(os.TempDir(), prefix)
}

// CacheRoot returns the directory where tests keep what is slow to make
// and safe to reuse between runs: source trees, worktrees and builds
// ($ABTEST_TEST_CACHE; else /var/tmp/abtest-test for root, whose home the
// server account cannot enter, and ~/.cache/abtest-test otherwise).
func CacheRoot(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ABTEST_TEST_CACHE")
	if dir == "" {
		if os.Geteuid() == 0 {
			dir = "/var/tmp/abtest-test"
		} else {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "abtest-test")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PG15Source returns the PostgreSQL 15 source repository that
// scripts/pg-source.sh makes: $ABTEST_PG15_SOURCE, or
// ~/.cache/abtest-test/pg15-src.
func PG15Source(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ABTEST_PG15_SOURCE")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "abtest-test", "pg15-src")
	}
	_, err := os.Stat(filepath.Join(dir, ".git"))
	Require(t, err == nil, "a PostgreSQL 15 source repository at %s (scripts/pg-source.sh %s)", dir, dir)
	return dir
}

// update is the -update flag of every test binary that uses Golden.
var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Golden compares got with testdata/NAME, or writes it there under
// -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// RequireTools requires programs on PATH (skip, or fail under
// ABTEST_REQUIRE=1).
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := exec.LookPath(n)
		Require(t, err == nil, "%s on PATH", n)
	}
}
