package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestMain doubles as the importing process of
// TestStorePostgresConcurrentShards: with ABTEST_STORE_CHILD set, the
// test binary imports the directories it names into the store and exits.
func TestMain(m *testing.M) {
	if url := os.Getenv("ABTEST_STORE_CHILD"); url != "" {
		os.Exit(child(url, strings.Split(os.Getenv("ABTEST_STORE_DIRS"), string(os.PathListSeparator))))
	}
	os.Exit(m.Run())
}

func child(url string, dirs []string) int {
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer s.Close()
	for _, d := range dirs {
		st, err := s.Import(ctx, d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Printf("%s: %d new, %d present\n", d, st.Cells, st.Present)
	}
	return 0
}

// fixture copies results/testdata/v1 (a real run's shape: two commits, a
// patch, four configurations, five repeats) to a new directory.
func fixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.PlanFile, results.CellsFile} {
		data, err := os.ReadFile(filepath.Join("..", "results", "testdata", "v1", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openSQLite(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "results", store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startPostgres starts a PostgreSQL 15 cluster with abtest's cluster
// package, stopped when the test ends, and returns a store URL for a
// fresh database in it.
func startPostgres(t testing.TB) string {
	t.Helper()
	install := testenv.PGInstall(t)
	m := testpg.Manager(t)
	st, err := m.Start(context.Background(), "store", cluster.Options{Install: install, MaxClients: 20})
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	return fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=%s&sslmode=disable", cluster.Database, st.SocketDir, st.Port, cluster.SuperUser)
}

func count(t *testing.T, s *store.Store, table string) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkRoundTrip imports the fixture twice and compares what the store
// has with the files and with the analysis of the directory.
func checkRoundTrip(t *testing.T, s *store.Store) {
	ctx := context.Background()
	dir := fixture(t)
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := results.ReadPlan(dir)
	recs, _, _ := results.ReadRecords(dir)
	if st.Cells != len(recs) || st.Present != 0 || st.Run != store.RunID(plan) {
		t.Errorf("first import: %+v, want %d new cells of run %s", st, len(recs), store.RunID(plan))
	}

	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	r := runs[0]
	if r.Baseline != "base" || r.Cells != len(recs) || !r.Created.Equal(plan.Created) || len(r.Commits) != 2 {
		t.Errorf("run = %+v", r)
	}
	for i, c := range r.Commits {
		want := plan.Commits[i]
		if c.Label != want.Label || c.SHA != want.SHA || c.Fingerprint != want.Fingerprint || c.BuildType != want.BuildType ||
			c.Identity != want.Identity() || len(c.Patches) != len(want.Patches) {
			t.Errorf("commit %d = %+v, want %+v", i, c, want)
		}
	}
	if len(r.Shards) != 1 || !reflect.DeepEqual(r.Shards[0].Host.Host, plan.Host) || r.Shards[0].Dir != dir {
		t.Errorf("shards = %+v, want host %+v in %s", r.Shards, plan.Host, dir)
	}

	// Every metric of every cell, as written.
	rows, err := s.DB().Query("SELECT c.cell, m.metric, m.value FROM metrics m JOIN cells c ON c.id = m.cell_id")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for rows.Next() {
		var cell, metric string
		var v float64
		rows.Scan(&cell, &metric, &v)
		got[cell+" "+metric] = v
	}
	rows.Close()
	want := 0
	for _, rec := range recs {
		for m, v := range rec.Metrics.All() {
			want++
			if g, ok := got[rec.Cell+" "+m]; !ok || g != v {
				t.Errorf("%s %s = %v (stored: %v), want %v", rec.Cell, m, g, ok, v)
			}
		}
	}
	if len(got) != want {
		t.Errorf("%d metric values stored, %d in the files", len(got), want)
	}

	checkFromStore(t, s, r.ID, dir)

	// Import again: nothing new, nothing doubled.
	tables := []string{"runs", "run_shards", "commits", "hosts", "configurations", "cells", "metrics"}
	before := map[string]int{}
	for _, tb := range tables {
		before[tb] = count(t, s, tb)
	}
	st, err = s.Import(ctx, dir)
	if err != nil || st.Cells != 0 || st.Present != len(recs) {
		t.Errorf("second import: %+v, %v; want 0 new, %d present", st, err, len(recs))
	}
	for _, tb := range tables {
		if n := count(t, s, tb); n != before[tb] {
			t.Errorf("%s: %d rows after the second import, %d after the first", tb, n, before[tb])
		}
	}
}

// checkFromStore: the run analysed from the store alone (by a prefix of
// its id) is the analysis of its files: the same report, plan, rows,
// verdicts, changes and failures, with one more warning that says where
// it came from.
func checkFromStore(t *testing.T, s *store.Store, run string, dirs ...string) {
	t.Helper()
	in, err := history.Input(context.Background(), s, run[:6])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := analyze(t, dirs...)
	if len(rep.Rows) == 0 || len(rep.Warnings) != len(files.Warnings)+1 ||
		!slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "analysed from the store") }) {
		t.Errorf("%d rows; warnings from the store %q, from the files %q", len(rep.Rows), rep.Warnings, files.Warnings)
	}
	got, want := reportJSON(t, rep), reportJSON(t, files)
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("report %s from the store:\n%v\nfrom the files:\n%v", k, got[k], want[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("report fields from the store %d, from the files %d", len(got), len(want))
	}
}

// reportJSON is rep's JSON by top-level field, without its warnings.
func reportJSON(t *testing.T, rep *analysis.Report) map[string]any {
	t.Helper()
	var buf strings.Builder
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "warnings")
	return m
}

func analyze(t *testing.T, dirs ...string) *analysis.Report {
	t.Helper()
	in, err := analysis.Load(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestStoreRoundTripSQLite(t *testing.T) {
	checkRoundTrip(t, openSQLite(t))
}

// TestSQLitePageSize: a new SQLite store has 64 KiB pages in WAL mode; a
// store made with SQLite's 4 KiB pages keeps them, and imports and reads
// back as a new one does.
func TestSQLitePageSize(t *testing.T) {
	pages := func(s *store.Store, want int) {
		t.Helper()
		var size int
		var mode string
		if err := s.DB().QueryRow("SELECT page_size, journal_mode FROM pragma_page_size, pragma_journal_mode").Scan(&size, &mode); err != nil || size != want || mode != "wal" {
			t.Errorf("page size %d, journal mode %q, %v; want %d, wal", size, mode, err, want)
		}
	}
	pages(openSQLite(t), 65536)
	path := filepath.Join(t.TempDir(), store.DefaultFile)
	db, err := sql.Open("sqlite", path)
	if err == nil {
		_, err = db.Exec("PRAGMA journal_mode=WAL; CREATE TABLE made_before (a INTEGER)")
		db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pages(s, 4096)
	checkRoundTrip(t, s)
}

func TestStoreRoundTripPostgres(t *testing.T) {
	url := startPostgres(t)
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkRoundTrip(t, s)
}

// shards writes one run of 12 configurations as n shard directories, on
// n nodes of one kind.
func shards(t *testing.T, n int) []string {
	t.Helper()
	var hosts []host.Host
	for i := 1; i <= n; i++ {
		hosts = append(hosts, host.Host{Hostname: fmt.Sprintf("node%d", i), CPU: "Synthetic", NProc: 4, MemoryMB: 8192, Kernel: "6.1"})
	}
	dirs, err := storetest.Shards(testenv.SharedTempDir(t), 42, hosts)
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestStorePostgresConcurrentShards: two processes import the shards of
// one run into one PostgreSQL store at once, each all of them in
// opposite orders, so every cell is raced for: each is stored once, and
// the verdicts are those of the merged run.
func TestStorePostgresConcurrentShards(t *testing.T) {
	url := startPostgres(t)
	dirs := shards(t, 4)
	rev := append([]string(nil), dirs...)
	sort.Sort(sort.Reverse(sort.StringSlice(rev)))
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i, order := range [][]string{dirs, rev} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "ABTEST_STORE_CHILD="+url, "ABTEST_STORE_DIRS="+strings.Join(order, string(os.PathListSeparator)))
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
		t.Logf("process %d:\n%s", i, outs[i])
	}
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want, wantMetrics int
	for _, d := range dirs {
		recs, _, _ := results.ReadRecords(d)
		want += len(recs)
		for _, r := range recs {
			wantMetrics += r.Metrics.Len()
		}
	}
	var cells, distinct int
	s.DB().QueryRow("SELECT count(*), count(DISTINCT cell) FROM cells").Scan(&cells, &distinct)
	if cells != want || distinct != want {
		t.Errorf("%d cells stored (%d distinct), the shards have %d", cells, distinct, want)
	}
	if n := count(t, s, "metrics"); n != wantMetrics {
		t.Errorf("%d metric values stored, the shards have %d", n, wantMetrics)
	}
	runs, _ := s.Runs(context.Background())
	if len(runs) != 1 || len(runs[0].Shards) != len(dirs) {
		t.Fatalf("runs: %+v", runs)
	}
	checkFromStore(t, s, runs[0].ID, dirs...)
}

func TestStoreNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.DefaultFile)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("INSERT INTO schema_version (version, what, applied_at) VALUES (?, 'future', '')", store.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = store.Open(context.Background(), path)
	if !errors.Is(err, store.ErrNewerSchema) || exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
		t.Errorf("newer schema: %v (exit %d)", err, exitcode.Code(err))
	}
	if err != nil && !strings.Contains(err.Error(), fmt.Sprint(store.SchemaVersion+1)) {
		t.Errorf("the error should name the store's version: %v", err)
	}
}

func TestStoreUnreachable(t *testing.T) {
	for _, loc := range []string{
		"postgres://abtest@127.0.0.1:1/none?connect_timeout=2&sslmode=disable",
		"/proc/self/no/such/abtest.db",
	} {
		_, err := store.Open(context.Background(), loc)
		if !errors.Is(err, store.ErrUnreachable) || exitcode.Code(err) != exitcode.Infra || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (exit %d); want exit 3 and one line", loc, err, exitcode.Code(err))
		}
	}
	_, err := store.Open(context.Background(), "postgres://u:secret@127.0.0.1:1/x?connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("the password shows in %v", err)
	}
}

// TestHistoryNightsStepsAndAnnotation: 60 nights with steps at nights
// 15, 30 and 45; the one at 30 is annotated. History finds all three,
// marks 30 as expected with its note, and only 15 and 45 are unexpected.
func TestHistoryNightsStepsAndAnnotation(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	dirs, err := storetest.Nights(t.TempDir(), 60, map[int]float64{15: -8, 30: 6, 45: -7})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := s.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := s.ResolveCommit(ctx, storetest.NightSHA(30)[:10])
	if err != nil || sha != storetest.NightSHA(30) {
		t.Fatalf("resolve: %s, %v", sha, err)
	}
	if err := s.Annotate(ctx, store.Annotation{SHA: sha, Metric: "tps", Note: "expected: new default"}); err != nil {
		t.Fatal(err)
	}
	ser, err := history.Trend(ctx, s, store.HistoryQuery{Metric: "tps", Config: "select1/c16"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ser.Points) != 60 || ser.Config != storetest.Config.ID() {
		t.Fatalf("%d points of %s, want 60 of %s", len(ser.Points), ser.Config, storetest.Config.ID())
	}
	for i, p := range ser.Points {
		if p.SHA != storetest.NightSHA(i) || p.N != 5 || p.Commit != "head" {
			t.Errorf("point %d = %+v", i, p)
		}
	}
	var at []int
	for _, cp := range ser.ChangePoints {
		at = append(at, cp.Index)
	}
	if fmt.Sprint(at) != "[15 30 45]" {
		t.Fatalf("change points at %v, want [15 30 45]: %+v", at, ser.ChangePoints)
	}
	if cp := ser.ChangePoints[1]; !cp.Expected || cp.Note != "expected: new default" || cp.DeltaPct < 4 {
		t.Errorf("the annotated step: %+v", cp)
	}
	un := ser.Unexpected()
	if len(un) != 2 || un[0].Index != 15 || un[1].Index != 45 || un[0].DeltaPct > -5 {
		t.Errorf("unexpected change points: %+v", un)
	}
	again, _ := history.Trend(ctx, s, store.HistoryQuery{Metric: "tps", Config: "select1/c16"})
	if fmt.Sprint(again.ChangePoints) != fmt.Sprint(ser.ChangePoints) {
		t.Errorf("not deterministic: %+v then %+v", ser.ChangePoints, again.ChangePoints)
	}
	recent, _ := history.Trend(ctx, s, store.HistoryQuery{Metric: "tps", Config: "select1/c16", Since: ser.Points[40].Time})
	if len(recent.Points) != 20 {
		t.Errorf("since night 40: %d points", len(recent.Points))
	}
}

func TestStoreResolveErrors(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	dirs, _ := storetest.Nights(t.TempDir(), 3, nil)
	for _, d := range dirs {
		s.Import(ctx, d)
	}
	if sha, err := s.ResolveCommit(ctx, "head"); err != nil || sha != storetest.NightSHA(2) {
		t.Errorf("label head: %s, %v; want the latest night's", sha, err)
	}
	for _, ref := range []string{"nosuch", "deadbeef"} {
		if _, err := s.ResolveCommit(ctx, ref); !errors.Is(err, store.ErrUnknown) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if _, err := s.ResolveCommit(ctx, storetest.BaseSHA[:6]); err != nil {
		t.Errorf("the baseline's sha prefix: %v", err)
	}
	if _, err := s.History(ctx, store.HistoryQuery{Metric: "tps", Config: "churn/c16"}); !errors.Is(err, store.ErrUnknown) || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("unknown config: %v", err)
	}
}
