package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

func clusterEnv(t *testing.T) (map[string]string, string) {
	install := testenv.PGInstall(t)
	testenv.ServerUser(t)
	base := testenv.SharedTempDir(t)
	env := map[string]string{
		"PG_DATA_DIR":      filepath.Join(base, "data"),
		"PG_INSTALL_DIR":   filepath.Join(base, "install"),
		"PG_WORKTREES_DIR": filepath.Join(base, "wt"),
		"PG_SOURCE_DIR":    filepath.Join(base, "src"),
	}
	t.Cleanup(func() { abtest(t, env, "switch", "--worktree", "pg", "--stop") })
	return env, install
}

func TestSwitchStartsPrebuiltCluster(t *testing.T) {
	t.Parallel()
	env, install := clusterEnv(t)
	code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install, "-m", "700", "-p", "auto", "--set", "work_mem=3MB")
	if code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	envFile := filepath.Join(env["PG_DATA_DIR"], "pg.env.sh")
	if !strings.HasSuffix(stderr, "source "+envFile+"\n") {
		t.Errorf("switch should end with the source line on stderr; got:\n%s", stderr)
	}
	checkExports(t, out, envFile)
	code, printed, _ := abtest(t, env, "env", "--worktree", "pg")
	file, _ := os.ReadFile(envFile)
	if code != 0 || printed != string(file) || !strings.Contains(printed, "export PGDATABASE=benchmark") {
		t.Errorf("env -w pg: %d\n%s", code, printed)
	}
	code, out, _ = abtest(t, env, "status")
	if code != 0 || !strings.Contains(out, "running") || !strings.Contains(out, "700") {
		t.Errorf("status:\n%s", out)
	}
	st, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg")
	if err != nil || st.Settings["work_mem"] != "3MB" || st.Settings["pg_stat_statements.max"] != "700" {
		t.Errorf("state = %+v, %v", st, err)
	}
	code, _, stderr = abtest(t, env, "switch", "--worktree", "pg", "--stop")
	if code != 0 || !strings.Contains(stderr, "stopped") {
		t.Errorf("--stop: %d %q", code, stderr)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Error("still running after --stop")
	}
	// Started again without --install: the state's install is used.
	code, out, stderr = abtest(t, env, "switch", "--worktree", "pg")
	if again, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg"); code != 0 || err != nil || again.Install != install {
		t.Errorf("switch -w pg without --install: exit %d, state %+v (%v)\n%s%s", code, again, err, out, stderr)
	}
}

// A cluster held by a measurement: switch --stop says busy (exit 2, one
// line, naming --force), and --stop --force stops it anyway.
func TestSwitchStopBusyAndForce(t *testing.T) {
	t.Parallel()
	env, install := clusterEnv(t)
	if code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install); code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	// Another process holds the cluster's lock, as a matrix measuring on
	// it would (flock(1) on the lock file Acquire takes).
	testenv.RequireTools(t, "flock")
	holder := exec.Command("flock", filepath.Join(env["PG_DATA_DIR"], ".pg.use"), "sleep", "60")
	// A group of its own: killing flock alone left its sleep running,
	// orphaned, for a minute after the package.
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() }()
	time.Sleep(300 * time.Millisecond)
	code, _, stderr := abtest(t, env, "switch", "--worktree", "pg", "--stop")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("--stop of a held cluster: exit %d %q; want 2 naming --force", code, stderr)
	}
	code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--stop", "--force")
	if code != 0 || !strings.Contains(stderr, "stopped") {
		t.Errorf("--stop --force: exit %d\n%s%s", code, out, stderr)
	}
}

func TestClusterBadInputExits2AndStartsNothing(t *testing.T) {
	t.Parallel()
	env, install := clusterEnv(t)
	for _, args := range [][]string{
		{"--set", "bad syntax"},
		{"--set", "nosuch_guc=1"},
		{"-m", "0"},
		{"-C", "999"},
		{"-p", "nope"},
		{"--install", "/nonexistent"},
	} {
		full := append([]string{"switch", "--worktree", "pg", "--install", install}, args...)
		code, _, stderr := abtest(t, env, full...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(env["PG_DATA_DIR"], "pg", "postmaster.pid")); err == nil {
			t.Fatalf("%v left a server running", args)
		}
		if _, err := os.Stat(filepath.Join(env["PG_DATA_DIR"], "pg")); err == nil {
			t.Errorf("%v left a data directory", args)
		}
	}
	code, _, stderr := abtest(t, env, "switch", "--worktree", "a/b", "--install", install)
	if code != 2 || !strings.Contains(stderr, "a/b") {
		t.Errorf("name with /: %d %q", code, stderr)
	}
	code, _, stderr = abtest(t, env, "env", "--worktree", "never")
	if code != 2 || !strings.Contains(stderr, "abtest switch never") {
		t.Errorf("env of a missing cluster: %d %q", code, stderr)
	}
}

// TestRebuildStopsAndRestartsCluster: a rebuild stops the worktree's
// running cluster before installing over its binaries, keeps the data
// directory (same catalog version) and starts it again.
func TestRebuildStopsAndRestartsCluster(t *testing.T) {
	t.Parallel()
	// A name of its own, which abtest rebuilds: the base build's users
	// need not wait for it (its first build hits ccache).
	testbuild.Own(t, "pg15-rebuild")
	testbuild.PG15(t).Build(t, "pg15-rebuild", "base", nil, build.Options{Type: build.Release})
	cache := testenv.CacheRoot(t)
	base := testenv.SharedTempDir(t)
	env := map[string]string{
		"PG_SOURCE_DIR":    testenv.PG15Source(t),
		"PG_WORKTREES_DIR": filepath.Join(cache, "wt"),
		"PG_INSTALL_DIR":   filepath.Join(cache, "install"),
		"PG_DATA_DIR":      filepath.Join(base, "data"),
	}
	t.Cleanup(func() { abtest(t, env, "switch", "--worktree", "pg15-rebuild", "--stop") })
	code, out, stderr := abtest(t, env, "switch", "--worktree", "pg15-rebuild", "-p", "auto")
	if code != 0 {
		t.Fatalf("start: %d\n%s\n%s", code, out, stderr)
	}
	cm := &cluster.Manager{Root: env["PG_DATA_DIR"]}
	st, err := cm.ReadState("pg15-rebuild")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	conn.Exec(ctx, "CREATE TABLE survives (x int)")
	conn.Close(ctx)
	pid1, _ := cluster.PID(st.DataDir)

	code, out, stderr = abtest(t, env, "switch", "--worktree", "pg15-rebuild", "-b", "release", "--force")
	if code != 0 {
		t.Fatalf("rebuild: %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "stopping before installing") {
		t.Errorf("the running cluster was not stopped before the install (status goes to stderr):\n%s", stderr)
	}
	pid2, running := cluster.PID(st.DataDir)
	if !running || pid2 == pid1 {
		t.Fatalf("cluster after rebuild: running %v, pid %d -> %d", running, pid1, pid2)
	}
	// Issue 12 (b): the restarted server runs the new binary, not the one
	// installed over, and the cluster records the new build.
	if exe, err := procfs.Exe(pid2); err != nil || strings.HasSuffix(exe, "(deleted)") {
		t.Errorf("the cluster runs %q after the rebuild (%v)", exe, err)
	}
	if st2, err := cm.ReadState("pg15-rebuild"); err != nil || st2.Exe == "" || strings.HasSuffix(st2.Exe, "(deleted)") || !strings.Contains(st2.ServerVersion, "PostgreSQL 15") {
		t.Errorf("state after the rebuild: %+v %v", st2, err)
	}
	conn, err = pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM survives").Scan(&n); err != nil {
		t.Errorf("the data directory was not kept: %v", err)
	}
}

// sockDir makes a directory /tmp/PREFIX-DIGITS (abtest-DIGITS as abtest
// names socket directories) of uid, with a marker naming dataDir, removed
// at the end.
func sockDir(t *testing.T, prefix string, uid int, dataDir string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", prefix+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	marker := filepath.Join(dir, ".abtest-data-dir")
	if err := os.WriteFile(marker, []byte(dataDir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chown(marker, uid, uid)
		os.Chown(dir, uid, uid)
	}
	return dir
}

// TestSwitchPruneAndStatus: status lists a socket directory whose
// cluster is gone (text and JSON), switch --prune -n prints its removal
// and removes nothing, switch --prune removes it and says so, and never
// removes a live cluster's directory, another account's or a link.
func TestSwitchPruneAndStatus(t *testing.T) {
	t.Parallel()
	env, install := clusterEnv(t)
	if code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install); code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	live, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg")
	if err != nil {
		t.Fatal(err)
	}
	server := os.Geteuid()
	if name := testenv.ServerUser(t); name != "" {
		u, err := proc.LookupUser(name)
		if err != nil {
			t.Fatal(err)
		}
		server = int(u.UID)
	}
	goneData := filepath.Join(filepath.Dir(env["PG_DATA_DIR"]), "gone", "x")
	orphan := sockDir(t, "abtest", server, goneData)
	keep := []string{live.SocketDir}
	if os.Geteuid() == 0 {
		keep = append(keep, sockDir(t, "abtest", 65534, goneData))
	}
	// A link to a directory that would be an orphan, at a name abtest
	// gives socket directories.
	target := sockDir(t, "abtest-test-target", server, goneData)
	link := sockDir(t, "abtest", server, goneData)
	os.RemoveAll(link)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, link, target)

	code, out, _ := abtest(t, env, "status", "--json")
	var st Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
	listed := map[string]bool{}
	for _, o := range st.OrphanSocketDirs {
		listed[o.Dir] = true
	}
	if !listed[orphan] || slices.ContainsFunc(keep, func(d string) bool { return listed[d] }) {
		t.Errorf("status --json: %s listed %v; none of %v should be", orphan, listed[orphan], keep)
	}
	if _, out, _ = abtest(t, env, "status"); !strings.Contains(out, orphan) || !strings.Contains(out, "switch --prune") {
		t.Errorf("status does not list %s:\n%s", orphan, out)
	}
	if code, out, _ = abtest(t, env, "-n", "switch", "--prune"); code != 0 || !strings.Contains(out, "rm -rf "+orphan) {
		t.Errorf("-n switch --prune: exit %d\n%s", code, out)
	}
	if _, err := os.Lstat(orphan); err != nil {
		t.Fatalf("-n switch --prune removed %s", orphan)
	}
	if code, _, stderr := abtest(t, env, "switch", "--prune", "--worktree", "pg"); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("switch --prune -w pg: exit %d %q, want 2", code, stderr)
	}
	code, out, stderr := abtest(t, env, "switch", "--prune")
	// Its data root (…/gone) is not this configuration's: the line says so.
	pruned := "removed socket directory " + orphan + ": its data directory " + goneData + " is gone (a cluster of another data root, " + filepath.Dir(goneData) + ", not " + env["PG_DATA_DIR"] + ")\n"
	if code != 0 || !strings.Contains(stderr, pruned) || out != "" {
		t.Errorf("switch --prune: exit %d, stdout %q, stderr:\n%s\nwant the line %q", code, out, stderr, pruned)
	}
	if _, err := os.Lstat(orphan); err == nil {
		t.Errorf("switch --prune left %s", orphan)
	}
	for _, d := range keep {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("switch --prune removed %s", d)
		}
	}
	if _, running := cluster.PID(live.DataDir); !running {
		t.Error("the live cluster stopped")
	}
}

// TestSwitchStopCleanupLeavesNoSocketDir: a test whose cleanup is
// `switch --stop` and the removal of its directories leaves no socket
// directory, and status lists none of its clusters as gone.
func TestSwitchStopCleanupLeavesNoSocketDir(t *testing.T) {
	t.Parallel()
	var sock, base string
	t.Run("cluster", func(t *testing.T) {
		env, install := clusterEnv(t)
		if code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install); code != 0 {
			t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
		}
		st, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg")
		if err != nil {
			t.Fatal(err)
		}
		sock, base = st.SocketDir, filepath.Dir(env["PG_DATA_DIR"])
	})
	if sock == "" {
		t.Fatal("no cluster started")
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("the test's cleanup left %s", sock)
	}
	env, _ := clusterEnv(t)
	code, out, _ := abtest(t, env, "status", "--json")
	var st Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
	for _, o := range st.OrphanSocketDirs {
		if strings.HasPrefix(o.DataDir, base+"/") {
			t.Errorf("status lists %s of the ended test as gone", o.Dir)
		}
	}
}

// checkExports: switch's stdout is its cluster's export lines and
// nothing else, and a shell that evals it (eval "$(abtest switch -w
// NAME)", which status lines on stdout broke) has the cluster's
// variables.
func checkExports(t *testing.T, out, envFile string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "export ") {
			t.Errorf("switch's stdout has a line other than export: %q", l)
		}
	}
	got, err := exec.Command("sh", "-c", `eval "$1" && echo "$PGDATA $PGDATABASE"`, "sh", out).CombinedOutput()
	if want := filepath.Join(filepath.Dir(envFile), "pg") + " benchmark\n"; err != nil || string(got) != want {
		t.Errorf("eval of switch's stdout: %q (%v), want %q", got, err, want)
	}
}
