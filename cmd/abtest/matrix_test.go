package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/matrix"
)

// TestMain lets the test binary act as abtest itself (ABTEST_TEST_MAIN=1),
// so that tests can send it real signals.
func TestMain(m *testing.M) {
	if os.Getenv("ABTEST_TEST_MAIN") == "1" {
		os.Exit(processMain())
	}
	os.Exit(m.Run())
}

func matrixEnv(t *testing.T) map[string]string {
	testenv.PGInstall(t)
	base := testenv.SharedTempDir(t)
	// The matrix stops its own clusters, but not when a test fails
	// half-way: the manager's end stops the rest.
	testpg.ManagerAt(t, filepath.Join(base, "data"))
	return map[string]string{
		"PG_DATA_DIR":       filepath.Join(base, "data"),
		"PG_INSTALL_DIR":    filepath.Join(base, "install"),
		"PG_WORKTREES_DIR":  filepath.Join(base, "wt"),
		"PG_SOURCE_DIR":     filepath.Join(base, "src"),
		"BENCH_RESULTS_DIR": filepath.Join(base, "results"),
	}
}

func records(t *testing.T, dir string) []results.Record {
	t.Helper()
	recs, warnings, err := results.ReadRecords(dir)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("cells.jsonl: %v %v", err, warnings)
	}
	return recs
}

func TestMatrixBadInputExits2(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	env["BENCH_RESULTS_DIR"] = filepath.Join(t.TempDir(), "results")
	env["PG_INSTALL_DIR"] = filepath.Join(t.TempDir(), "install")
	notResults := t.TempDir()
	for _, args := range [][]string{
		{"-k", "HEAD"},
		{"-k", "a=HEAD,b=nosuchref"},
		{"-k", "a=HEAD,b=HEAD~1", "--shard", "3/2"},
		{"--resume", notResults},
		{"-k", "a=HEAD,b=HEAD~1", "-c", "0"},
		{"-k", "a=HEAD,b=HEAD~1", "-w", "nope"},
		{"-k", "a=HEAD,b=HEAD~1", "-w", "churn", "-M", "prepared"},
		{"-k", "a=HEAD,b=HEAD~1", "-b", "fast"},
	} {
		code, _, stderr := abtest(t, env, append([]string{"matrix"}, args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	code, _, stderr := abtest(t, env, "matrix", "-k", "HEAD")
	if !strings.Contains(stderr, "noise run") || code != 2 {
		t.Errorf("one commit: %q", stderr)
	}
	for _, d := range []string{env["PG_WORKTREES_DIR"], env["PG_INSTALL_DIR"], env["BENCH_RESULTS_DIR"]} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("bad input created %s", d)
		}
	}
	if entries, _ := os.ReadDir(notResults); len(entries) != 0 {
		t.Error("--resume on a non-results dir wrote into it")
	}
}

// TestMatrixAAOnPrebuiltInstall runs a tiny A/A matrix on Debian's
// binaries: all cells recorded, one build shared, commits alternating.
// The user's cluster "a" runs meanwhile (from switch): the matrix, whose
// baseline is labelled "a" too, measures on a cluster of its own and
// leaves "a" as it found it (see userCluster).
func TestMatrixAAOnPrebuiltInstall(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	user := startUserCluster(t, env, install, "a")
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "aa")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "a=install:"+install+",b=install:"+install,
		"-c", "2", "-w", "select1", "-r", "2", "-d", "1", "--warmup", "0", "-o", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs := records(t, out)
	if len(recs) != 4 {
		t.Fatalf("%d cells, want 4", len(recs))
	}
	want := []string{"a", "b", "b", "a"}
	for i, r := range recs {
		if r.Commit != want[i] || r.Status != "ok" || r.Metrics.Value("tps") <= 0 {
			t.Errorf("cell %d: %s %s tps %v (%s)", i, r.Commit, r.Status, r.Metrics.Value("tps"), r.Error)
		}
		// Orchestration overhead: wall time minus the measured second.
		t.Logf("cell %s: wall %.2f s, overhead %.2f s", r.Cell, r.WallS, r.WallS-1)
	}
	user.check(t, out, install)
	plan, err := results.ReadPlan(out)
	if err != nil || plan.Commits[0].Build != plan.Commits[1].Build {
		t.Errorf("A/A arms should share one build: %+v, %v", plan, err)
	}
	if !strings.Contains(stdout, "\nSummary\n") || strings.Contains(stdout, "## ") || !strings.Contains(stdout, "A/A:") || !strings.Contains(stdout, "report: "+filepath.Join(out, "report.md")) {
		t.Errorf("no report summary:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Error(err)
	}
	// The run is in the default store too.
	st, err := store.Open(context.Background(), filepath.Join(env["BENCH_RESULTS_DIR"], store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background())
	if err != nil || len(runs) != 1 || runs[0].Cells != 4 || !strings.Contains(stdout, "store: run ") {
		t.Fatalf("store after the run: %+v, %v\n%s", runs, err, stdout)
	}
	// Analysed from the store, the run is what its files say.
	fromStore := analyzeJSON(t, env, "analyze", "--store", st.Where(), "--run", runs[0].ID, "--format", "json")
	fromFiles := analyzeJSON(t, env, "analyze", out, "--format", "json")
	for _, k := range []string{"plan", "planned_cells", "commits", "metrics", "incomplete", "rows", "tiers", "changes", "geomeans", "regressions", "failed", "saturated", "aa"} {
		if a, b := fromStore[k], fromFiles[k]; a == nil || !reflect.DeepEqual(a, b) {
			t.Errorf("analyze --store: %s = %v\nthe files': %v", k, a, b)
		}
	}
}

// analyzeJSON runs abtest analyze … --format json and returns the
// report's fields.
func analyzeJSON(t *testing.T, env map[string]string, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := abtest(t, env, args...)
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
		t.Fatalf("%v: exit %d, %v\n%s", args, code, err, stderr)
	}
	return rep
}

// An unknown setting is refused in the server's words (exit 2, one line)
// and the run leaves no results directory behind.
func TestMatrixUnknownSettingLeavesNothing(t *testing.T) {
	t.Parallel()
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "badguc")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "a=install:"+install+",b=install:"+install,
		"-c", "1", "-w", "select1", "-r", "1", "-d", "1", "--warmup", "0", "-o", out, "--set", "nosuch_guc=1")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "nosuch_guc") {
		t.Errorf("exit %d, stderr %q; want 2 naming the setting\n%s", code, stderr, stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run left %s", out)
	}
}

// A store that cannot be reached fails the run (exit 3) in one line
// before its first cell (issue 24 item 6): nothing is run, nothing made.
func TestMatrixStoreUnreachable(t *testing.T) {
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "nostore")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "a=install:"+install+",b=install:"+install,
		"-c", "1", "-w", "select1", "-r", "1", "-d", "1", "--warmup", "0", "-o", out, "--sample-every", "1s",
		"--store", "postgres://abtest@127.0.0.1:1/none?connect_timeout=2")
	if code != 3 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "unreachable") {
		t.Errorf("exit %d, stderr %q; want 3 and one line saying unreachable\n%s", code, stderr, stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a run refused for its store left %s", out)
	}
}

// TestMatrixInterruptAndResume sends SIGINT to a running matrix in the
// measurement of its third cell: within 10 s no server of the run is
// left, cells.jsonl holds only complete lines, and --resume runs exactly
// the missing cells, keeping the records it found. It is also the fault
// suite's fifth point (see TestFaultInterruptAtFivePoints), open-loop as
// the others (plumbingRate: 27.3 CPU-seconds alone in a closed loop,
// 5.4 at 500 transactions/s).
func TestMatrixInterruptAndResume(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "int")
	args := []string{"matrix", "-k", "a=install:" + install + ",b=install:" + install, "-c", "2", "-w", "select1",
		"-r", "3", "-d", "2", "--warmup", "0", "-R", plumbingRate, "-o", out, "--sample-every", "1s"}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ABTEST_TEST_MAIN=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt in the middle of the third cell.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n := countLines(filepath.Join(out, results.CellsFile)); n >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	interrupted := time.Now()
	err := cmd.Wait()
	if err == nil {
		t.Fatalf("an interrupted matrix exited 0:\n%s", output.String())
	}
	if !strings.Contains(output.String(), "abtest matrix --resume "+out) {
		t.Errorf("no resume hint:\n%s", output.String())
	}
	dataDir := filepath.Join(env["PG_DATA_DIR"], matrix.ClusterName("a"))
	for {
		_, running := cluster.PID(dataDir)
		if !running && len(cluster.Processes(dataDir)) == 0 {
			break
		}
		if time.Since(interrupted) > 10*time.Second {
			t.Fatal("a server of the run is still there 10 s after SIGINT")
		}
		time.Sleep(100 * time.Millisecond)
	}
	first := records(t, out)
	if len(first) < 2 || len(first) >= 6 {
		t.Fatalf("%d cells before the interrupt; want 2 to 5", len(first))
	}
	code, stdout, stderr := abtest(t, env, "matrix", "--resume", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	all := exactlyOnce(t, out)
	if len(all) != 6 {
		t.Errorf("%d cells after resume, want 6", len(all))
	}
	for i, r := range first {
		if all[i].Cell != r.Cell || all[i].Seq != r.Seq {
			t.Errorf("record %d changed by the resume: %s -> %s", i, r.Cell, all[i].Cell)
		}
	}
	noServerLeft(t, env["PG_DATA_DIR"])
	if !strings.Contains(stdout, "resuming: "+itoa(len(first))+" of 6 cells done") {
		t.Errorf("resume output:\n%s", stdout)
	}
	// Plan flags with --resume are refused, by name.
	code, _, stderr = abtest(t, env, "matrix", "--resume", out, "-k", "a=install:"+install+",b=install:"+install, "-c", "4", "-w", "select1", "-r", "3", "-d", "2", "--warmup", "0")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--commits, --clients, --workloads, --duration, --repeats") {
		t.Errorf("plan flags on resume: %d %q", code, stderr)
	}
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		if json.Valid(sc.Bytes()) {
			n++
		}
	}
	return n
}

func itoa(n int) string {
	data, _ := json.Marshal(n)
	return string(data)
}

// TestMatrixPerf records a profile in every cell and reports where the
// time went. The cells run open-loop at 2 000 transactions/s: the proof
// is a profile of the workload's functions in each cell and the report's
// sections, not a saturated server (closed loop: 25.3 CPU-seconds alone;
// at 2 000/s 7.8).
func TestMatrixPerf(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	env := matrixEnv(t)
	install := testenv.PGInstall(t)
	if err := perfCheck(); err != nil {
		testenv.Require(t, false, "perf: %v", err)
	}
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "perf")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "a=install:"+install+",b=install:"+install,
		// A 2 s window in the middle of 6 s: perf -a can take a second or
		// more to start on a loaded host, and must still see the workload.
		"-c", "2", "-w", "select1", "-r", "1", "-d", "6", "--warmup", "0", "-R", "2000", "--perf", "--perf-window", "2", "-o", out, "--sample-every", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range records(t, out) {
		if r.Perf == nil || r.Perf.Profile == "" || r.Perf.Samples == 0 || r.Perf.Tx <= 0 {
			t.Errorf("cell %s: perf %+v", r.Cell, r.Perf)
			continue
		}
		if _, err := os.Stat(filepath.Join(out, r.Perf.Profile)); err != nil {
			t.Error(err)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "## Where the time went") || !strings.Contains(string(report), "diff profile:") {
		t.Errorf("report lacks the profile section: %v\n%.3000s", err, report)
	}
}
