package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/store"
)

// TestShardAuto: --shard auto takes I/N from a Kubernetes Indexed Job or
// a Slurm array, through the injected environment; with neither it is
// bad input naming the variables it looked for.
func TestShardAuto(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "ABTEST_SHARD_COUNT": "4"}, "1/4"},
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "ABTEST_SHARD_COUNT": "4"}, "4/4"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"}, "1/3"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "3/3"},
		{map[string]string{"JOB_COMPLETION_INDEX": "4", "ABTEST_SHARD_COUNT": "4"}, "error"},
		{map[string]string{"JOB_COMPLETION_INDEX": "0"}, "error"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "error"},
	} {
		s, err := matrix.ParseShardEnv("auto", func(k string) string { return tc.env[k] })
		got := s.String()
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("%v: %s (%v), want %s", tc.env, got, err, tc.want)
		}
	}
	env, _ := setup(t)
	code, _, stderr := abtest(t, env, "-n", "matrix", "-k", "master,old=HEAD~1", "--seed", "1", "--shard", "auto")
	for _, v := range []string{"JOB_COMPLETION_INDEX", "ABTEST_SHARD_COUNT", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"} {
		if code != 2 || !strings.Contains(stderr, v) {
			t.Errorf("--shard auto without an engine: exit %d, %q; want 2 naming %s", code, stderr, v)
		}
	}
	if code, _, stderr := abtest(t, env, "-n", "matrix", "-k", "master,old=HEAD~1", "--shard", "1/2"); code != 2 || !strings.Contains(stderr, "--seed") {
		t.Errorf("--shard without --seed: exit %d, %q; want 2 asking for --seed", code, stderr)
	}
}

// TestShardExamples: the Kubernetes and Slurm examples in docs/shards are
// what they claim (an Indexed Job whose count matches, one pod per node;
// a contiguous array), every abtest command in them takes its flags, and
// each shard's matrix command dry-runs as its own shard of one run.
func TestShardExamples(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	patch := filepath.Join(t.TempDir(), "mine.patch")
	os.WriteFile(patch, []byte(aPatch), 0o644)

	k8s := readDoc(t, "kubernetes.yaml")
	for _, want := range []string{"completionMode: Indexed", "podAntiAffinity:", "topologyKey: kubernetes.io/hostname", "--fail-on-regression", "--shard auto"} {
		if !strings.Contains(k8s, want) {
			t.Errorf("kubernetes.yaml lacks %q", want)
		}
	}
	n := atoi(t, field(t, k8s, `completions: (\d+)`))
	if c := atoi(t, field(t, k8s, `name: ABTEST_SHARD_COUNT\s+value: "(\d+)"`)); c != n {
		t.Errorf("ABTEST_SHARD_COUNT %d, completions %d", c, n)
	}
	vars := map[string]string{"SEED": field(t, k8s, `name: SEED\s+value: "(\d+)"`), "ABTEST_SHARD_COUNT": strconv.Itoa(n)}
	for i := range n {
		vars["JOB_COMPLETION_INDEX"] = strconv.Itoa(i)
		dryRunShard(t, "kubernetes.yaml", k8s, vars, env, patch, fmt.Sprintf("shard %d/%d", i+1, n))
	}

	runStoreGate(t, k8s, vars["SEED"], n)

	slurm := readDoc(t, "slurm.sh")
	lo, hi := atoi(t, field(t, slurm, `#SBATCH --array=(\d+)-\d+`)), atoi(t, field(t, slurm, `#SBATCH --array=\d+-(\d+)`))
	vars = map[string]string{"SEED": field(t, slurm, `SEED=\$\{SEED:-(\d+)\}`), "SLURM_ARRAY_TASK_MIN": strconv.Itoa(lo), "SLURM_ARRAY_TASK_COUNT": strconv.Itoa(hi - lo + 1)}
	for id := lo; id <= hi; id++ {
		vars["SLURM_ARRAY_TASK_ID"] = strconv.Itoa(id)
		dryRunShard(t, "slurm.sh", slurm, vars, env, patch, fmt.Sprintf("shard %d/%d", id-lo+1, hi-lo+1))
	}
}

// runStoreGate runs the Kubernetes example's gate for real: n shards of a
// run made with seed, the last on another kind of node, are imported
// into a store the test makes; the gate's `abtest analyze --store` finds
// the run by its seed and analyses it from the store alone: the patch's
// 10 % loss on churn fails it (exit 1), and the report says the shards
// ran on two kinds of host.
func runStoreGate(t *testing.T, doc, seed string, n int) {
	t.Helper()
	var hosts []host.Host
	for i := 1; i <= n; i++ {
		hosts = append(hosts, host.Host{Hostname: fmt.Sprintf("node%d", i), CPU: "Synthetic", NProc: 4, MemoryMB: 8192, Kernel: "6.1"})
	}
	hosts[n-1].CPU, hosts[n-1].NProc = "Other", 16
	dirs, err := storetest.Shards(t.TempDir(), int64(atoi(t, seed)), hosts)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), store.DefaultFile)
	if code, out, stderr := abtest(t, nil, append([]string{"store", "import", "--store", db}, dirs...)...); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, stderr)
	}
	vars := map[string]string{"ABTEST_STORE": db, "SEED": seed}
	ran := false
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "abtest analyze ") {
			continue
		}
		ran = true
		code, out, stderr := abtest(t, nil, shellWords(line, vars)[1:]...)
		words := strings.Join(strings.Fields(out), " ")
		if code != 1 || !strings.Contains(words, "churn/c16/cpuall/pgss.max=5000") || !strings.Contains(words, "mixed host kinds") || !strings.Contains(words, "4/4 on node4: Other × 16") {
			t.Errorf("kubernetes.yaml: %q: exit %d, want 1 (a regression on churn) and a report that names the two host kinds\n%s%s", line, code, out, stderr)
		}
	}
	if !ran {
		t.Error("kubernetes.yaml: no abtest analyze command")
	}
}

// aPatch applies to setup's master.
const aPatch = "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 2;\n+int a = 3;\n"

// dryRunShard runs every abtest line of doc with vars: matrix with -n,
// the others only as far as their flags.
func dryRunShard(t *testing.T, name, doc string, vars, env map[string]string, patch, want string) {
	t.Helper()
	all := map[string]string{"PATCH": patch, "ABTEST_STORE": "postgres://bench@db/abtest", "HOME": "/home/bench"}
	for k, v := range vars {
		all[k] = v
	}
	for k, v := range env {
		all[k] = v
	}
	ran := false
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "abtest ") {
			continue
		}
		args := shellWords(line, all)[1:]
		if args[0] != "matrix" {
			parsed(t, args...)
			continue
		}
		ran = true
		code, out, stderr := abtest(t, all, append([]string{"-n"}, args...)...)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "seed "+all["SEED"]) {
			t.Errorf("%s: %q: exit %d, %s; want a plan of %s\n%s", name, line, code, stderr, want, out)
		}
	}
	if !ran {
		t.Errorf("%s: no abtest matrix command", name)
	}
}

// shellWords splits a shell command line of plain and double-quoted
// words, expanding $VAR and ${VAR} from vars.
func shellWords(line string, vars map[string]string) []string {
	var words []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, os.Expand(cur.String(), func(k string) string { return vars[k] }))
			}
			cur.Reset()
			in = false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, os.Expand(cur.String(), func(k string) string { return vars[k] }))
	}
	return words
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "shards", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func field(t *testing.T, doc, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("no %s", re)
	}
	return m[1]
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
