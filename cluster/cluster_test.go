package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

func TestConfGolden(t *testing.T) {
	t.Parallel()
	c := Conf{
		Port: 5433, SocketDir: "/tmp/abtest-0123456789ab",
		MaxConns: MaxConnections(64), SharedBufMB: SharedBuffersMB(24 << 30),
		Settings: effectiveSettings(Options{Settings: []Setting{{"work_mem", "64MB"}, {"log_min_messages", "it's"}}}),
	}
	testenv.Golden(t, "abtest.conf", c.Render())
	e := Env{Name: "lru", Path: "/pg/data/lru.env.sh", InstallDir: "/pg/install/lru", DataDir: "/pg/data/lru", SocketDir: "/tmp/abtest-0123456789ab", Port: 5433}
	testenv.Golden(t, "env.sh", e.Render())
}

func TestSizing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ clients, want int }{{1, 100}, {64, 90 + 10}, {256, 256 + 25 + 20}} {
		if got := MaxConnections(tc.clients); got != tc.want || got < tc.clients+13 {
			t.Errorf("MaxConnections(%d) = %d, want %d", tc.clients, got, tc.want)
		}
	}
	for _, tc := range []struct {
		mem  uint64
		want int
	}{{512 << 20, 128}, {4 << 30, 1024}, {24 << 30, 6144}, {256 << 30, 8192}} {
		if got := SharedBuffersMB(tc.mem); got != tc.want {
			t.Errorf("SharedBuffersMB(%d) = %d, want %d", tc.mem, got, tc.want)
		}
	}
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Setting{
		"work_mem=64MB":                {"work_mem", "64MB"},
		"pg_stat_statements.track=all": {"pg_stat_statements.track", "all"},
		"Shared_Buffers = 1GB":         {"shared_buffers", "1GB"},
		"search_path=a,b":              {"search_path", "a,b"},
	} {
		got, err := ParseSetting(in)
		if err != nil || got != want {
			t.Errorf("ParseSetting(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"work_mem", "=1", "bad name=1", "a-b=1", "x=1\ny=2", "a.b.c=1"} {
		if _, err := ParseSetting(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseSetting(%q) = %v, want exit 2", bad, err)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	t.Parallel()
	online := []int{0, 1, 2, 3, 8}
	for spec, want := range map[string]string{"1": "0", "3": "0-2", "5": "0-3,8", "0-2,8": "0-2,8", "3,1": "1,3", "2-2": "2"} {
		got, err := ParseCPUs(spec, online)
		if err != nil || proc.CPUList(got) != want {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %s", spec, got, err, want)
		}
	}
	for _, bad := range []string{"0", "6", "999", "4-5", "a", "3-1", "-1", "1,,2"} {
		if _, err := ParseCPUs(bad, online); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseCPUs(%q) = %v, want exit 2", bad, err)
		}
	}
	if got := Others([]int{0, 1}, online); proc.CPUList(got) != "2-3,8" {
		t.Errorf("Others = %v", got)
	}
}

// newManager returns a manager over a data root the server account can
// reach, and the prebuilt installation. It is internal/testpg's Manager
// for the tests of package cluster, which cannot import testpg (testpg
// imports cluster); tests that need only the exported API live in
// package cluster_test and use testpg.
func newManager(t *testing.T) (*Manager, string) {
	t.Helper()
	install := testenv.PGInstall(t)
	m := &Manager{Root: filepath.Join(testenv.SharedTempDir(t), "data"), Run: &proc.Runner{}, StartTimeout: 30 * time.Second}
	if name := testenv.ServerUser(t); name != "" {
		u, err := proc.LookupUser(name)
		if err != nil {
			t.Fatal(err)
		}
		m.User = u
	}
	return m, install
}

// start starts name and registers its stop for the end of the test,
// which removes its socket directory too.
func start(t *testing.T, m *Manager, name string, o Options) *State {
	t.Helper()
	t.Cleanup(func() {
		if _, err := m.Stop(context.Background(), name); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("cleanup stop %s: %v", name, err)
		}
	})
	st, err := m.Start(context.Background(), name, o)
	if err != nil {
		t.Fatalf("Start(%s): %v", name, err)
	}
	return st
}

// envConn connects the way a user does after `source env.sh`.
func envConn(t *testing.T, envFile string) *pgx.Conn {
	t.Helper()
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "export "); ok {
			k, v, _ := strings.Cut(rest, "=")
			vars[k] = strings.Trim(v, "'")
		}
	}
	for _, k := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGDATA", "PATH", "LD_LIBRARY_PATH"} {
		if vars[k] == "" {
			t.Fatalf("env.sh lacks %s", k)
		}
	}
	conn, err := pgx.Connect(context.Background(), "host="+vars["PGHOST"]+" port="+vars["PGPORT"]+" user="+vars["PGUSER"]+" dbname="+vars["PGDATABASE"]+" sslmode=disable")
	if err != nil {
		t.Fatalf("connect with env.sh values: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func show(t *testing.T, conn *pgx.Conn, guc string) string {
	t.Helper()
	var v string
	if err := conn.QueryRow(context.Background(), "SHOW "+guc).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", guc, err)
	}
	return v
}

func TestStartRestartRecreateStop(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	st := start(t, m, "a", Options{Install: install, PgssMax: 1000})
	conn := envConn(t, st.EnvFile)
	if got := show(t, conn, "pg_stat_statements.max"); got != "1000" {
		t.Errorf("pg_stat_statements.max = %s, want 1000", got)
	}
	var ext int
	conn.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'").Scan(&ext)
	if ext != 1 {
		t.Error("pg_stat_statements extension missing in the benchmark database")
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE keep (x int)"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.SocketDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir %s: %v %v, want 0700", st.SocketDir, fi.Mode(), err)
	}
	pid1, _ := PID(st.DataDir)

	// The user's own postgresql.conf edit survives a restart.
	pgconf := filepath.Join(st.DataDir, "postgresql.conf")
	data, _ := os.ReadFile(pgconf)
	userLine := "\n# mine\nstatement_timeout = '7s'\n"
	if err := os.WriteFile(pgconf, append([]byte(userLine), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	st = start(t, m, "a", Options{Install: install, PgssMax: 2000, Settings: []Setting{{"work_mem", "7MB"}}})
	// The reason names the first line that changed, not just "changed"
	// (the port's, when another package's test took it meanwhile).
	if !strings.HasPrefix(st.Reason, "configuration changed: \"") {
		t.Errorf("restart reason %q: want the changed line", st.Reason)
	}
	conn = envConn(t, st.EnvFile)
	if got := show(t, conn, "pg_stat_statements.max"); got != "2000" {
		t.Errorf("after restart pg_stat_statements.max = %s, want 2000", got)
	}
	if got := show(t, conn, "work_mem"); got != "7MB" {
		t.Errorf("work_mem = %s", got)
	}
	if got := show(t, conn, "statement_timeout"); got != "7s" {
		t.Errorf("the user's postgresql.conf setting was lost: statement_timeout = %s", got)
	}
	if pid2, _ := PID(st.DataDir); pid2 == pid1 || Alive(pid1) {
		t.Errorf("not restarted: pid %d -> %d", pid1, pid2)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM keep").Scan(&n); err != nil {
		t.Errorf("data lost on restart: %v", err)
	}

	// Same options again: nothing happens.
	pid2, _ := PID(st.DataDir)
	again := start(t, m, "a", Options{Install: install, PgssMax: 2000, Settings: []Setting{{"work_mem", "7MB"}}})
	// Unless its port was taken meanwhile: test packages run in parallel,
	// and another's cluster listening on TCP may take a port this one,
	// on a Unix socket only, does not hold; a new port is then right.
	pid3, _ := PID(st.DataDir)
	_, taken := PortHolder(st.Port)
	if (pid3 != pid2 || again.Action != Unchanged) && !(strings.Contains(again.Reason, `"port = `) && taken) {
		t.Errorf("unchanged options restarted the server (%d -> %d): %s, %s", pid2, pid3, again.Action, again.Reason)
	}

	st = start(t, m, "a", Options{Install: install, Recreate: true})
	conn = envConn(t, st.EnvFile)
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM keep").Scan(&n); err == nil {
		t.Error("--recreate-cluster kept the old data")
	}
	if got := show(t, conn, "pg_stat_statements.max"); got != "5000" {
		t.Errorf("default pg_stat_statements.max = %s", got)
	}

	procs := Processes(st.DataDir)
	if len(procs) < 4 {
		t.Fatalf("cluster processes = %v; want the postmaster and its auxiliaries", procs)
	}
	survivors := survivorsOf(procs)
	stopped, err := m.Stop(ctx, "a")
	if err != nil || !stopped {
		t.Fatalf("Stop = %v, %v", stopped, err)
	}
	for _, p := range survivors() {
		t.Errorf("process %s of the cluster survived --stop", p)
	}
	if stopped, err := m.Stop(ctx, "a"); err != nil || stopped {
		t.Errorf("second Stop = %v, %v; want not running, no error", stopped, err)
	}
}

func TestPortConflictAndAuto(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = m.Start(context.Background(), "p", Options{Install: install, Port: port})
	if !errors.Is(err, ErrPortBusy) || exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("Start on a held port = %v, want ErrPortBusy exit 2", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(msg, "-p auto") {
		t.Errorf("message %q should name the holder (pid %d) and suggest -p auto", msg, os.Getpid())
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err != nil {
		t.Errorf("the listener died: %v", err)
	} else {
		c.Close()
	}
	if _, err := os.Stat(filepath.Join(m.Root, "p")); err == nil {
		t.Error("a refused start created a data directory")
	}

	st := start(t, m, "p", Options{Install: install, AutoPort: true, Listen: "127.0.0.1"})
	if st.Port == port {
		t.Fatalf("auto picked the held port %d", port)
	}
	// The cluster's own listener does not count against it...
	start(t, m, "p", Options{Install: install, Port: st.Port, Listen: "127.0.0.1"})
	// ...but another cluster may not take that port.
	if _, err := m.Start(context.Background(), "q", Options{Install: install, Port: st.Port}); !errors.Is(err, ErrPortBusy) {
		t.Errorf("second cluster on a running cluster's port: %v", err)
	}
	q := start(t, m, "q", Options{Install: install})
	if q.Port == st.Port {
		t.Errorf("clusters p and q share port %d", q.Port)
	}
}

func TestCPUPinning(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	online, _ := AllowedCPUs()
	cpus, err := ParseCPUs("1", online)
	if err != nil {
		t.Fatal(err)
	}
	st := start(t, m, "pin", Options{Install: install, CPUs: cpus})
	want := proc.CPUList(cpus)
	procs := Processes(st.DataDir)
	if len(procs) < 4 {
		t.Fatalf("processes = %v", procs)
	}
	for _, p := range procs {
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != want {
				t.Errorf("process %d: Cpus_allowed_list %s, want %s", p, strings.TrimSpace(v), want)
			}
		}
	}
	// abtest's own threads are not left pinned.
	mine, _ := AllowedCPUs()
	if proc.CPUList(mine) != proc.CPUList(online) {
		t.Errorf("abtest's affinity changed to %v", mine)
	}
}

func TestRejectedSettings(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	// A new cluster with a bad setting: nothing left behind.
	_, err := m.Start(ctx, "bad", Options{Install: install, Settings: []Setting{{"nosuch_guc", "1"}}})
	if !errors.Is(err, ErrSetting) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), `unrecognized configuration parameter "nosuch_guc"`) {
		t.Fatalf("unknown GUC: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.Root, "bad")); err == nil {
		t.Error("the refused new cluster's data directory is still there")
	}
	// A running cluster with a bad value: it keeps running as it was.
	st := start(t, m, "good", Options{Install: install, Settings: []Setting{{"work_mem", "5MB"}}})
	pid, _ := PID(st.DataDir)
	before, _ := os.ReadFile(filepath.Join(st.DataDir, ConfFile))
	_, err = m.Start(ctx, "good", Options{Install: install, Settings: []Setting{{"work_mem", "lots"}}})
	if !errors.Is(err, ErrSetting) || !strings.Contains(err.Error(), `invalid value for parameter "work_mem": "lots"`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bad value: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(st.DataDir, ConfFile)); string(after) != string(before) {
		t.Error("abtest.conf changed after a rejected setting")
	}
	if p, ok := PID(st.DataDir); !ok || p != pid {
		t.Errorf("server after a rejected setting: pid %d running %v, want %d", p, ok, pid)
	}
	for _, o := range []Options{{Install: install, PgssMax: 5}, {Install: "/nonexistent"}, {Install: install, Port: 70000}} {
		if _, err := m.Start(ctx, "other", o); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Start(%+v) = %v, want exit 2", o, err)
		}
	}
	if _, err := m.Start(ctx, "a/b", Options{Install: install}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("name with /: %v", err)
	}
}

func TestLockRefusesASecondProcess(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	unlock, err := m.lock("busy")
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Start(context.Background(), "busy", Options{Install: install})
	unlock()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("Start while locked = %v, want ErrBusy naming pid %d", err, os.Getpid())
	}
	if _, err := os.Stat(filepath.Join(m.Root, "busy")); err == nil {
		t.Error("a refused start created a data directory")
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	st := start(t, m, "r", Options{Install: install})
	survivors := survivorsOf(Processes(st.DataDir))
	if err := m.Remove(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{st.DataDir, st.EnvFile, st.SocketDir} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still exists", p)
		}
	}
	for _, p := range survivors() {
		t.Errorf("process %s survived remove", p)
	}
}

// survivorsOf notes procs' start times and returns what lists those
// still running later. A pid is the same process only with the same
// start time: with pid_max 32768 and builds beside the test, the pid of
// an auxiliary that exited earlier can be another process by then.
func survivorsOf(procs []int) func() []string {
	started := map[int]int64{}
	for _, p := range procs {
		if st, err := procfs.ReadStat(p); err == nil {
			started[p] = st.StartTicks
		}
	}
	return func() []string {
		var out []string
		for p, start := range started {
			if st, err := procfs.ReadStat(p); err == nil && st.Alive() && st.StartTicks == start {
				out = append(out, fmt.Sprintf("%d (%s)", p, st.Comm))
			}
		}
		return out
	}
}
