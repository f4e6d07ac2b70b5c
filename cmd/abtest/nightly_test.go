package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/nightly"
)

// TestNightlyTwoNights simulates two nights on a local bare "remote" of
// the PostgreSQL 15 source: the first builds and records, the second
// compares with the first; history has two lines and the report a trend
// section; a concurrent run says it is already running. Two repeats
// cannot answer for TPS: allow_unknown = true makes such a night exit 0.
// The cells run open-loop at 500 transactions/s (rates = [500]): the
// proof is the nights' records, not a figure; closed-loop the test took
// 34.0 CPU-seconds alone.
func TestNightlyTwoNights(t *testing.T) {
	t.Parallel() // two repeats answer for no TPS figure
	testenv.RequireTools(t, "cc", "make")
	e := testbuild.PG15(t)
	testbuild.Own(t, "nightly") // its builds, n-<sha>, and their pruning
	// Both nights' trees are pg15-base's (night 2 adds an empty commit):
	// reuse_from lets them run on it, held shared meanwhile, where a
	// fresh machine built n-<sha> twice (62 CPU-seconds each, ccache hits).
	e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release})
	testenv.PGInstall(t)
	base := testenv.SharedTempDir(t)
	testpg.ManagerAt(t, filepath.Join(base, "nightly", "data")) // stops the clusters left running
	remote := filepath.Join(base, "remote.git")
	testenv.Git(t, base, "clone", "-q", "--bare", e.Source, remote)
	// The nights build from worktrees: their clone needs no checkout of
	// its own (a checkout of the tree is 2.3 CPU-seconds).
	src := filepath.Join(base, "src")
	testenv.Git(t, base, "clone", "-q", "--no-checkout", remote, src)
	branch := testenv.Git(t, remote, "symbolic-ref", "--short", "HEAD")

	root := filepath.Join(base, "nightly")
	cfg := filepath.Join(base, "nightly.toml")
	os.WriteFile(cfg, []byte(`source_dir = "`+src+`"
branch = "`+branch+`"
root = "`+root+`"
install_dir = "`+e.Installs+`"
reuse_from = ["pg15-base"]
keep = 5
[matrix]
workloads = ["select1"]
clients = [2]
pgss_max = [1000]
repeats = 2
duration = 2
rates = [500]
warmup = 0
[gate]
allow_unknown = true
`), 0o644)
	env := map[string]string{}

	code, out, stderr := abtest(t, env, "nightly", "--config", cfg)
	if code != 0 {
		t.Fatalf("night 1: exit %d\n%s\n%s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "abtest nightly ") || !strings.Contains(last, "report: ") {
		t.Errorf("night 1 summary line: %q", last)
	}
	hist := readHistory(t, filepath.Join(root, "history.jsonl"))
	if len(hist) != 1 || hist[0].Baseline != "" || hist[0].Medians["select1/c2/cpuall/r500/pgss.max=1000"]["tps"].Median <= 0 {
		t.Fatalf("history after night 1: %+v", hist)
	}

	// Nothing new: skipped.
	code, out, _ = abtest(t, env, "nightly", "--config", cfg)
	if code != 0 || !strings.Contains(out, "nothing to do") {
		t.Errorf("unchanged head: %d %q", code, out)
	}

	// Night 2's head: an empty commit on the remote's branch, as a push
	// would leave it (no clone to push from).
	next := testenv.Git(t, remote, "commit-tree", "-p", branch, "-m", "night 2: an empty commit", branch+"^{tree}")
	testenv.Git(t, remote, "update-ref", "refs/heads/"+branch, next)
	code, out, stderr = abtest(t, env, "nightly", "--config", cfg)
	if code != 0 && code != 1 {
		t.Fatalf("night 2: exit %d\n%s\n%s", code, out, stderr)
	}
	hist = readHistory(t, filepath.Join(root, "history.jsonl"))
	if len(hist) != 2 || hist[1].Baseline != hist[0].SHA || hist[1].SHA == hist[0].SHA {
		t.Fatalf("history after night 2: %+v", hist)
	}
	report, err := os.ReadFile(filepath.Join(hist[1].Run, "report.md"))
	if err != nil || !strings.Contains(string(report), "## Trend (last 2 nights)") || !strings.Contains(string(report), "trend-select1") {
		t.Errorf("night 2 report lacks the trend section: %v\n%.2000s", err, report)
	}
	// Only the builds of the last two nights are kept.
	ents, _ := os.ReadDir(filepath.Join(root, "worktrees"))
	if len(ents) != 2 {
		t.Errorf("worktrees kept: %d, want 2", len(ents))
	}

	unlock, err := nightly.Lock(root)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, stderr = abtest(t, env, "nightly", "--config", cfg, "--force")
	if code != 3 || !strings.Contains(stderr, "already running") {
		t.Errorf("concurrent nightly: %d %q", code, stderr)
	}
}

// readHistory reads history.jsonl, the nights' export.
func readHistory(t *testing.T, path string) []nightly.Night {
	t.Helper()
	data, _ := os.ReadFile(path)
	var out []nightly.Night
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var n nightly.Night
		if json.Unmarshal([]byte(l), &n) == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestNightlyExampleDryRun: -n nightly with nightly.example.toml on a
// host without its clone prints the night's plan and gate line before
// the one-line refusal naming source_dir; an empty remote or branch is
// refused in one line that says what to set.
func TestNightlyExampleDryRun(t *testing.T) {
	t.Parallel()
	example, _ := filepath.Abs(filepath.Join("..", "..", "nightly.example.toml"))
	code, out, stderr := abtest(t, nil, "-n", "nightly", "--config", example)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "source_dir /nonexistent-home/pg/source") ||
		!strings.Contains(out, "# plan: ") || !strings.Contains(out, "/r1/head\n") || !strings.Contains(out, "\n# gate: tps in ") {
		t.Errorf("-n nightly example: exit %d, stderr %q; want 2 after the plan\n%s", code, stderr, out)
	}
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	for key, line := range map[string]string{"remote": `remote = "origin"`, "branch": `branch = "master"`} {
		if !strings.Contains(string(data), "\n"+line+"\n") {
			t.Fatalf("nightly.example.toml has no line %s", line)
		}
		cfg := filepath.Join(t.TempDir(), "nightly.toml")
		os.WriteFile(cfg, []byte(strings.Replace(string(data), "\n"+line+"\n", "\n"+key+` = ""`+"\n", 1)), 0o644)
		code, out, stderr := abtest(t, nil, "-n", "nightly", "--config", cfg)
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, key+" is empty: set "+key+" = ") {
			t.Errorf("%s = \"\": exit %d, %q%q; want 2 and one line saying what to set", key, code, out, stderr)
		}
	}
}
