package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// TestInitdbGolden: the commands and files of an initdb, as -n prints
// them: no trust on TCP (--auth-host=scram-sha-256), the password from a
// file in a private directory removed afterwards, the password file
// written into the new data directory. The password itself is never
// printed.
func TestInitdbGolden(t *testing.T) {
	t.Parallel()
	var trace bytes.Buffer
	m := &Manager{Root: "/nonexistent/pg/data", Run: &proc.Runner{DryRun: true, Trace: &trace}, User: &proc.User{Name: "postgres", UID: 1, GID: 1}}
	if _, err := m.initdb(context.Background(), "lru", "/nonexistent/pg/data/lru", 5433, Options{Install: "/nonexistent/pg/install/lru"}); err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "initdb.trace", trace.String())
	if strings.Contains(trace.String(), " trust") && !strings.Contains(trace.String(), "--auth-local=trust") || strings.Contains(trace.String(), "-A") {
		t.Errorf("initdb trusts more than the local socket:\n%s", trace.String())
	}
}

func TestEnvListenGolden(t *testing.T) {
	t.Parallel()
	e := Env{Name: "lru", Path: "/pg/data/lru.env.sh", InstallDir: "/pg/install/lru", DataDir: "/pg/data/lru", SocketDir: "/tmp/abtest-0123456789", Port: 5433, PassFile: "/pg/data/lru/" + PassFile}
	testenv.Golden(t, "env-listen.sh", e.Render())
}

// initdbTrustHba is the pg_hba.conf of PostgreSQL 15's initdb -A trust,
// as older abtests made clusters (its records).
const initdbTrustHba = `# TYPE  DATABASE        USER            ADDRESS                 METHOD

# "local" is for Unix domain socket connections only
local   all             all                                     trust
# IPv4 local connections:
host    all             all             127.0.0.1/32            trust
# IPv6 local connections:
host    all             all             ::1/128                 trust
# Allow replication connections from localhost, by a user with the
# replication privilege.
local   replication     all                                     trust
host    replication     all             127.0.0.1/32            trust
host    replication     all             ::1/128                 trust
`

func TestHostTrust(t *testing.T) {
	t.Parallel()
	scram := strings.ReplaceAll(strings.ReplaceAll(initdbTrustHba, "32            trust", "32            scram-sha-256"), "128                 trust", "128                 scram-sha-256")
	for _, tc := range []struct {
		hba  string
		line int
	}{
		{initdbTrustHba, 6},
		{scram, 0},
		{"local all all trust\n", 0},
		{"# host all all all trust\n", 0},
		{"host trust trust 127.0.0.1/32 scram-sha-256 # trust\n", 0},
		{"hostssl all all 127.0.0.1 255.255.255.255 trust\n", 1},
		{"host all all 127.0.0.1 255.255.255.255 scram-sha-256\n", 0},
		{"host all all samehost TRUST\n", 1},
		{"host all all all \"trust\"\n", 1},
		{"local all all trust\nhostnogssenc all all \\\n  ::1/128 trust\n", 2},
		{"host \"all x\" all 10.0.0.0/8 trust\n", 1},
		{"local all all trust\ninclude_if_exists more.conf\n", 2},
	} {
		if n, _ := hostTrust(tc.hba); n != tc.line {
			t.Errorf("hostTrust(%q) = line %d, want %d", tc.hba, n, tc.line)
		}
	}
}

// asNobody runs program as the hostile local user nobody, with an
// environment of its own (no PGPASSWORD, no HOME) plus env.
func asNobody(install string, env []string, program string, args ...string) (string, error) {
	c := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", program}, args...)...)
	c.Env = append([]string{"HOME=/nonexistent", "PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=" + build.LibDir(install)}, env...)
	c.Dir = "/"
	out, err := c.CombinedOutput()
	return string(out), err
}

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestNoTrustOnTCP: a cluster listening on 127.0.0.1 refuses a local
// user without the password (none, or a wrong one) and takes the one in
// its password file; nobody can neither read that file nor reach the
// Unix socket, the one place trust is kept; env.sh hands the password
// to psql -h 127.0.0.1, also after the port changed.
func TestNoTrustOnTCP(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("connecting as nobody needs root")
	}
	testenv.RequireTools(t, "setpriv", "bash")
	m, install := newManager(t)
	// Ports of the kernel's ephemeral range: a cluster of another test
	// picking its port from 5433 up could take the same at once.
	st := start(t, m, "tcp", Options{Install: install, Listen: "127.0.0.1", Port: freePort(t)})
	psql := filepath.Join(install, "bin", "psql")
	tcp := func(port int) []string {
		return []string{"-X", "-w", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", SuperUser, "-d", "postgres", "-tAc", "select 1"}
	}

	if _, err := os.Stat(initdbPassDir(m.Root, "tcp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("initdb's password directory is left: %v", err)
	}
	pass := filepath.Join(st.DataDir, PassFile)
	fi, err := os.Lstat(pass)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := m.owner()
	if fi.Mode().Perm() != 0o600 || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("%s: mode %04o, uid %d; want 0600 of uid %d", pass, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid, uid)
	}
	data, err := os.ReadFile(pass)
	if err != nil {
		t.Fatal(err)
	}
	m1 := regexp.MustCompile(`^\*:` + strconv.Itoa(st.Port) + `:\*:postgres:([0-9a-f]{32})\n$`).FindStringSubmatch(string(data))
	if m1 == nil {
		t.Fatalf("%s = %q, want *:%d:*:postgres:PASSWORD", pass, data, st.Port)
	}
	password := m1[1]

	for _, tc := range []struct {
		what, want string
		env        []string
	}{
		{"no password", "no password supplied", nil},
		{"a wrong password", "password authentication failed", []string{"PGPASSWORD=0123456789abcdef0123456789abcdef"}},
		{"the password file it cannot read", "no password supplied", []string{"PGPASSFILE=" + pass}},
	} {
		out, err := asNobody(install, tc.env, psql, tcp(st.Port)...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("nobody with %s: psql -h 127.0.0.1 = %v: %s; want refused (%s)", tc.what, err, out, tc.want)
		}
	}
	if out, err := asNobody(install, nil, "cat", pass); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("nobody reads %s: %v: %s", pass, err, out)
	}
	sock := []string{"-X", "-w", "-h", st.SocketDir, "-p", strconv.Itoa(st.Port), "-U", SuperUser, "-d", "postgres", "-tAc", "select 1"}
	if out, err := asNobody(install, nil, psql, sock...); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("nobody through the socket directory %s: %v: %s; want permission denied", st.SocketDir, err, out)
	}
	// The password is what lets a connection in: the test's account
	// above was refused for the lack of it, not for being nobody.
	if out, err := asNobody(install, []string{"PGPASSWORD=" + password}, psql, tcp(st.Port)...); err != nil || strings.TrimSpace(out) != "1" {
		t.Errorf("nobody with the password: %v: %s", err, out)
	}

	viaEnv := func(st *State) {
		t.Helper()
		c := exec.Command("bash", "-c", `source "$1" && exec psql -X -w -h 127.0.0.1 -tAc 'select 1'`, "bash", st.EnvFile)
		c.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		c.Dir = "/"
		if out, err := c.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1" {
			t.Errorf("source env.sh; psql -h 127.0.0.1 (port %d): %v: %s", st.Port, err, out)
		}
	}
	viaEnv(st)
	port := freePort(t)
	st2 := start(t, m, "tcp", Options{Install: install, Listen: "127.0.0.1", Port: port})
	if st2.Port != port {
		t.Fatalf("restarted on port %d, want %d", st2.Port, port)
	}
	if data, _ := os.ReadFile(pass); string(data) != passLine(port, password) {
		t.Errorf("after the port changed, %s = %q, want the same password for port %d", pass, data, port)
	}
	viaEnv(st2)

	// On the socket only, env.sh names no password file.
	st3 := start(t, m, "tcp", Options{Install: install, Port: port})
	if env, _ := os.ReadFile(st3.EnvFile); bytes.Contains(env, []byte("PGPASSFILE")) {
		t.Errorf("env.sh of a cluster on the socket only exports PGPASSFILE:\n%s", env)
	}
}

// TestTrustedTCPRefused: a cluster whose pg_hba.conf trusts TCP (made by
// an older abtest's initdb -A trust) is not made to listen on TCP: exit 2
// saying to recreate it; its pg_hba.conf is left as it was, a stopped
// one stays stopped, a running one keeps running on the socket only.
// Recreated, it listens with a password.
func TestTrustedTCPRefused(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	// A port no other test's cluster listens on over TCP: clusters of
	// other data roots on the socket only may share 5433 and up.
	st := start(t, m, "old", Options{Install: install, Port: freePort(t)})
	hba := filepath.Join(st.DataDir, "pg_hba.conf")
	// What an older abtest's initdb -A trust wrote, as the server's account.
	if err := m.writeOwned(hba, []byte(initdbTrustHba), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(st.DataDir, PassFile)); err != nil {
		t.Fatal(err)
	}
	pid, _ := PID(st.DataDir)

	refused := func(what string) {
		t.Helper()
		_, err := m.Start(ctx, "old", Options{Install: install, Port: st.Port, Listen: "127.0.0.1"})
		if !errors.Is(err, ErrHostTrust) || exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--recreate-cluster") {
			t.Errorf("%s: Start with --listen = %v; want one line, exit 2, saying --recreate-cluster", what, err)
		}
		if data, _ := os.ReadFile(hba); string(data) != initdbTrustHba {
			t.Errorf("%s: the refusal changed pg_hba.conf:\n%s", what, data)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", st.Port), time.Second); err == nil {
			c.Close()
			t.Errorf("%s: the refused cluster listens on 127.0.0.1:%d", what, st.Port)
		}
	}
	refused("running")
	if now, running := PID(st.DataDir); !running || now != pid {
		t.Errorf("the refusal stopped or restarted the running server (pid %d, now %d, running %v)", pid, now, running)
	}
	if _, err := m.Stop(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	refused("stopped")
	if _, running := PID(st.DataDir); running {
		t.Error("the refusal started the stopped server")
	}

	st2 := start(t, m, "old", Options{Install: install, Port: st.Port, Listen: "127.0.0.1", Recreate: true})
	data, err := os.ReadFile(filepath.Join(st2.DataDir, "pg_hba.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if n, line := hostTrust(string(data)); n != 0 {
		t.Errorf("recreated cluster's pg_hba.conf line %d trusts TCP: %s", n, line)
	}
	if env, _ := os.ReadFile(st2.EnvFile); !bytes.Contains(env, []byte("export PGPASSFILE="+filepath.Join(st2.DataDir, PassFile)+"\n")) {
		t.Errorf("env.sh of the recreated cluster lacks PGPASSFILE:\n%s", env)
	}
}

// TestInitdbPasswordPlanted: in a data root others can write to (1777),
// nobody plants initdb's password directory in advance: a link to a
// directory of theirs (to read the password from), or a directory of
// theirs, mode 0777, whose pwfile is a link to a file of root's (for
// root to write through). initdb runs all the same; nothing is written
// through either, and the password reaches no file of nobody's.
func TestInitdbPasswordPlanted(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("planting nobody's files needs root")
	}
	m, install := newManager(t)
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.Root, 0o1777); err != nil {
		t.Fatal(err)
	}
	trap := t.TempDir()
	if err := os.Chown(trap, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	linked := initdbPassDir(m.Root, "linked")
	if err := os.Symlink(trap, linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(linked, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	planted := initdbPassDir(m.Root, "planted")
	if err := os.Mkdir(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(planted, 0o777)
	if err := os.Chown(planted, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(planted, "pwfile")); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"linked", "planted"} {
		st := start(t, m, name, Options{Install: install})
		if _, err := os.Lstat(initdbPassDir(m.Root, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: initdb's password directory is left: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(st.DataDir, PassFile)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ents, _ := os.ReadDir(trap); len(ents) != 0 {
		t.Errorf("the password went into nobody's directory: %v", ents)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("root wrote through nobody's link: %q", data)
	}
}
