package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestHistoryAnnotateCLI: 60 synthetic nights with steps at 15, 30 and
// 45, imported twice (once in effect); the step at 30 annotated through
// the CLI; history shows three change points, one expected.
func TestHistoryAnnotateCLI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 60, map[int]float64{15: -8, 30: 6, 45: -7})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	code, out, stderr := abtest(t, env, append([]string{"store", "import"}, dirs...)...)
	if code != 0 || strings.Count(out, "10 cells stored") != 60 {
		t.Fatalf("import: %d\n%s%s", code, out, stderr)
	}
	code, out, _ = abtest(t, env, append([]string{"store", "import"}, dirs...)...)
	if code != 0 || strings.Count(out, "0 cells stored, 10 already there") != 60 {
		t.Errorf("import again: %d\n%s", code, out)
	}
	code, out, stderr = abtest(t, env, "annotate", "--commit", storetest.NightSHA(30)[:8], "--metric", "tps", "--configuration", "select1/c16", "--note", "expected: new default")
	if code != 0 || !strings.Contains(out, storetest.NightSHA(30)) {
		t.Fatalf("annotate: %d %s%s", code, out, stderr)
	}
	code, out, stderr = abtest(t, env, "history", "--metric", "tps", "--configuration", "select1/c16")
	if code != 0 || !strings.HasPrefix(out, "# tps select1/c16/cpuall: 60 points, 3 change points (2 unexpected)") || strings.Count(out, "<- CHANGE") != 2 || !strings.Contains(out, "(expected: expected: new default)") {
		t.Errorf("history: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = abtest(t, env, "history", "--metric", "tps", "--configuration", "select1/c16", "--json")
	var ser store.Series
	if code != 0 || json.Unmarshal([]byte(out), &ser) != nil || len(ser.Points) != 60 || len(ser.Unexpected()) != 2 {
		t.Errorf("history --json: %d %d points %+v", code, len(ser.Points), ser.ChangePoints)
	}
	code, out, _ = abtest(t, env, "history", "--metric", "tps", "--configuration", "select1/c16", "--since", "2025-02-10", "--json")
	if json.Unmarshal([]byte(out), &ser); code != 0 || len(ser.Points) != 60-40 {
		t.Errorf("--since 2025-02-10: %d, %d points", code, len(ser.Points))
	}
	code, out, _ = abtest(t, env, "dashboard", "-o", filepath.Join(root, "site"))
	if code != 0 || !strings.HasPrefix(out, "60 runs, 2 trends") {
		t.Errorf("dashboard: %d %s", code, out)
	}
}

func TestAnnotateAndStoreBadInput(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dirs, _ := storetest.Nights(filepath.Join(root, "nights"), 2, nil)
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	abtest(t, env, append([]string{"store", "import"}, dirs...)...)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"annotate", "--commit", "nosuch", "--metric", "tps", "--note", "x"}, 2, "nosuch"},
		{[]string{"annotate", "--commit", "head", "--metric", "tps"}, 2, "--note"},
		{[]string{"history", "--metric", "tps", "--configuration", "churn/c1"}, 2, "churn/c1: store: not found: no stored configuration is or starts with it; stored: select1/c16"},
		{[]string{"history", "--metric", "p99", "--configuration", "select1/c16"}, 2, "(did you mean latency_p99_ms?); stored metrics: latency_p99_ms, tps"},
		{[]string{"history", "--metric", "tsp", "--configuration", "select1"}, 2, "--metric tsp: store: not found: no stored cell has it (did you mean tps?)"},
		{[]string{"annotate", "--commit", "head", "--metric", "deallocs", "--note", "x"}, 2, "--metric deallocs"},
		{[]string{"annotate", "--commit", "head", "--metric", "tps", "--configuration", "x<script>", "--note", "x"}, 2, "--configuration x<script>"},
		{[]string{"history", "--metric", "tps", "--configuration", "select1/c16", "--since", "soon"}, 2, "--since"},
		{[]string{"store", "import", filepath.Join(root, "nope")}, 2, "nope"},
		{[]string{"history", "--metric", "tps", "--configuration", "select1/c16", "--store", "postgres://abtest@127.0.0.1:1/x?connect_timeout=2"}, 3, "unreachable"},
		{[]string{"dashboard", "-o", filepath.Join(root, "s"), "--store", "postgres://abtest@127.0.0.1:1/x?connect_timeout=2"}, 3, "unreachable"},
		{[]string{"analyze", "--run", "ffffffff"}, 2, "ffffffff"},
		{[]string{"analyze", "--run", "seed:99"}, 2, "--seed 99"},
		{[]string{"analyze", "--run", "seed:x"}, 2, "seed:N"},
		{[]string{"analyze", "--run", "seed:1", dirs[0]}, 2, "not both"},
		{[]string{"analyze", "--store", "postgres://abtest@127.0.0.1:1/x?connect_timeout=2", "--run", "1"}, 3, "unreachable"},
	} {
		code, _, stderr := abtest(t, env, tc.args...)
		if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestImportAndAnnotateRefuseUnshowableText: store import of a results
// directory whose commit label has a control character, and annotate
// with such a note, exit 2 with one line naming the field; nothing is
// stored (the good directory given first neither). Markup is text: the
// pages escape it.
func TestImportAndAnnotateRefuseUnshowableText(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dirs[1], results.PlanFile)
	data, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plan, bytes.Replace(data, []byte(`"label": "head"`), []byte(`"label": "head\u001b[2J"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	code, out, stderr := abtest(t, env, "store", "import", dirs[0], dirs[1])
	if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "commits[1].label") || !strings.Contains(stderr, plan) || strings.Contains(stderr, "\x1b") {
		t.Errorf("store import with a control character in a label: exit %d, stdout %q, stderr %q; want 2, nothing imported and one line naming the label and %s", code, out, stderr, plan)
	}
	if code, out, _ = abtest(t, env, "history", "--metric", "tps", "--configuration", "select1/c16"); code != 2 {
		t.Errorf("history after a refused import: exit %d, want 2 (nothing stored)\n%s", code, out)
	}
	if code, out, stderr = abtest(t, env, "store", "import", dirs[0]); code != 0 {
		t.Fatalf("store import: %d %s%s", code, out, stderr)
	}
	for _, tc := range []struct {
		note string
		code int
	}{
		{"expected\x1b[31m", 2},
		{strings.Repeat("n", store.MaxNote+1), 2},
		{`<img src=x onerror=window.__xss=3>`, 0},
		{"expected:\tfaster\nby design", 0},
	} {
		code, _, stderr := abtest(t, env, "annotate", "--commit", storetest.NightSHA(0)[:8], "--metric", "tps", "--note", tc.note)
		if code != tc.code || (code == 2 && (strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--note"))) {
			t.Errorf("annotate --note %.40q: exit %d, stderr %q; want %d", tc.note, code, stderr, tc.code)
		}
	}
	code, out, _ = abtest(t, env, "history", "--metric", "tps", "--configuration", "select1/c16", "--json")
	var ser store.Series
	if code != 0 || json.Unmarshal([]byte(out), &ser) != nil || len(ser.Annotations) != 2 {
		t.Errorf("history --json: exit %d, annotations %+v; want the two notes taken", code, ser.Annotations)
	}
}
