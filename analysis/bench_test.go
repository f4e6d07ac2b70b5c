package analysis

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// benchstat builds golang.org/x/perf/cmd/benchstat at the version go.mod
// requires.
func benchstat(t *testing.T) string {
	t.Helper()
	testenv.RequireTools(t, "go")
	bin := filepath.Join(t.TempDir(), "benchstat")
	if out, err := exec.Command("go", "build", "-o", bin, "golang.org/x/perf/cmd/benchstat").CombinedOutput(); err != nil {
		t.Fatalf("building benchstat: %v\n%s", err, out)
	}
	return bin
}

// TestBenchstatReadsBench: benchstat reads the per-commit files without
// flags and the single stream with -col commit, and prints one table per
// metric with the commits as columns (without flags, a "vs base" column
// each); -row /clients groups by clients.
func TestBenchstatReadsBench(t *testing.T) {
	r, dir := fixtureReport(t)
	paths, err := r.WriteBenchFiles(filepath.Join(dir, "bench"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "base.bench" {
		t.Fatalf("bench files %v", paths)
	}
	bs := benchstat(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bs, args...)
		cmd.Dir = filepath.Join(dir, "bench")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("benchstat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	units := []string{"tx/s", "sec/tx", "pgss-deallocs", "statements/tx"}
	tables := func(name, out, a, b string) {
		t.Helper()
		// A table's header: │ base │ patch │ over │ unit │ … vs base │.
		headers := regexp.MustCompile(`(?m)^ *│ *`+regexp.QuoteMeta(a)+` *│ *`+regexp.QuoteMeta(b)+` *│$`).FindAllString(out, -1)
		if len(headers) != len(units) {
			t.Errorf("%s: %d tables with columns %s, %s; want one per metric (%d):\n%s", name, len(headers), a, b, len(units), out)
		}
		for _, u := range units {
			if !regexp.MustCompile(`│ +` + regexp.QuoteMeta(u) + ` +│`).MatchString(out) {
				t.Errorf("%s: no table of %s:\n%s", name, u, out)
			}
		}
		if strings.Contains(out, "commit:") {
			t.Errorf("%s: the commits split tables:\n%s", name, out)
		}
	}
	plain := run("base.bench", "patch.bench")
	t.Logf("benchstat base.bench patch.bench:\n%s", plain)
	tables("plain", plain, "base.bench", "patch.bench")
	// Issue 23: with no flags, each table compares patch with base.
	if n := strings.Count(plain, " vs base "); n != len(units) {
		t.Errorf("plain: %d \"vs base\" columns, want one per metric (%d):\n%s", n, len(units), plain)
	}
	// The patch's 5 % TPS loss on churn shows as a significant change
	// that benchstat knows to be worse (better=higher).
	if !regexp.MustCompile(`workload=churn/clients=8/cpus=all/pgss.max=1000 .*-\d\.\d+% \(p=0\.000`).MatchString(plain) {
		t.Errorf("no churn TPS change in:\n%s", plain)
	}
	if !strings.Contains(plain, "61.99µ") {
		t.Errorf("latency not in seconds, scaled to µ: %s", plain)
	}

	var one strings.Builder
	if err := r.WriteBench(&one); err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "report.bench", one.String())
	if err := writeFile(filepath.Join(dir, "bench", "all.bench"), one.String()); err != nil {
		t.Fatal(err)
	}
	tables("-col commit", run("-col", "commit", "all.bench"), "base", "patch")

	byClients := run("-row", "/clients", "-filter", "/workload:churn", "base.bench", "patch.bench")
	for _, row := range []string{"2", "8"} {
		if !regexp.MustCompile(`(?m)^` + row + ` +\d`).MatchString(byClients) {
			t.Errorf("-row /clients: no row %s:\n%s", row, byClients)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
