package workload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
)

// TestLocateOnlyThePostmaster: the probe finds the postmaster of the
// server it measures through cluster's pid reader, and no pid at all
// when the data directory the server names holds no file, a garbage
// one, the pid of a process that is not a postgres, or another
// server's postmaster.pid, copied or linked (the probe's own reader
// took any process called postgres*, so it read that other server's
// CPU time). The planted directories are named by the server itself:
// current_setting is shadowed by a function of the session's
// search_path, as a remote server's data_directory may be any local
// path.
func TestLocateOnlyThePostmaster(t *testing.T) {
	st, _ := startCluster(t, 5000)
	want, ok := cluster.PID(st.DataDir)
	if !ok {
		t.Fatalf("no postmaster for %s", st.DataDir)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sv := &server{}
	sv.locate(ctx, conn)
	if sv.postmaster != want || sv.dataDir != st.DataDir {
		t.Fatalf("located pid %d in %s, want %d in %s", sv.postmaster, sv.dataDir, want, st.DataDir)
	}

	real := filepath.Join(st.DataDir, "postmaster.pid")
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	plant := []struct {
		name string
		fn   func(pidFile string) error
	}{
		{"missing", func(string) error { return nil }},
		{"garbage", func(f string) error { return os.WriteFile(f, []byte("<script>\n"), 0o644) }},
		{"not a postgres", func(f string) error {
			return os.WriteFile(f, fmt.Appendf(nil, "%d\n%s\n", os.Getpid(), filepath.Dir(f)), 0o644)
		}},
		{"another server's, copied", func(f string) error { return os.WriteFile(f, data, 0o644) }},
		{"another server's, linked", func(f string) error { return os.Symlink(real, f) }},
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA planted"); err != nil {
		t.Fatal(err)
	}
	for i, p := range plant {
		name, dir := p.name, filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := p.fn(filepath.Join(dir, "postmaster.pid")); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"CREATE OR REPLACE FUNCTION planted.current_setting(text) RETURNS text LANGUAGE sql AS $$ SELECT '" + strings.ReplaceAll(dir, "'", "''") + "'::text $$",
			"SET search_path = planted, pg_catalog",
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", name, q, err)
			}
		}
		sv := &server{}
		sv.locate(ctx, conn)
		if sv.dataDir != dir || sv.postmaster != 0 {
			t.Errorf("%s: located pid %d in %s (the real postmaster is %d)", name, sv.postmaster, sv.dataDir, want)
		}
		if _, err := conn.Exec(ctx, "RESET search_path"); err != nil {
			t.Fatal(err)
		}
	}
}
