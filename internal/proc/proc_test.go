package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

func TestRunLogsOutput(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sub", "x.log")
	r := &Runner{}
	err := r.Run(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "echo out; echo err >&2"}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.HasPrefix(s, "# ") || !strings.Contains(s, "$ sh -c 'echo out; echo err >&2'\n") || !strings.Contains(s, "out\n") || !strings.Contains(s, "err\n") {
		t.Errorf("log =\n%s", s)
	}
}

func TestFailureCarriesTailAndLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "build.log")
	r := &Runner{}
	script := "for i in $(seq 1 30); do echo line$i >&2; done; exit 7"
	err := r.Run(context.Background(), Cmd{Path: "sh", Args: []string{"-c", script}, Log: log})
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if pe.ExitCode != 7 || len(pe.Tail) != tailLines || pe.Tail[len(pe.Tail)-1] != "line30" || pe.Tail[0] != "line11" {
		t.Errorf("error = %+v", pe)
	}
	if msg := err.Error(); msg != "sh: exit status 7: line30 (log: "+log+")" {
		t.Errorf("message = %q", msg)
	}
}

func TestNameOfSubcommandTools(t *testing.T) {
	err := (&Runner{}).Run(context.Background(), Cmd{Path: "git", Args: []string{"frobnicate"}})
	if err == nil || !strings.HasPrefix(err.Error(), "git frobnicate: exit status 1") {
		t.Errorf("err = %v", err)
	}
	err = (&Runner{}).Run(context.Background(), Cmd{Path: "/no/such/tool"})
	var pe *Error
	if !errors.As(err, &pe) || pe.ExitCode != -1 || !strings.Contains(err.Error(), "tool") {
		t.Errorf("missing program: %v", err)
	}
}

func TestOutputAndEnv(t *testing.T) {
	r := &Runner{}
	out, err := r.Output(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "echo $ABTEST_X-$HOME"}, Env: []string{"ABTEST_X=1", "HOME=/h"}})
	if err != nil || out != "1-/h\n" {
		t.Errorf("Output = %q, %v", out, err)
	}
	t.Setenv("ABTEST_GONE", "x")
	c := Cmd{Path: "sh", Args: []string{"-c", "echo ${ABTEST_GONE-unset}"}, Unset: []string{"ABTEST_GONE"}}
	if out, err := r.Output(context.Background(), c); err != nil || out != "unset\n" {
		t.Errorf("Unset: %q, %v", out, err)
	}
	if got := c.String(); got != "env -u ABTEST_GONE sh -c 'echo ${ABTEST_GONE-unset}'" {
		t.Errorf("String = %q", got)
	}
}

// A runner with its own environment gives children that and nothing of
// the calling process's, with the command's own entries on top.
func TestRunnerEnviron(t *testing.T) {
	t.Setenv("ABTEST_LEAK", "x")
	r := &Runner{Environ: []string{"PATH=" + os.Getenv("PATH"), "ABTEST_BASE=1", "ABTEST_OVER=old"}}
	c := Cmd{Path: "sh", Args: []string{"-c", "echo ${ABTEST_LEAK-unset} $ABTEST_BASE $ABTEST_OVER ${ABTEST_BASE_GONE-unset}"}, Env: []string{"ABTEST_OVER=new"}}
	if out, err := r.Output(context.Background(), c); err != nil || out != "unset 1 new unset\n" {
		t.Errorf("Output = %q, %v", out, err)
	}
	r.Environ = append(r.Environ, "ABTEST_BASE_GONE=1")
	c.Unset = []string{"ABTEST_BASE_GONE"}
	if out, err := r.Output(context.Background(), c); err != nil || out != "unset 1 new unset\n" {
		t.Errorf("Unset over Environ: %q, %v", out, err)
	}
}

func TestDryRunTracesAndRunsOnlyReadOnly(t *testing.T) {
	dir := t.TempDir()
	var trace strings.Builder
	r := &Runner{DryRun: true, Trace: &trace}
	marker := filepath.Join(dir, "it ran")
	ctx := context.Background()
	if err := r.Run(ctx, Cmd{Path: "touch", Args: []string{marker}, Dir: dir, Env: []string{"A=b c"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("dry run ran the command")
	}
	out, err := r.Output(ctx, Cmd{Path: "echo", Args: []string{"hi"}, ReadOnly: true})
	if err != nil || out != "hi\n" {
		t.Errorf("read-only command in dry run: %q, %v", out, err)
	}
	if err := r.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.MkdirAll(filepath.Join(dir, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Note("build %s: %s", "lru", "skipped")
	if _, err := os.Stat(dir); err != nil {
		t.Error("dry run removed the directory")
	}
	want := "cd " + dir + " && A='b c' touch '" + marker + "'\n" +
		"# write '" + marker + "' (1 bytes)\n" +
		"rm -rf " + dir + "\n" +
		"mkdir -p " + filepath.Join(dir, "new") + "\n" +
		"# build lru: skipped\n"
	if trace.String() != want {
		t.Errorf("trace =\n%s\nwant\n%s", trace.String(), want)
	}
}

func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "a b", "it's", "$HOME", "-Dfoo=bar", "x;rm -rf /", "new\nline"} {
		out, err := (&Runner{}).Output(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "printf %s " + Quote(s)}})
		if err != nil || out != s {
			t.Errorf("sh saw %q for Quote(%q) = %s (%v)", out, s, Quote(s), err)
		}
	}
}

// TestCancelStopsTheWholeGroup starts a shell whose child ignores SIGINT
// (a background job of a non-interactive shell does): cancelling must end
// the child too, by SIGKILL to the group after the delay.
func TestCancelStopsTheWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{KillDelay: 300 * time.Millisecond}
	p, err := r.Start(ctx, Cmd{Path: "sh", Args: []string{"-c", "sleep 300 & echo $! > " + pidFile + "; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			break
		}
	}
	if child == 0 {
		t.Fatal("child never started")
	}
	cancel()
	err = p.Wait()
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("Wait after cancel = %v, want interrupted", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(child, 0) != nil {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatal("child of the cancelled command survived")
		}
	}
}

func TestRunAsUser(t *testing.T) {
	testenv.Require(t, os.Geteuid() == 0, "running as root (to switch users)")
	u, err := LookupUser("postgres")
	testenv.Require(t, err == nil, "a postgres account: %v", err)
	out, err := (&Runner{}).Output(context.Background(), Cmd{Path: "id", Args: []string{"-u"}, User: u})
	if err != nil || strings.TrimSpace(out) != strconv.Itoa(int(u.UID)) {
		t.Errorf("id -u as postgres = %q, %v; want %d", out, err, u.UID)
	}
	c := Cmd{Path: "id", User: u, Env: []string{"X=1"}}
	if got := c.String(); got != "runuser -u postgres -- env X=1 id" {
		t.Errorf("String = %q", got)
	}
}
