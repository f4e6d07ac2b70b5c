package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// newWorkspace is a workspace over a two-commit repository, with roots
// the server account can reach, writing to out.
func newWorkspace(t *testing.T, out *bytes.Buffer) (*Workspace, string) {
	t.Helper()
	repo := testenv.NewRepo(t, map[string]string{"a.c": "int a;\n"})
	testenv.Commit(t, repo, "second", map[string]string{"a.c": "int a = 2;\n"})
	root := testenv.SharedTempDir(t)
	env := map[string]string{
		"PG_SOURCE_DIR": repo, "PG_WORKTREES_DIR": filepath.Join(root, "wt"), "PG_INSTALL_DIR": filepath.Join(root, "inst"),
		"PG_DATA_DIR": filepath.Join(root, "data"), "BENCH_RESULTS_DIR": filepath.Join(root, "results"), "ABTEST_RUN_AS": testenv.ServerUser(t),
	}
	cfg, err := config.Load(config.Options{Dir: t.TempDir(), Home: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return &Workspace{Config: cfg, Run: &proc.Runner{}, Euid: os.Geteuid(), Out: out}, repo
}

// TestSwitchWorktreeAndStatus: a worktree is created at a ref and
// patched, Status reports both (sha, patch, dirty), and the text table
// names them.
func TestSwitchWorktreeAndStatus(t *testing.T) {
	var out bytes.Buffer
	ws, repo := newWorkspace(t, &out)
	ctx := context.Background()
	patch := filepath.Join(t.TempDir(), "fix.diff")
	os.WriteFile(patch, []byte("--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a;\n+int a = 9;\n"), 0o644)
	if err := ws.Switch(ctx, Request{Name: "lru", Commit: "HEAD~1", Patches: []string{patch}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "worktree lru: created at") || !strings.Contains(out.String(), "worktree lru: applied "+patch) {
		t.Errorf("output:\n%s", out.String())
	}
	st, err := ws.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := testenv.Git(t, repo, "rev-parse", "HEAD~1")
	if len(st.Worktrees) != 1 || st.Worktrees[0].SHA != base || len(st.Worktrees[0].Patches) != 1 || st.Worktrees[0].Dirty ||
		len(st.Builds) != 0 || len(st.Clusters) != 0 || st.Clusters == nil {
		t.Fatalf("status = %+v", st)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lru       " + base[:8], "fix.diff", "no clusters; start one with: abtest switch NAME", "worktrees: " + ws.Config.WorktreesDir} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestSwitchBadRequestChangesNothing: every refused request is exit 2,
// and none creates the worktrees root.
func TestSwitchBadRequestChangesNothing(t *testing.T) {
	ws, _ := newWorkspace(t, &bytes.Buffer{})
	for _, r := range []Request{
		{Name: "../x", Commit: "HEAD"},
		{Name: "x", Remove: true, Commit: "HEAD"},
		{Name: "x", Remove: true, Stop: true},
		{Name: "x", Commit: "HEAD", Build: &BuildSpec{Type: "fast"}},
		{Name: "x", Commit: "HEAD", Cluster: &ClusterSpec{Port: "99999", PgssMax: 5000, MaxClients: 1}},
		{Name: "x", Commit: "HEAD", Cluster: &ClusterSpec{PgssMax: 99, MaxClients: 1}},
		{Name: "x", Commit: "HEAD", Cluster: &ClusterSpec{PgssMax: 5000, MaxClients: 0}},
		{Name: "x", Commit: "HEAD", Cluster: &ClusterSpec{PgssMax: 5000, MaxClients: 1, Settings: []string{"novalue"}}},
		{Name: "x", Commit: "HEAD", Cluster: &ClusterSpec{PgssMax: 5000, MaxClients: 1, CPUs: "0-100000"}},
	} {
		if err := ws.Switch(context.Background(), r); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: err %v (exit %d), want exit 2", r, err, exitcode.Code(err))
		}
	}
	if _, err := os.Stat(ws.Config.WorktreesDir); err == nil {
		t.Error("a refused request created the worktrees root")
	}
}

// TestSwitchClusterStartStop: a cluster of a prebuilt install starts
// (source env.sh is printed), Status lists it running with its
// settings, Stop stops it, and a second Stop says it is not running.
func TestSwitchClusterStartStop(t *testing.T) {
	install := testenv.PGInstall(t)
	var out bytes.Buffer
	ws, _ := newWorkspace(t, &out)
	ctx := context.Background()
	t.Cleanup(func() { ws.Switch(context.Background(), Request{Name: "pre", Stop: true}) })
	spec := &ClusterSpec{Port: "auto", PgssMax: 1000, MaxClients: 4, Install: install, Settings: []string{"work_mem=8MB"}}
	if err := ws.Switch(ctx, Request{Name: "pre", Cluster: spec}); err != nil {
		t.Fatal(err)
	}
	cm, err := ws.Clusters()
	if err != nil {
		t.Fatal(err)
	}
	if want := "source " + cm.EnvFile("pre") + "\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("output %q, want it to end with %q", out.String(), want)
	}
	st, err := ws.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clusters) != 1 || !st.Clusters[0].Running || st.Clusters[0].Settings["pg_stat_statements.max"] != "1000" {
		t.Errorf("clusters = %+v", st.Clusters)
	}
	if got := ws.InstallFor("pre", ""); got != install {
		t.Errorf("InstallFor after a start with an install: %s, want %s", got, install)
	}
	for _, want := range []string{"cluster pre: stopped\n", "cluster pre: not running\n"} {
		out.Reset()
		if err := ws.Switch(ctx, Request{Name: "pre", Stop: true}); err != nil || out.String() != want {
			t.Errorf("stop: %q, %v; want %q", out.String(), err, want)
		}
	}
	if dir, _ := cm.DataDir("pre"); len(cluster.Processes(dir)) != 0 {
		t.Error("the server still runs")
	}
}

// TestMatrixDeps: the matrix gets the workspace's managers, its builder
// stops the same clusters' servers, the clusters log nothing of their
// own (the run prints its lines on Out) and ccache follows the
// configuration.
func TestMatrixDeps(t *testing.T) {
	var out bytes.Buffer
	ws, _ := newWorkspace(t, &out)
	ws.Config.CCache = false
	d, err := ws.MatrixDeps(nil, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Clusters.Log != nil || d.Builder.Servers != d.Clusters || d.Out != &out || d.Version != "v1" || !d.BuildOptions.NoCCache ||
		d.Worktrees.Root != ws.Config.WorktreesDir || d.Clusters.Root != ws.Config.DataDir || d.Builder.InstallRoot != ws.Config.InstallDir {
		t.Errorf("deps = %+v", d)
	}
	// Issue 14 item 13: as root, builds and pgbench run as the server's
	// account, never as root.
	if ws.Euid == 0 {
		u := d.Clusters.User
		if u == nil || u.UID == 0 || d.Builder.User != u || d.Workload.User != u {
			t.Errorf("as root: server account %+v, builder's %+v, pgbench's %+v; want one unprivileged account", u, d.Builder.User, d.Workload.User)
		}
	}
}

// TestSwitchPlantedInstall (issue 39, item 3): nobody (uid 65534) makes
// $PG_INSTALL_DIR/pi/bin/* before abtest ever builds pi. `switch -w pi`
// refuses it in one line (exit 2) and runs none of its programs (it ran
// them as postgres six times, then refused to stop the cluster it had
// started): no data directory, no cluster.
func TestSwitchPlantedInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installs are checked only when abtest is root")
	}
	t.Setenv("SUDO_UID", "")
	ws, _ := newWorkspace(t, &bytes.Buffer{})
	bin := filepath.Join(ws.Config.InstallDir, "pi", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Where any account the scripts run as can leave its uid.
	marks := testenv.SharedTempDir(t)
	os.Chmod(marks, 0o777)
	mark := filepath.Join(marks, "ran")
	for _, p := range []string{"postgres", "pg_ctl", "initdb", "pg_config"} {
		path := filepath.Join(bin, p)
		if err := os.WriteFile(path, []byte("#!/bin/sh\nid -u >>"+mark+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(path, 65534, 65534)
	}
	err := ws.Switch(context.Background(), Request{Name: "pi", Cluster: &ClusterSpec{PgssMax: 5000, MaxClients: 1}})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "uid 65534") || strings.Contains(err.Error(), "\n") {
		t.Errorf("switch -w pi over nobody's install = %v, want one line, exit 2, naming uid 65534", err)
	}
	if data, err := os.ReadFile(mark); err == nil {
		t.Errorf("nobody's programs ran as uid %q", data)
	}
	if _, err := os.Lstat(filepath.Join(ws.Config.DataDir, "pi")); err == nil {
		t.Errorf("a data directory was made for pi")
	}
}

// TestSwitchMatrixLabel: switch NAME where the matrix left a cluster of
// build NAME (m-NAME) and NAME has none names m-NAME in one refusal and
// creates nothing; with --recreate-cluster, or once NAME has a cluster,
// it is not refused on that account.
func TestSwitchMatrixLabel(t *testing.T) {
	ws, _ := newWorkspace(t, &bytes.Buffer{})
	own := filepath.Join(ws.Config.DataDir, "m-demo-base")
	os.MkdirAll(own, 0o700)
	os.WriteFile(filepath.Join(own, "PG_VERSION"), []byte("15\n"), 0o600)
	spec := ClusterSpec{PgssMax: 5000, MaxClients: 64}
	err := ws.Switch(context.Background(), Request{Name: "demo-base", Cluster: &spec})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "cluster m-demo-base (abtest env m-demo-base") || strings.Contains(err.Error(), "\n") {
		t.Errorf("switch demo-base: %v, want exit 2 naming m-demo-base", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Config.DataDir, "demo-base")); err == nil {
		t.Error("the refusal created demo-base's data directory")
	}
	recreate := spec
	recreate.Recreate = true
	if err := ws.matrixLabel(Request{Name: "demo-base", Cluster: &recreate}); err != nil {
		t.Errorf("--recreate-cluster: %v", err)
	}
	if err := ws.matrixLabel(Request{Name: "other", Cluster: &spec}); err != nil {
		t.Errorf("a name without a matrix cluster: %v", err)
	}
}
