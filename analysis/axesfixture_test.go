package analysis

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

var updateAxes = flag.Bool("update-axes", false, "rewrite testdata/axes.golden")

// axisConfigs are configurations with every axis in turn, and escaped
// values, beside those of the recorded runs (which have no rate,
// variable or condition).
func axisConfigs() []results.Config {
	return []results.Config{
		{Workload: "select1", Clients: 8, Settings: map[string]string{results.PgssMax: "5000"}},
		{Workload: "file:/w/a b.sql", Clients: 1, CPUs: 2, Instructions: true, Settings: map[string]string{"work_mem": "4MB", "a.b": "x/y,z%"}},
		{Workload: "churn", Clients: 64, CPUs: 4, Rate: 1000, Settings: map[string]string{results.PgssMax: "100"}},
		{Workload: "churn", Clients: 64, Rate: 2000, RateUnit: results.PerOp, Vars: map[string]string{"batch": "10", "n": "a/b"}},
		{Workload: "churn", Clients: 2, Rate: 0.5, Condition: "xmin-holder", Vars: map[string]string{"x": "1"}},
		{Workload: "churn", Clients: 2, Condition: "file:/tmp/c d.sh", Settings: map[string]string{"search_path": "a, b"}},
		{Workload: "ping", Clients: 3, Vars: map[string]string{"only": "v"}},
	}
}

// TestRecordedConfigNames: every configuration of the repository's
// recorded runs (results/testdata/v1, demo/testdata/run: plans and
// records) and of axisConfigs keeps its id, series id, point, benchfmt
// name and grouping: the axis registry derives them now, and a
// recorded run must read as it was written.
func TestRecordedConfigNames(t *testing.T) {
	var cfgs []results.Config
	for _, dir := range []string{"../results/testdata/v1", "../demo/testdata/run"} {
		in, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, in.Plan.Configs...)
		for _, c := range in.Plan.Cells {
			cfgs = append(cfgs, c.Config)
		}
		for _, r := range in.Records {
			cfgs = append(cfgs, r.Config)
		}
	}
	cfgs = append(cfgs, axisConfigs()...)
	var lines []string
	seen := map[string]bool{}
	ids := newConfigIDs()
	keyID := map[string]string{}
	for _, c := range cfgs {
		key := string(c.AppendKey(nil))
		if id, ok := keyID[key]; ok && id != c.ID() {
			t.Errorf("grouping key %q: ids %s and %s", key, id, c.ID())
		}
		keyID[key] = c.ID()
		if got := ids.of(c); got != c.ID() {
			t.Errorf("remembered id %s, want %s", got, c.ID())
		}
		line := fmt.Sprintf("%s\tseries=%s\tpoint=%s\tvars=%s\tbench=%s", c.ID(), c.Series().ID(), c.Point(), c.VarsLabel(), benchName(c))
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "axes.golden")
	if *updateAxes {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("configuration names changed:\n got:\n%s\nwant:\n%s", got, want)
	}
	if len(lines) < 10 {
		t.Errorf("%d configurations: the fixtures were not read", len(lines))
	}
}
