package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// plantLink puts a symbolic link to target at path, owned by nobody when
// the test runs as root (a hostile local user's), and returns a check
// that target was neither chowned nor chmodded through it.
func plantLink(t *testing.T, path, target string) func() {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	if os.Geteuid() == 0 {
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		after, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		b, a := before.Sys().(*syscall.Stat_t), after.Sys().(*syscall.Stat_t)
		if a.Uid != b.Uid || a.Gid != b.Gid || after.Mode() != before.Mode() {
			t.Errorf("%s was changed through the link %s: %d:%d %v -> %d:%d %v", target, path, b.Uid, b.Gid, before.Mode(), a.Uid, a.Gid, after.Mode())
		}
	}
}

// TestSocketDirLinkNotFollowed: a link a local user planted at the socket
// path abtest used to derive from the data directory (/tmp/abtest-<hash>),
// or at the socket directory a cluster's state records, is never followed:
// its target keeps its owner and mode, and the cluster gets a new private
// directory with an unpredictable name.
func TestSocketDirLinkNotFollowed(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	target, err := os.MkdirTemp("", "abtest-target-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(target)
	os.Chmod(target, 0o755)

	dir, _ := m.DataDir("s")
	sum := sha256.Sum256([]byte(dir))
	predictable := filepath.Join("/tmp", "abtest-"+hex.EncodeToString(sum[:])[:12])
	unchanged := plantLink(t, predictable, target)
	st := start(t, m, "s", Options{Install: install})
	unchanged()
	if st.SocketDir == predictable || filepath.Dir(st.SocketDir) != "/tmp" {
		t.Errorf("socket dir %s", st.SocketDir)
	}
	checkPrivate(t, m, st.SocketDir)

	// The recorded directory replaced by a link while the cluster is
	// stopped (as a /tmp cleaner and a hostile user could).
	if _, err := m.Stop(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	old := st.SocketDir
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	unchanged = plantLink(t, old, target)
	st = start(t, m, "s", Options{Install: install})
	unchanged()
	if st.SocketDir == old {
		t.Errorf("the cluster uses %s, now a link", old)
	}
	checkPrivate(t, m, st.SocketDir)
	conn := envConn(t, st.EnvFile)
	if got := show(t, conn, "unix_socket_directories"); got != st.SocketDir {
		t.Errorf("server's socket directory %s, state's %s", got, st.SocketDir)
	}
}

func checkPrivate(t *testing.T, m *Manager, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := m.owner()
	if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || fi.Mode().Perm() != 0o700 || int(st.Uid) != uid {
		t.Errorf("%s: %v uid %d, want a 0700 directory of uid %d", dir, fi.Mode(), st.Uid, uid)
	}
}

// TestDataDirOfAnotherUser: a data directory another account owns is
// refused in one line, and nothing in it changes owner.
func TestDataDirOfAnotherUser(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	if os.Geteuid() != 0 {
		t.Skip("only root can give a directory to another account")
	}
	st := start(t, m, "o", Options{Install: install})
	if _, err := m.Stop(context.Background(), "o"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(st.DataDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(st.DataDir, ConfFile)
	before, _ := os.Stat(conf)
	_, err := m.Start(context.Background(), "o", Options{Install: install, Settings: []Setting{{"work_mem", "8MB"}}})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "belongs to uid 65534") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Start on another user's data directory = %v, want one line, exit 2", err)
	}
	after, _ := os.Stat(conf)
	if after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("%s changed", conf)
	}
	os.Chown(st.DataDir, int(m.User.UID), int(m.User.GID))
}

// TestSettingsOwnedAndUnknown: settings abtest owns and unknown or bad
// ones are refused (exit 2) before anything is created; a bad value of a
// library's setting, which postgres -C cannot judge, is refused when the
// server starts, and the running server stays as it was.
func TestSettingsOwnedAndUnknown(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	for set, want := range map[string]string{
		"port=5999":                             "abtest sets port itself",
		"unix_socket_directories=/tmp":          "abtest sets unix_socket_directories itself",
		"listen_addresses=*":                    "pass --listen",
		"data_directory=/x":                     "abtest sets data_directory itself",
		"shared_preload_libraries=auto_explain": "must include pg_stat_statements",
		"nosuch_guc=1":                          `unrecognized configuration parameter "nosuch_guc"`,
		"work_mem=lots":                         `invalid value for parameter "work_mem": "lots"`,
	} {
		k, v, _ := strings.Cut(set, "=")
		err := m.CheckSettings(ctx, install, map[string]string{k: v})
		if !errors.Is(err, ErrSetting) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSettings(%s) = %v, want ErrSetting exit 2 with %q", set, err, want)
		}
		if _, err := m.Start(ctx, "new", Options{Install: install, Settings: []Setting{{k, v}}}); !errors.Is(err, ErrSetting) {
			t.Errorf("Start with %s = %v", set, err)
		}
		if _, err := os.Stat(filepath.Join(m.Root, "new")); err == nil {
			t.Fatalf("Start with %s created a data directory", set)
		}
	}
	if err := m.CheckSettings(ctx, install, map[string]string{"work_mem": "4MB", "shared_preload_libraries": "pg_stat_statements,auto_explain", "pg_stat_statements.max": "100"}); err != nil {
		t.Errorf("CheckSettings of good settings: %v", err)
	}

	st := start(t, m, "g", Options{Install: install, PgssMax: 1000})
	pid, _ := PID(st.DataDir)
	// A library's setting is judged by the server once the library is
	// loaded.
	_, err := m.Start(ctx, "g", Options{Install: install, Settings: []Setting{{"pg_stat_statements.track", "bogus"}}})
	if !errors.Is(err, ErrSetting) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), `"pg_stat_statements.track"`) {
		t.Errorf("pg_stat_statements.track=bogus = %v, want ErrSetting naming it", err)
	}
	st2, err := m.ReadState("g")
	if err != nil || st2.Settings["pg_stat_statements.max"] != "1000" {
		t.Errorf("state after the refusal: %+v, %v", st2, err)
	}
	if p, ok := PID(st.DataDir); !ok {
		t.Errorf("the server (pid %d) is not running after a refused setting", pid)
	} else if got := show(t, envConn(t, st.EnvFile), "pg_stat_statements.max"); got != "1000" {
		t.Errorf("after the refusal (pid %d) pg_stat_statements.max = %s, want 1000 as before", p, got)
	}
}

// TestRememberedPortTakenMovesOn: a cluster whose remembered port another
// running abtest cluster holds now gets a free port instead of failing;
// an explicit -p still fails.
func TestRememberedPortTakenMovesOn(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	q := start(t, m, "q", Options{Install: install})
	if _, err := m.Stop(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	p := start(t, m, "p", Options{Install: install, Port: q.Port})
	q2 := start(t, m, "q", Options{Install: install})
	if q2.Port == p.Port {
		t.Errorf("q took p's port %d", p.Port)
	}
	if _, err := m.Stop(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, "q", Options{Install: install, Port: p.Port}); !errors.Is(err, ErrPortBusy) {
		t.Errorf("explicit -p of a running cluster's port = %v, want ErrPortBusy", err)
	}
}

// An abtest killed during initdb leaves what initdb made so far (initdb
// runs on, orphaned): before staging, a data directory that had
// PG_VERSION, no state and no include of abtest.conf, so every later
// start ignored abtest.conf and waited for a socket the server never
// made. Now initdb writes into a staging directory that the next Start
// removes, and such an old data directory is made anew.
func TestKilledInitdbLeavesNothingToTrip(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()

	// A staging directory a killed run left, with initdb's first files.
	stage := InitdbStaging(m.Root, "k")
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.privateDir(stage); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := start(t, m, "k", Options{Install: install, PgssMax: 1200})
	if _, err := os.Lstat(stage); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the staging directory a killed initdb left is still there: %v", err)
	}
	if got := show(t, envConn(t, st.EnvFile), "pg_stat_statements.max"); got != "1200" {
		t.Errorf("pg_stat_statements.max = %s, want 1200", got)
	}

	// A data directory an older abtest left the same way: initdb done,
	// the include not yet appended, never started (no state).
	if _, err := m.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	pgconf := filepath.Join(st.DataDir, "postgresql.conf")
	data, err := os.ReadFile(pgconf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pgconf, []byte(strings.ReplaceAll(string(data), includeLine, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(st.DataDir, stateFile)); err != nil {
		t.Fatal(err)
	}
	st = start(t, m, "k", Options{Install: install, PgssMax: 1300})
	if got := show(t, envConn(t, st.EnvFile), "pg_stat_statements.max"); got != "1300" {
		t.Errorf("a data directory without the include: pg_stat_statements.max = %s, want 1300", got)
	}
}

// A check of the install cut short by SIGINT (its context ended) is an
// interruption, exit 3, not "user postgres cannot run …" with exit 2:
// TestFaultInterruptAtFivePoints/preparing met that once.
func TestInterruptedCheckIsNoBadInput(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	if m.User == nil {
		t.Skip("the check runs a command only for a server account other than the caller (as root)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.checkInstall(ctx, install)
	if code := exitcode.Code(err); code != exitcode.Infra || !errors.Is(err, context.Canceled) {
		t.Errorf("checkInstall after SIGINT: exit %d, %v; want exit %d, the interruption", code, err, exitcode.Infra)
	}
	if err := m.askPostgres(ctx, install, t.TempDir()); exitcode.Code(err) != exitcode.Infra {
		t.Errorf("askPostgres after SIGINT: exit %d, %v; want exit %d", exitcode.Code(err), err, exitcode.Infra)
	}
}
