package perf_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/demo"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/workload"
)

func requirePerf(t *testing.T) {
	t.Helper()
	err := perf.Check()
	testenv.Require(t, err == nil, "perf: %v", err)
}

// profileUnderLoad starts a cluster of install, runs w on it and records
// the middle of the run.
func profileUnderLoad(t *testing.T, install, wl string, pgssMax int, keepRaw bool, hz int) (*perf.Result, string, float64) {
	t.Helper()
	m := testpg.Manager(t)
	st, err := m.Start(context.Background(), "p", cluster.Options{Install: install, PgssMax: pgssMax, MaxClients: 8})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := workload.Builtin(wl)
	r := &workload.Runner{Proc: &proc.Runner{}, Getenv: func(string) string { return "" }}
	done := make(chan *workload.Result, 1)
	go func() {
		res, err := r.Run(context.Background(), workload.Spec{Workload: w, Clients: 2, Duration: 6 * time.Second,
			Conn:    workload.Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database},
			Pgbench: filepath.Join(install, "bin", "pgbench"), SampleEvery: time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(1500 * time.Millisecond)
	dir := t.TempDir()
	res, err := perf.Record(context.Background(), &proc.Runner{}, perf.Options{
		Processes: func() []int { return cluster.Processes(st.DataDir) }, Duration: 3 * time.Second, Hz: hz, Raw: filepath.Join(dir, "perf.data"), KeepRaw: keepRaw, Log: filepath.Join(dir, "perf.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	wres := <-done
	tps := 0.0
	if wres != nil {
		tps = wres.Metrics["tps"]
	}
	return res, dir, tps
}

// TestRecordPrebuilt profiles a Debian PostgreSQL 15 cluster running
// select1: go tool pprof reads the profile, its top functions are
// postgres's, and it has as many samples as perf report counts.
func TestRecordPrebuilt(t *testing.T) {
	requirePerf(t)
	install := testenv.PGInstall(t)
	res, dir, _ := profileUnderLoad(t, install, "select1", 5000, true, 0)
	file := filepath.Join(dir, "profile.pb.gz")
	if err := profiles.Write(res.Profile, file); err != nil {
		t.Fatal(err)
	}
	// The whole table, not the top 40: Debian's binaries have no frame
	// pointers, so which postgres functions rank high varies from run to
	// run (CI once saw base_yyparse but none of a fixed short list).
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=0", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	top := string(out)
	var found []string
	for _, fn := range []string{"PostgresMain", "exec_simple_query", "pq_getbyte", "ExecutorStart", "PostmasterMain", "ReadyForQuery", "pq_flush",
		"base_yyparse", "AllocSetAlloc", "hash_search_with_hash_value", "LWLockRelease", "LWLockAcquire", "palloc", "palloc0", "MemoryContextAllocZeroAligned",
		"LockReleaseAll", "WaitEventSetWait", "expression_tree_walker", "secure_read", "core_yylex", "standard_ExecutorStart", "PortalRun"} {
		if strings.Contains(top, " "+fn+"\n") {
			found = append(found, fn)
		}
	}
	if len(found) < 3 {
		t.Errorf("want at least 3 postgres functions in the profile, found %v:\n%.4000s", found, top)
	}
	// The exact number for the cluster's processes (perf records the
	// whole system): perf report's "Samples" line rounds to 1K.
	pids := make([]string, len(res.PIDs))
	for i, p := range res.PIDs {
		pids[i] = strconv.Itoa(p)
	}
	full, err := exec.Command("perf", "report", "-i", filepath.Join(dir, "perf.data"), "--stdio", "--pid", strings.Join(pids, ","), "--sort", "pid,comm", "-F", "sample,pid,comm").CombinedOutput()
	if err != nil {
		t.Fatalf("perf report: %v\n%s", err, full)
	}
	n := 0.0
	for _, l := range strings.Split(string(full), "\n") {
		f := strings.Fields(l)
		// Only postgres's samples: a pid freed during the recording can
		// be another program's by its end (perf.Record keeps postgres's).
		if len(f) >= 3 && !strings.HasPrefix(l, "#") && f[len(f)-1] == "postgres" {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				n += v
			}
		}
	}
	if n == 0 {
		t.Fatalf("no sample count in perf report:\n%.2000s", full)
	}
	got := float64(len(res.Profile.Sample))
	t.Logf("profile %d samples (%s), %d unparsed, perf report %.0f", len(res.Profile.Sample), res.Event, res.Unparsed, n)
	if got < 0.8*n || got > 1.2*n || n == 0 {
		t.Errorf("profile has %.0f samples, perf report %.0f: want within 20%%; perf report by pid:\n%.3000s", got, n, full)
	}
}

// TestCompareDemoPatch profiles churn on the PostgreSQL 15 build and on
// the build with the demo patch: the per-transaction deltas name
// pg_stat_statements' functions among the top ones. The patch moves
// about 1 % of the CPU, and other load on the host (the suite's other
// packages) can bury that in one pair of 3 s windows (a make test run saw
// kernel functions and LWLockRelease above entry_cmp at z 2.6): one more
// pair is profiled before the test fails.
func TestCompareDemoPatch(t *testing.T) {
	requirePerf(t)
	e := testbuild.PG15(t)
	base := e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release}).Info.Install
	patch := filepath.Join(t.TempDir(), demo.PatchName)
	os.WriteFile(patch, demo.Patch, 0o644)
	patched := e.Build(t, "pg15-patch", "base", []string{patch}, build.Options{Type: build.Release}).Info.Install
	var top []string
	for try := 1; try <= 2; try++ {
		rb, rn, tb, tn := profileDemoPair(t, base, patched)
		if _, err := profiles.Diff(rb.Profile, rn.Profile, tb*3, tn*3); err != nil {
			t.Fatal(err)
		}
		var found bool
		if top, found = pgssAmongTop(t, rb, rn, tb, tn); found {
			return
		}
		t.Logf("try %d: no pg_stat_statements function among the top deltas: %v", try, top)
	}
	t.Errorf("no pg_stat_statements function among the top deltas in two tries: %v", top)
}

// profileDemoPair profiles churn on both builds, at 3 999 Hz so that the
// functions the patch moves have hundreds of samples, not ten, and
// returns the profiles and the runs' TPS.
func profileDemoPair(t *testing.T, base, patched string) (rb, rn *perf.Result, tb, tn float64) {
	t.Helper()
	rb, _, tb = profileUnderLoad(t, base, "churn", 100, false, 3999)
	rn, _, tn = profileUnderLoad(t, patched, "churn", 100, false, 3999)
	if tb == 0 || tn == 0 {
		t.Fatal("no throughput")
	}
	return rb, rn, tb, tn
}

// pgssAmongTop lists the ten functions whose time per transaction
// changed most significantly (transactions in each 3 s window, from the
// runs' TPS) and reports whether one is pg_stat_statements'.
func pgssAmongTop(t *testing.T, rb, rn *perf.Result, tb, tn float64) ([]string, bool) {
	t.Helper()
	ds := profiles.Compare(rb.Profile, rn.Profile, tb*3, tn*3)
	// By |Z|: the changes sampling noise explains least first (a big
	// function moves by many samples from noise alone).
	sort.SliceStable(ds, func(i, j int) bool { return math.Abs(ds[i].Z) > math.Abs(ds[j].Z) })
	var top []string
	for i, d := range ds {
		if i == 10 {
			break
		}
		top = append(top, d.Name)
	}
	t.Logf("top deltas by significance: %v", top)
	for _, d := range ds {
		if strings.Contains(d.Name, "entry_") || strings.Contains(d.Name, "qsort") || strings.Contains(d.Name, "pgss") || strings.Contains(d.Name, "qtext") {
			t.Logf("  %s: %.1f -> %.1f ns/tx (z %.1f)", d.Name, d.Base, d.New, d.Z)
		}
	}
	for _, n := range top {
		if strings.Contains(n, "entry_") || strings.Contains(n, "pgss") || strings.Contains(n, "pg_stat_statements") || strings.Contains(n, "qsort") {
			return top, true
		}
	}
	return top, false
}
