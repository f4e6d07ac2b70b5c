package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// TestRunSetupKey (issue 40 item 7): setup SQL runs once on a cluster,
// and again when the cluster it would run in is another: other
// settings, another preload, another build of an extension in its
// install — the SQL's text alone used to decide. A record planted as a
// link is refused, not followed. (SQL that needs a library preloaded:
// matrix TestSetupFollowsPreload.)
func TestRunSetupKey(t *testing.T) {
	t.Parallel()
	install := testpg.CopyInstall(t, testenv.PGInstall(t), "")
	m := testpg.Manager(t)
	ctx := context.Background()
	const sql = "CREATE TABLE IF NOT EXISTS runs (n int); INSERT INTO runs VALUES (1);"
	start := func(o cluster.Options) *cluster.State {
		t.Helper()
		o.Install = install
		st, err := m.Start(ctx, "s", o)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	setup := func(st *cluster.State, want bool, why string) {
		t.Helper()
		ran, err := m.RunSetup(ctx, st, "setup.sql", sql)
		if err != nil || ran != want {
			t.Errorf("%s: ran %v (%v), want %v", why, ran, err, want)
		}
	}
	st := start(cluster.Options{})
	setup(st, true, "a new cluster")
	setup(st, false, "the same cluster")
	st = start(cluster.Options{Settings: []cluster.Setting{{Name: "work_mem", Value: "8MB"}}})
	setup(st, true, "another setting")
	st = start(cluster.Options{Settings: []cluster.Setting{{Name: "work_mem", Value: "8MB"}}, Preload: []string{"auto_explain"}})
	setup(st, true, "another preload")
	setup(st, false, "the same preload")

	// An extension built into the install (its record), then rebuilt.
	rec := func(fp string) {
		t.Helper()
		data, _ := json.Marshal(build.ExtensionInfo{Extension: build.Extension{Name: "fake"}, Install: install, Fingerprint: fp})
		if err := os.WriteFile(build.ExtensionFile(install, "fake"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec("fp1")
	setup(st, true, "an extension built into the install")
	setup(st, false, "the same extension build")
	rec("fp2")
	setup(st, true, "another build of the extension")
	key, err := cluster.SetupKeyOf(st, sql)
	if err != nil || key.Extensions["fake"] != "fp2" || key.Settings["shared_preload_libraries"] != "pg_stat_statements,auto_explain" || key.Settings["work_mem"] != "8MB" {
		t.Errorf("key %+v (%v)", key, err)
	}

	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM runs").Scan(&n); err != nil || n != 5 {
		t.Errorf("runs holds %d rows (%v); want 5", n, err)
	}
	conn.Close(ctx)

	// Hostile: the record replaced by a link to root's file.
	done := filepath.Join(st.DataDir, cluster.SetupFile)
	if err := os.Remove(done); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", done); err != nil {
		t.Fatal(err)
	}
	if ran, err := m.RunSetup(ctx, st, "setup.sql", sql); err == nil || ran || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a planted link as the record: ran %v, %v; want refused", ran, err)
	}
}
