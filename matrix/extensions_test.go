package matrix

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// extDeps are prebuiltDeps with a builder (as root, building as the
// server account) over a new install root.
func extDeps(t *testing.T) (*Deps, string) {
	deps, pg := prebuiltDeps(t)
	cm := deps.Clusters
	deps.Builder = &build.Builder{InstallRoot: filepath.Join(testenv.SharedTempDir(t), "installs"), Run: cm.Run, Servers: cm, User: cm.User}
	return deps, pg
}

// TestExtensionPreloadSetup (issue 26): contrib/pg_prewarm of Debian's
// PostgreSQL 15 source package, built with PGXS into a copy of Debian's
// install that lacks it, preloaded in every cluster, CREATE EXTENSION'd
// by setup SQL that records a setting of the cell's configuration; a
// second matrix builds nothing. Its eight cells run open-loop
// (plumbing): alone 7.3 CPU-s against 14.1 closed-loop (the
// extension's build included), 14-15 s of wall (load 2.4).
func TestExtensionPreloadSetup(t *testing.T) {
	t.Parallel()
	ext := extensionTree(t, filepath.Join(testenv.PG15Source(t), "contrib", "pg_prewarm"))
	deps, pg := extDeps(t)
	install := testpg.CopyInstallPGXS(t, pg, "fp-ext")
	lib := filepath.Join(install, "lib", "pg_prewarm.so")
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	sql := filepath.Join(t.TempDir(), "setup.sql")
	os.WriteFile(sql, []byte("CREATE EXTENSION IF NOT EXISTS pg_prewarm;\nCREATE TABLE IF NOT EXISTS setup_log (v text);\nINSERT INTO setup_log VALUES ('${work_mem}');\n"), 0o644)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Repeats: 1, Duration: time.Second, Protocol: "simple",
		Axes:       plumbing("settings", "work_mem=4MB,8MB"),
		Extensions: []string{ext}, Preload: []string{"pg_prewarm"}, SetupSQL: sql,
	}
	run := func() (string, *results.Plan) {
		t.Helper()
		plan, err := Prepare(context.Background(), deps, req)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		deps.Out, deps.Progress = &out, nil
		dir := filepath.Join(testenv.SharedTempDir(t), "r")
		if err := Run(context.Background(), deps, plan, dir); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		stored, _ := results.ReadPlan(dir)
		return out.String(), stored
	}
	t0 := time.Now()
	out, plan := run()
	first := time.Since(t0)
	info, err := build.ReadExtensionInfo(install, "pg_prewarm")
	if err != nil || !strings.Contains(out, "build a+pg_prewarm (extension "+ext+")") || !strings.Contains(out, "build a+pg_prewarm: built") {
		t.Fatalf("no build of the extension (%v):\n%s", err, out)
	}
	if _, err := os.Stat(lib); err != nil {
		t.Errorf("the build did not install pg_prewarm.so: %v", err)
	}
	t.Logf("extension build %.1f s (CC=%s); first matrix %.1f s", info.Seconds, info.CC, first.Seconds())
	for _, c := range plan.Commits {
		if len(c.Extensions) != 1 || c.Extensions[0].Fingerprint != info.Fingerprint || c.Extensions[0].SHA == "" || c.Extensions[0].Tree == "" {
			t.Errorf("commit %s: extensions %+v; want pg_prewarm's provenance", c.Label, c.Extensions)
		}
	}
	checkCluster(t, deps, install)

	t0 = time.Now()
	out, _ = run()
	t.Logf("second matrix %.1f s", time.Since(t0).Seconds())
	if !strings.Contains(out, "build a+pg_prewarm (extension "+ext+"): up to date") || strings.Contains(out, "pg_prewarm: built") {
		t.Errorf("the second matrix built the extension again:\n%s", out)
	}
	if again, _ := build.ReadExtensionInfo(install, "pg_prewarm"); again == nil || !again.BuiltAt.Equal(info.BuiltAt) {
		t.Errorf("the record changed: %+v", again)
	}
}

// extensionTree copies the extension source src into a git repository
// of the caller's, named as src is: the tests' PostgreSQL source may be
// another account's (and its directories 0777), which abtest refuses
// to build as root.
func extensionTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v %s", src, err, out)
	}
	if out, err := exec.Command("chmod", "-R", "go-w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	testenv.Git(t, dst, "init", "-q")
	testenv.Commit(t, dst, "extension", nil)
	return dst
}

// checkCluster starts the matrix's cluster of build a again and checks
// that pg_prewarm is preloaded, its extension exists, and the setup SQL
// ran once per work_mem value (the two commits share the cluster).
func checkCluster(t *testing.T, deps *Deps, install string) {
	t.Helper()
	ctx := context.Background()
	st, err := deps.Clusters.Start(ctx, ClusterName("a"), cluster.Options{Install: install, Preload: []string{"pg_prewarm"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var preload, ext string
	if err := conn.QueryRow(ctx, "SHOW shared_preload_libraries").Scan(&preload); err != nil || preload != "pg_stat_statements,pg_prewarm" {
		t.Errorf("shared_preload_libraries = %q (%v)", preload, err)
	}
	if err := conn.QueryRow(ctx, "SELECT extname FROM pg_extension WHERE extname = 'pg_prewarm'").Scan(&ext); err != nil {
		t.Errorf("CREATE EXTENSION pg_prewarm did not run: %v", err)
	}
	rows, _ := conn.Query(ctx, "SELECT v FROM setup_log")
	vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(vals)
	if err != nil || !slices.Equal(vals, []string{"4MB", "8MB"}) {
		t.Errorf("setup_log %v (%v); want the setup SQL run once per work_mem value", vals, err)
	}
}

// TestExtensionBadInput: an extension directory without a Makefile and
// a missing setup SQL file are refused by Prepare (exit 2); a build
// that fails is exit 3 naming its log; setup SQL the server refuses is
// refused by the preflight before the first cell (exit 2, one line
// naming the file and line, nothing recorded); a declared metric's
// query the server refuses stops the run after the first cell (exit 3,
// one line naming the metric); no server left.
// Open-loop (plumbing): alone 3.4 CPU-s against 4.8 closed-loop,
// 5 s of wall (load 2.0-2.2).
func TestExtensionBadInput(t *testing.T) {
	t.Parallel()
	deps, pg := extDeps(t)
	install := testpg.CopyInstallPGXS(t, pg, "fp-bad")
	base := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1, Duration: time.Second, Protocol: "simple",
	}
	ctx := context.Background()
	req := base
	req.Extensions = []string{t.TempDir()}
	if _, err := Prepare(ctx, deps, req); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "no Makefile") {
		t.Errorf("no Makefile: %v", err)
	}
	req = base
	req.SetupSQL = "/nonexistent/setup.sql"
	if _, err := Prepare(ctx, deps, req); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "/nonexistent/setup.sql") {
		t.Errorf("missing setup SQL: %v", err)
	}
	req.SetupSQL = filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(req.SetupSQL, []byte("SELECT ${nosuch};"), 0o644)
	if _, err := Prepare(ctx, deps, req); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "${nosuch}") {
		t.Errorf("unknown ${name}: %v", err)
	}

	broken := filepath.Join(t.TempDir(), "broken")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, "Makefile"), []byte("all:\n\t@echo 'broken.c:1: error: simulated' >&2; exit 1\nclean:\n\t@true\n"), 0o644)
	req = base
	req.Extensions = []string{broken}
	plan, err := Prepare(ctx, deps, req)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(ctx, deps, plan, filepath.Join(testenv.SharedTempDir(t), "r"))
	log := deps.Builder.ExtensionLog("a", "broken")
	if data, _ := os.ReadFile(log); exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), log) || !strings.Contains(string(data), "simulated") {
		t.Errorf("a failed build: %v; want exit 3 naming %s (which holds %q)", err, log, data)
	}

	req = base
	req.SetupSQL = filepath.Join(t.TempDir(), "bad.sql")
	os.WriteFile(req.SetupSQL, []byte("SELECT 1;\nSELECT * FROM nosuch_table;\n"), 0o644)
	plan, err = Prepare(ctx, deps, req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	want := "setup SQL " + req.SetupSQL + " line 2"
	if err := Run(ctx, deps, plan, dir); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nosuch_table") ||
		!strings.Contains(err.Error(), "preflight before the first cell") || strings.Contains(err.Error(), "\n") {
		t.Errorf("refused setup SQL: %v (exit %d); want exit 2 from the preflight, one line naming %q and nosuch_table", err, exitcode.Code(err), want)
	}
	if recs, _, _ := results.ReadRecords(dir); len(recs) != 0 {
		t.Errorf("refused setup SQL: %d cells recorded; want none", len(recs))
	}
	for _, b := range []string{"a", "b"} {
		if ps := cluster.Processes(filepath.Join(deps.Clusters.Root, ClusterName(b))); len(ps) > 0 {
			t.Errorf("cluster of %s: processes %v left running", b, ps)
		}
	}

	req = base
	file := filepath.Join(t.TempDir(), "badmetric.sql")
	os.WriteFile(file, []byte("-- abtest:script\nSELECT 1;\n-- abtest:metric broken_ms unit=ms\nSELECT nosuch FROM nowhere\n"), 0o644)
	req.Workloads = []string{"file:" + file}
	userSQLStops(t, deps, req, "metric broken_ms: its query failed", `"nowhere"`)
}

// userSQLStops runs req, whose SQL the server refuses, and checks that
// the run stops after its first cell (exit 3, the error naming want and
// detail), records that cell failed, and leaves no server running.
func userSQLStops(t *testing.T, deps *Deps, req Request, want, detail string) {
	t.Helper()
	ctx := context.Background()
	plan, err := Prepare(ctx, deps, req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	err = Run(ctx, deps, plan, dir)
	if exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), detail) || !strings.Contains(err.Error(), "stopped after 1 of 2 cells") || strings.Contains(err.Error(), "\n") {
		t.Errorf("run: %v (exit %d); want exit 3, one line naming %q and %q, stopped after 1 of 2 cells", err, exitcode.Code(err), want, detail)
	}
	recs, _, _ := results.ReadRecords(dir)
	if len(recs) != 1 || recs[0].Status != results.StatusFailed || !strings.Contains(recs[0].Error, want) {
		t.Errorf("records %+v; want the one failed cell naming %q", recs, want)
	}
	for _, b := range []string{"a", "b"} {
		if ps := cluster.Processes(filepath.Join(deps.Clusters.Root, ClusterName(b))); len(ps) > 0 {
			t.Errorf("cluster of %s: processes %v left running", b, ps)
		}
	}
}

// TestSetupFollowsPreload (issue 40 item 7): setup SQL runs again on a
// reused cluster whenever what it ran under changes, not only its text:
// a test extension that, like pg_cron, loads only when preloaded, its
// setup SQL calling it. Run again as is, the setup is skipped; with
// another setting, or another build of the extension, it runs again;
// without --preload (which used to skip it and leave the cluster's
// earlier state in place), it runs and fails in the preflight, exit 2,
// one line that says to add --preload needs_preload. -n, before and
// after the extension's build, says "to build" and then "cached".
func TestSetupFollowsPreload(t *testing.T) {
	t.Parallel()
	ext := extensionTree(t, filepath.Join("testdata", "needs_preload"))
	deps, pg := extDeps(t)
	install := testpg.CopyInstallPGXS(t, pg, "fp-preload")
	sql := filepath.Join(t.TempDir(), "setup.sql")
	os.WriteFile(sql, []byte("CREATE EXTENSION IF NOT EXISTS needs_preload;\nSELECT needs_preload_ping();\nCREATE TABLE IF NOT EXISTS setup_runs (n int);\nINSERT INTO setup_runs VALUES (1);\n"), 0o644)
	base := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1, Duration: time.Second, Protocol: "simple",
		Extensions: []string{ext}, Preload: []string{"needs_preload"}, SetupSQL: sql,
	}
	ctx := context.Background()
	dryRun := func(req Request) string {
		t.Helper()
		plan, err := Prepare(ctx, deps, req)
		if err != nil {
			t.Fatal(err)
		}
		dry := *deps
		b := *deps.Builder
		run := *deps.Proc
		run.DryRun, run.Trace = true, io.Discard
		b.Run, dry.Proc = &run, &run
		dry.Builder = &b
		var out strings.Builder
		PrintPlan(&out, plan, t.TempDir(), EstimateBuilds(ctx, &dry, plan))
		return out.String()
	}
	run := func(req Request) (string, error) {
		t.Helper()
		plan, err := Prepare(ctx, deps, req)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		deps.Out, deps.Progress = &out, nil
		err = Run(ctx, deps, plan, filepath.Join(testenv.SharedTempDir(t), "r"))
		return out.String(), err
	}
	const ran = "ran setup SQL setup.sql"
	if out := dryRun(base); !strings.Contains(out, "# extension needs_preload into build ") || !strings.Contains(out, ": to build with PGXS") {
		t.Errorf("-n before the build: want the extension to build:\n%s", out)
	}
	out, err := run(base)
	if err != nil || !strings.Contains(out, ran) {
		t.Fatalf("first run: %v; want the setup SQL run:\n%s", err, out)
	}
	info, _ := build.ReadExtensionInfo(install, "needs_preload")
	if out := dryRun(base); info == nil || !strings.Contains(out, ": cached (fingerprint "+text.Short(info.Fingerprint)+")") {
		t.Errorf("-n after the build (record %+v): want the extension cached:\n%s", info, out)
	}
	if out, err := run(base); err != nil || strings.Contains(out, ran) {
		t.Errorf("the same run again: %v; want no setup SQL:\n%s", err, out)
	}
	other := base
	other.Axes = plumbing("settings", "work_mem=8MB")
	if out, err := run(other); err != nil || !strings.Contains(out, ran) {
		t.Errorf("another setting: %v; want the setup SQL run again:\n%s", err, out)
	}
	// Another build of the extension (its tree changed).
	os.WriteFile(filepath.Join(ext, "README"), []byte("changed\n"), 0o644)
	if out, err := run(other); err != nil || !strings.Contains(out, ran) || !strings.Contains(out, "needs_preload: built") {
		t.Errorf("another build of the extension: %v; want it built and the setup SQL run again:\n%s", err, out)
	}
	bare := other
	bare.Preload = nil
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	plan, err := Prepare(ctx, deps, bare)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(ctx, deps, plan, dir)
	t.Logf("without --preload: %v", err)
	if msg := fmt.Sprint(err); exitcode.Code(err) != exitcode.Usage || !strings.Contains(msg, "preflight before the first cell") ||
		!strings.Contains(msg, "can only be loaded via shared_preload_libraries") || !strings.Contains(msg, "add --preload needs_preload") || strings.Contains(msg, "\n") {
		t.Errorf("without --preload: %v (exit %d); want exit 2 from the preflight, one line saying to add --preload needs_preload", err, exitcode.Code(err))
	}
	if recs, _, _ := results.ReadRecords(dir); len(recs) != 0 {
		t.Errorf("without --preload: %d cells recorded; want none", len(recs))
	}
	st, err := deps.Clusters.Start(ctx, ClusterName("a"), cluster.Options{Install: install, Preload: []string{"needs_preload"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM setup_runs").Scan(&n); err != nil || n != 3 {
		t.Errorf("setup_runs holds %d rows (%v); want 3: the first run, another setting, another build", n, err)
	}
}
