package main

// The suite's four longest tests of this package (issue 27), declared
// last and the longest last: go test gives a package's waiting parallel
// tests their slots about last-declared first (Go 1.26; twelve parallel
// tests of a toy package started in the order 0, 11, 10, …, 1 in three
// runs of three), and these are the critical path of a fresh suite,
// where each builds PostgreSQL trees one after another: declared early,
// the two bisect tests waited 239–245 s of a warm run (and 535 s of a
// fresh one) for a slot behind quicker tests. The order costs nothing
// if go test changes it.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/bisect"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/demo"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestMatrixFromSourcePG15 is the end-to-end run: the PostgreSQL
// 15 tree built twice (base, and base with the demo patch), 3 commits ×
// 2 workloads × 3 repeats with an A/A arm on base's build, alternating,
// and the patch visible in pgss_deallocs on churn. One client count:
// plans of several are the -n tests' proof, and a second count doubled
// the suite's longest matrix (36 cells, 158 s). The A/A arm gates nothing
// (aaGatesNothing, issue 13). Three repeats are the least a gated run
// may plan (r_min); at 3 s a cell they need not answer for TPS
// (--allow-unknown), and may call the patch worse on churn (exit 1),
// never the A/A arm. Cells of 2 s saved 19 s alone (82.6 s against
// 63.6 s at load 5) but, in a warm suite (s13c), left a baseline
// cell of select1 without its p99 and maximum (fewer than 100
// back-to-back pairs): the A/A arm's latency rows were incomplete.
// The cells run open-loop at 500 transactions/s into a table of 100
// statements, full within the warm-up: a closed loop's windows burned
// both cores for what proves no figure (alone: 12.9 CPU-s against
// 136.1, both 77 s of wall, same machine), and the evictions are then
// the commit's (base 427, patch 213 in one run), not the throughput's.
func TestMatrixFromSourcePG15(t *testing.T) {
	t.Parallel() // its proofs are counts and the plan, no TPS figure
	testenv.RequireTools(t, "cc", "make")
	env := matrixEnv(t)
	e := testbuild.PG15(t)
	patch := filepath.Join(t.TempDir(), "demo.patch")
	os.WriteFile(patch, demo.Patch, 0o644)
	// The builds the matrix plans, made (or found) first, as other tests
	// make them: the matrix finds them up to date and builds nothing,
	// so the test holds them shared and other tests run beside it.
	release := build.Options{Type: build.Release}
	builds := []*build.Result{e.Build(t, "pg15-base", "base", nil, release), e.Build(t, "pg15-patch", "base", []string{patch}, release)}
	defer func() {
		for _, b := range builds {
			if info, err := build.ReadInfo(b.Info.Install); err != nil || !info.BuiltAt.Equal(b.Info.BuiltAt) {
				t.Errorf("the matrix built %s again, under other tests' servers (%v)", b.Info.Name, err)
			}
		}
	}()
	env["PG_SOURCE_DIR"] = e.Source
	env["PG_WORKTREES_DIR"] = e.Worktrees
	env["PG_INSTALL_DIR"] = e.Installs
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "e2e")
	code, stdout, stderr := abtest(t, env, "matrix", "-k", "base,patch=base+"+patch+",aa=base", "-W", "pg15-%c",
		"-c", "2", "-w", "select1,churn", "-d", "3", "-r", "3", "-m", "100", "-R", "500", "--warmup", "1", "-o", out, "--fail-on-regression", "--allow-unknown")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs := records(t, out)
	if len(recs) != 3*2*3 {
		t.Fatalf("%d cells, want 18", len(recs))
	}
	plan, _ := results.ReadPlan(out)
	for i, r := range recs {
		if r.Cell != plan.Cells[i].ID || r.Status != "ok" {
			t.Errorf("cell %d = %s (%s %s), plan says %s", i, r.Cell, r.Status, r.Error, plan.Cells[i].ID)
		}
	}
	for i := 0; i+2 < len(recs); i += 3 {
		if a, b, c := recs[i].Commit, recs[i+1].Commit, recs[i+2].Commit; a == b || b == c || a == c {
			t.Errorf("cells %d to %d are %s, %s, %s: commits do not alternate", i, i+2, a, b, c)
		}
	}
	aaGatesNothing(t, out, stdout)
	dealloc := map[string]float64{}
	for _, r := range recs {
		if r.Workload == "churn" {
			dealloc[r.Commit] += r.Metrics.Value("pgss_deallocs")
		}
	}
	t.Logf("churn deallocs: base %.0f, patch %.0f", dealloc["base"], dealloc["patch"])
	if dealloc["base"] == dealloc["patch"] || dealloc["base"] == 0 {
		t.Errorf("pgss_deallocs on churn: base %v, patch %v; want them to differ", dealloc["base"], dealloc["patch"])
	}
	if plan.Commits[0].Fingerprint == "" || plan.Commits[0].Fingerprint == plan.Commits[1].Fingerprint {
		t.Errorf("build fingerprints in plan.json: %+v", plan.Commits)
	}
}

// TestBenchInstructions: bench --instructions on an abtest cluster
// (Debian's PostgreSQL 15) stops it, prints select1's instructions per
// transaction with the method and its top functions, and leaves it
// stopped.
func TestBenchInstructions(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	env, install := clusterEnv(t)
	if code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install, "-p", "auto"); code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	out := filepath.Join(testenv.SharedTempDir(t), "instr")
	code, stdout, stderr := abtest(t, env, "bench", "--instructions", "--cluster", "pg", "-w", "select1", "-t", "500", "-o", out)
	t.Logf("%s%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"select1", "instr/tx (valgrind-", "500 transactions", "top functions, instructions per transaction", "stopped cluster pg"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	st, err := (&cluster.Manager{Root: env["PG_DATA_DIR"]}).ReadState("pg")
	if err != nil {
		t.Fatal(err)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Error("the cluster runs after bench --instructions")
	}
}

// TestBisectInstructions: in a chain of five commits on the PostgreSQL
// 15 tree, the third adds a busy loop to exec_simple_query and the
// others change nothing compiled; bisect --metric instructions_per_tx
// with one repeat per step names exactly that commit, every step called
// from one instruction cell per arm. The loop adds 2 503 instructions
// to select1's 34 549 a transaction, exact at any N: 100 transactions a
// run, not 500, spare each of the 6 cells 3 × 400 transactions under
// valgrind (about 1 ms each).
func TestBisectInstructions(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	patch, err := filepath.Abs("../../workload/testdata/slow_exec_simple_query.patch")
	if err != nil {
		t.Fatal(err)
	}
	env, good, want := bisectChain(t, "instr", func(src string) {
		testenv.Git(t, src, "apply", patch)
		testenv.Git(t, src, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-am", "slow exec_simple_query")
	})
	reuse := reuseBuilds(t, "pg15-slow-exec", patch)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "bisect")
	start := time.Now()
	code, stdout, stderr := abtest(t, env, append([]string{"bisect", "--good", good, "--bad", "HEAD", "-w", "select1", "-c", "1",
		"--metric", "instructions_per_tx", "-r", "1", "--max-repeats", "1", "--instr-transactions", "100", "-o", out}, reuse...)...)
	t.Logf("bisect: %s wall\n%s", time.Since(start).Round(time.Second), stdout)
	if code != 0 {
		t.Fatalf("bisect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("bisect did not name %s", want)
	}
	var st bisect.State
	data, _ := os.ReadFile(filepath.Join(out, "bisect.json"))
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Steps {
		if s.Repeats != 1 || s.Verdict == bisect.Inconclusive {
			t.Errorf("step %+v: want one repeat and a verdict", s)
		}
		arms := map[string]int{}
		for _, r := range records(t, s.Dir) {
			t.Logf("step %s: cell %s: %.0f instructions/tx, %.1f s", s.SHA[:8], r.Cell, r.Metrics.Value("instructions_per_tx"), r.WallS)
			arms[r.Commit]++
			if r.Instr == nil || r.Instr.Transactions != 100 {
				t.Errorf("step %s: cell %s counted %+v, want 100 transactions (--instr-transactions)", s.SHA, r.Cell, r.Instr)
			}
		}
		if len(arms) != 3 || arms["good"] != 1 || arms["step"] != 1 || arms["bad"] != 1 {
			t.Errorf("step %s: cells per arm %v, want one of good, step and bad", s.SHA, arms)
		}
	}
}

// TestBisectDemoPatch: in a chain of five commits on the PostgreSQL 15
// tree, the third applies the demo patch and the others change nothing
// that matters; bisect on churn's pgss_deallocs names exactly that commit
// after at most ⌈log2 5⌉ + 1 = 4 steps, and a resumed finished bisect
// runs nothing. pgss_deallocs counts evictions in a 1 s window, so in
// a closed loop it moved with the throughput, which the other bisect's
// valgrind cells beside it take (a step inconclusive at 8 repeats,
// medians good 33, step 19, bad 5 at load 7–11, doubled them), and the
// windows burned both cores. At an offered 500 transactions/s into a
// table of 100 entries (filled within the warm-up) the count is the
// commit's (an eviction frees 10 entries, 20 with the patch), and the
// test took 107 s and 20.8 CPU-s alone where the closed loop took
// 110 s and 192 CPU-s (user 95, system 97; same machine, alone).
func TestBisectDemoPatch(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	testenv.PGInstall(t)
	env, good, want := bisectChain(t, "demo", func(src string) {
		patch := filepath.Join(t.TempDir(), demo.PatchName)
		os.WriteFile(patch, demo.Patch, 0o644)
		testenv.Git(t, src, "-c", "user.name=T", "-c", "user.email=t@e", "am", "-q", patch)
	})
	patch := filepath.Join(t.TempDir(), demo.PatchName)
	os.WriteFile(patch, demo.Patch, 0o644)
	reuse := reuseBuilds(t, "pg15-patch", patch)
	out := filepath.Join(env["BENCH_RESULTS_DIR"], "bisect")
	args := append([]string{"bisect", "--good", good, "--bad", "HEAD", "-w", "churn", "-c", "2", "-m", "100", "--metric", "pgss_deallocs",
		"-r", "8", "--max-repeats", "16", "-d", "1", "--warmup", "1", "--rate", "500", "-o", out}, reuse...)
	code, stdout, _ := abtest(t, env, append([]string{"-n"}, args...)...)
	if code != 0 || !strings.Contains(stdout, "5 first-parent commits") {
		t.Errorf("bisect -n: %d\n%s", code, stdout)
	}
	code, stdout, stderr := abtest(t, env, args...)
	if code != 0 {
		t.Fatalf("bisect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("bisect did not name %s:\n%s", want, stdout)
	}
	var st bisect.State
	data, _ := os.ReadFile(filepath.Join(out, "bisect.json"))
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	for _, s := range st.Steps {
		built[s.SHA] = true
	}
	if len(built) > 4 {
		t.Errorf("%d steps built, want at most 4", len(built))
	}
	// Resuming a finished bisect runs nothing and gives the same answer.
	code, stdout, _ = abtest(t, env, args...)
	if code != 0 || !strings.Contains(stdout, "resuming") || !strings.Contains(stdout, "first bad commit: "+want) {
		t.Errorf("resume: %d\n%s", code, stdout)
	}
}
