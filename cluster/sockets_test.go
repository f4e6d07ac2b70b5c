package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/proc"
)

// goneUnder returns the socket directories whose cluster is gone (under
// m's parent) and whose marker names a data directory under root: the
// litter of the clusters of root. Other processes on the host (other
// tests) make and prune their own meanwhile; those are not counted.
func goneUnder(t *testing.T, m *Manager, root string) []string {
	t.Helper()
	orphans, err := m.Orphans()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range orphans {
		if strings.HasPrefix(o.DataDir, root+"/") {
			out = append(out, o.Dir)
		}
	}
	return out
}

func gone(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	return os.IsNotExist(err)
}

// TestSocketDirFollowsTheServer: Stop removes the socket directory, Start
// makes it again at the recorded path (env.sh unchanged, so a sourced
// PGHOST stays valid), a directory someone else made at that path
// meanwhile is never adopted (a new one, a new env.sh), Remove leaves
// none, and no socket directory of the root's clusters is left whose
// cluster is gone.
func TestSocketDirFollowsTheServer(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	st := start(t, m, "k", Options{Install: install})
	if owner, err := m.readMarker(st.SocketDir); err != nil || owner != st.DataDir {
		t.Errorf("marker of %s = %q, %v; want %s", st.SocketDir, owner, err, st.DataDir)
	}
	env1, _ := os.ReadFile(st.EnvFile)
	if _, err := m.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if !gone(t, st.SocketDir) {
		t.Errorf("Stop left the socket directory %s", st.SocketDir)
	}
	st2 := start(t, m, "k", Options{Install: install})
	env2, _ := os.ReadFile(st2.EnvFile)
	// The port may move on (another test's cluster took it while this
	// one was stopped: TestRememberedPortTakenMovesOn); PGHOST may not.
	if st2.SocketDir != st.SocketDir || st2.Port == st.Port && !bytes.Equal(env1, env2) || !strings.Contains(string(env2), "PGHOST="+proc.Quote(st.SocketDir)) {
		t.Errorf("after stop and start: socket directory %s (was %s), port %d (was %d), env.sh changed: %v\n%s", st2.SocketDir, st.SocketDir, st2.Port, st.Port, !bytes.Equal(env1, env2), env2)
	}
	checkPrivate(t, m, st2.SocketDir)
	envConn(t, st2.EnvFile)

	// Someone else's directory at the recorded path while it is stopped:
	// another account's (as root), or one marked as another cluster's.
	if _, err := m.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	other := os.Geteuid()
	if other == 0 {
		other = 65534
	}
	sockFixture(t, filepath.Dir(st.SocketDir), filepath.Base(st.SocketDir), other, map[string]string{socketMarker: "/elsewhere/data/x\n"}, 0)
	t.Cleanup(func() { os.RemoveAll(st.SocketDir) })
	st3 := start(t, m, "k", Options{Install: install})
	if st3.SocketDir == st.SocketDir {
		t.Fatalf("the cluster adopted %s, made by uid %d for another cluster", st.SocketDir, other)
	}
	if env3, _ := os.ReadFile(st3.EnvFile); !strings.Contains(string(env3), "PGHOST="+proc.Quote(st3.SocketDir)) {
		t.Errorf("env.sh does not name the new socket directory %s:\n%s", st3.SocketDir, env3)
	}
	envConn(t, st3.EnvFile)
	if fi, err := os.Lstat(st.SocketDir); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(other) {
		t.Errorf("the other directory %s was changed: %v", st.SocketDir, err)
	}

	if err := m.Remove(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if !gone(t, st3.SocketDir) {
		t.Errorf("Remove left the socket directory %s", st3.SocketDir)
	}
	if left := goneUnder(t, m, m.Root); len(left) > 0 {
		t.Errorf("socket directories of gone clusters of %s: %v", m.Root, left)
	}
}

// TestHelperCleanupLeavesNoSocketDir: a test that starts a cluster and
// ends (its cleanup stops it, its data root is deleted) leaves no socket
// directory behind, and the number of those whose cluster is gone does
// not grow.
func TestHelperCleanupLeavesNoSocketDir(t *testing.T) {
	t.Parallel()
	probe, _ := newManager(t)
	var sock, root string
	t.Run("cluster", func(t *testing.T) {
		m, install := newManager(t)
		root = filepath.Dir(m.Root)
		sock = start(t, m, "c", Options{Install: install}).SocketDir
	})
	if sock == "" {
		t.Fatal("the subtest started no cluster")
	}
	if !gone(t, sock) {
		t.Errorf("the test's cleanup left the socket directory %s", sock)
	}
	if left := goneUnder(t, probe, root); len(left) > 0 {
		t.Errorf("socket directories whose cluster is gone after the test: %v", left)
	}
}

// sockFixture makes directory name under parent as uid (the server's
// account, or another) holding files (name: content; socketMarker for a
// marker), last changed age ago.
func sockFixture(t *testing.T, parent, name string, uid int, files map[string]string, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Lchown(filepath.Join(dir, f), uid, uid)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-age)
	if err := os.Chtimes(dir, then, then); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrune: Orphans and Prune take the socket directories whose cluster
// is gone (its data directory is gone; it records another directory and
// the directory is older than the grace; an older abtest's, empty, old
// and recorded by no cluster) and never a live cluster's, a starting
// one's (young), one holding a live socket, another account's, a link,
// or a directory of another name. A dry run removes nothing.
func TestPrune(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	m.socketParent = filepath.Join(filepath.Dir(m.Root), "s")
	if err := os.Mkdir(m.socketParent, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	live := start(t, m, "live", Options{Install: install})
	uid, _ := m.owner()
	old := 2 * orphanGrace
	goneData := filepath.Join(filepath.Dir(m.Root), "gone", "x")
	marker := func(dataDir string) map[string]string { return map[string]string{socketMarker: dataDir + "\n"} }
	fix := func(name string, files map[string]string, age time.Duration) string {
		return sockFixture(t, m.socketParent, name, uid, files, age)
	}
	// An older abtest's directory a server killed -9 left its socket
	// and lock in (pid 0: no process).
	deadSocket := map[string]string{".s.PGSQL.5998": "", ".s.PGSQL.5998.lock": "999999999\n"}
	want := []string{
		fix("abtest-1", marker(goneData), 0),
		fix("abtest-11", deadSocket, old),
		fix("abtest-2", marker(live.DataDir), old),
		fix("abtest-3", nil, old),
	}
	// A live process's socket lock (this test's pid).
	locked := marker(goneData)
	locked[".s.PGSQL.5999.lock"] = strconv.Itoa(os.Getpid()) + "\n"
	target := fix("target", marker(goneData), old)
	keep := []string{
		live.SocketDir,
		fix("abtest-4", marker(live.DataDir), 0),
		fix("abtest-5", nil, 0),
		fix("abtest-6", map[string]string{"x": ""}, old),
		fix("abtest-test-7", nil, old),
		fix("abtest-8", locked, old),
		filepath.Join(m.socketParent, "abtest-9"),
		target,
	}
	if err := os.Symlink(target, keep[6]); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		keep = append(keep, sockFixture(t, m.socketParent, "abtest-10", 65534, marker(goneData), old))
	}

	orphans, err := m.Orphans()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range orphans {
		got = append(got, o.Dir)
		if o.Reason == "" {
			t.Errorf("orphan %s without a reason", o.Dir)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Orphans = %v, want %v", got, want)
	}
	var trace bytes.Buffer
	dry := *m
	dry.Run = &proc.Runner{DryRun: true, Trace: &trace}
	if done, err := dry.Prune(); err != nil || len(done) != len(want) || !strings.Contains(trace.String(), "rm -rf "+want[0]) {
		t.Errorf("dry Prune = %v, %v; trace:\n%s", done, err, trace.String())
	}
	for _, d := range want {
		if gone(t, d) {
			t.Errorf("a dry run removed %s", d)
		}
	}
	done, err := m.Prune()
	if err != nil || len(done) != len(want) {
		t.Errorf("Prune = %v, %v", done, err)
	}
	for _, d := range want {
		if !gone(t, d) {
			t.Errorf("Prune left the orphan %s", d)
		}
	}
	for _, d := range keep {
		if gone(t, d) {
			t.Errorf("Prune removed %s", d)
		}
	}
	envConn(t, live.EnvFile)
	if _, err := m.Stop(ctx, "live"); err != nil || !gone(t, live.SocketDir) {
		t.Errorf("Stop of the live cluster: %v; socket directory gone: %v", err, gone(t, live.SocketDir))
	}
}
