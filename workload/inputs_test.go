package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// nobody is the hostile local user of the tests.
const nobody = 65534

// TestHostileInputs (issue 39, items 4 and 5): as root, a workload file
// or a condition script another account owns or can write is refused
// in one line (exit 2), and so is one under a directory others can
// write or reached through their link: its SQL runs as the server's
// superuser, the script as the server's account, and so is a --pgbench
// of theirs. /dev/zero (once read
// until the OOM killer stopped abtest at 23 GB) and a FIFO are refused
// at once. The sudo caller's own file is accepted.
func TestHostileInputs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("inputs are checked only when abtest is root")
	}
	t.Setenv("SUDO_UID", "")
	dir := testenv.SharedTempDir(t)
	file := func(name, body string, perm os.FileMode, uid int) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, perm)
		os.Lchown(path, uid, uid)
		return path
	}
	const sql = "SELECT 1;\n"
	const script = "#!/bin/sh\nexit 0\n"
	if _, err := Resolve("file:" + file("ok.sql", sql, 0o644, 0)); err != nil {
		t.Fatalf("root's workload file: %v", err)
	}
	if err := CheckCondition("file:" + file("ok.sh", script, 0o755, 0)); err != nil {
		t.Fatalf("root's condition script: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "w.sql")
	os.WriteFile(inOpen, []byte(sql), 0o644)
	os.WriteFile(inOpen+".sh", []byte(script), 0o755)
	link := filepath.Join(dir, "link.sql")
	os.Symlink(filepath.Join(dir, "ok.sql"), link)
	os.Lchown(link, nobody, nobody)
	fifo := filepath.Join(dir, "fifo.sql")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	refused := func(what string, err error, want string) {
		t.Helper()
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line, exit 2, saying %q", what, err, want)
		}
	}
	for _, c := range []struct{ what, path, want string }{
		{"nobody's file", file("theirs.sql", sql, 0o644, nobody), "owned by uid 65534"},
		{"root's file of mode 0666", file("open.sql", sql, 0o666, 0), "writable by group or others"},
		{"a file in a directory of mode 0777", inOpen, "writable by group or others"},
		{"nobody's link", link, "owned by uid 65534"},
		{"/dev/zero", "/dev/zero", "not a regular file"},
		{"a FIFO", fifo, "not a regular file"},
	} {
		start := time.Now()
		_, err := Resolve("file:" + c.path)
		refused("workload "+c.what, err, c.want)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("workload %s: refused after %v", c.what, d)
		}
	}
	for _, c := range []struct{ what, path, want string }{
		{"nobody's script", file("theirs.sh", script, 0o755, nobody), "owned by uid 65534"},
		{"root's script of mode 0777", file("open.sh", script, 0o777, 0), "writable by group or others"},
		{"a script in a directory of mode 0777", inOpen + ".sh", "writable by group or others"},
	} {
		refused("condition "+c.what, CheckCondition("file:"+c.path), c.want)
	}

	// A pgbench given by path runs as the server's account.
	w, _ := Builtin("select1")
	s := Spec{Workload: w, Clients: 1, Duration: time.Second, Pgbench: file("pgbench", script, 0o755, nobody)}
	refused("nobody's --pgbench", s.Check(), "owned by uid 65534")
	s.Pgbench = "pgbench"
	if err := s.Check(); err != nil {
		t.Errorf("pgbench from PATH: %v", err)
	}

	t.Setenv("SUDO_UID", "65534")
	if _, err := Resolve("file:" + filepath.Join(dir, "theirs.sql")); err != nil {
		t.Errorf("the sudo caller's own workload file: %v", err)
	}
}

// TestMetricQueriesReadOnly (issue 39, item 4): a declared metric's query
// runs as the superuser in a READ ONLY transaction: one that writes
// (SELECT setval('s', 4242) once took effect) fails the run naming the
// metric and why, and the sequence is as it was.
func TestMetricQueriesReadOnly(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 5000)
	file := filepath.Join(t.TempDir(), "setval.sql")
	os.WriteFile(file, []byte("-- abtest:setup\nDROP SEQUENCE IF EXISTS s;\nCREATE SEQUENCE s;\n-- abtest:script\nSELECT 1;\n-- abtest:metric bumped\nSELECT setval('s', 4242)\n"), 0o644)
	w, err := Resolve("file:" + file)
	if err != nil {
		t.Fatal(err)
	}
	s := spec(st, install, w)
	s.Duration, s.OutDir, s.Rate, s.Clients = 1e9, filepath.Join(t.TempDir(), "r"), plumbingRate, 1
	_, err = runner().Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "metric bumped: its query writes, and metric queries run read-only") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a metric that writes: %v", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var last int64
	if err := conn.QueryRow(ctx, "SELECT last_value FROM s").Scan(&last); err != nil || last == 4242 {
		t.Errorf("sequence s: last_value %d (%v); the metric's setval took effect", last, err)
	}
}
