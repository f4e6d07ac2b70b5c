package matrix

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

func opts() Request {
	return Request{
		Commits:   []Commit{{Label: "base", Ref: "master"}, {Label: "patch", Ref: "master", Patches: []string{"/p"}}},
		Workloads: []string{"select1", "churn"},
		Axes:      map[string][]string{"clients": {"2,4"}, "cpus": {"1,2"}, "settings": {"pg_stat_statements.max=100,5000"}},
		Repeats:   2,
		Duration:  3 * time.Second,
		Order:     ABBA,
	}
}

// NewPlan is Prepare without a git repository: every ref resolves to
// sha aaaa, patch files hash to ff.
func NewPlan(req Request) (*results.Plan, error) {
	var commits []results.Commit
	for _, c := range req.Commits {
		rc := results.Commit{Label: c.Label, Ref: c.Ref, SHA: "aaaa", Build: c.Label}
		for _, f := range c.Patches {
			rc.Patches = append(rc.Patches, results.Patch{File: f, SHA256: "ff"})
		}
		commits = append(commits, rc)
	}
	return PlanFor(req, commits)
}

func cellList(p *results.Plan) string {
	var b strings.Builder
	for _, c := range p.Cells {
		b.WriteString(c.ID)
		b.WriteString("\n")
	}
	return b.String()
}

func TestPlanOrdersGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order Order
		seed  int64
	}{{"abba", "abba", 0}, {"random-seed42", "random", 42}, {"random-seed7", "random", 7}} {
		o := opts()
		o.Order, o.Seed = tc.order, tc.seed
		p, err := NewPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Cells) != 2*2*2*2*2*2 {
			t.Fatalf("%s: %d cells", tc.name, len(p.Cells))
		}
		testenv.Golden(t, "plan-"+tc.name+".txt", cellList(p))
		again, _ := NewPlan(o)
		if cellList(again) != cellList(p) {
			t.Errorf("%s: the same seed gave another order", tc.name)
		}
	}
}

// TestInterleaving: every block runs all commits back to back, and ABBA
// alternates the order of each configuration from one repeat to the next.
func TestInterleaving(t *testing.T) {
	p, err := NewPlan(opts())
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{} // configuration → first commit of its last block
	for i := 0; i < len(p.Cells); i += 2 {
		a, b := p.Cells[i], p.Cells[i+1]
		if a.Config.ID() != b.Config.ID() || a.Repeat != b.Repeat || a.Commit == b.Commit {
			t.Fatalf("cells %d and %d are not one block: %s, %s", i+1, i+2, a.ID, b.ID)
		}
		id := a.Config.ID()
		if prev, ok := last[id]; ok && prev == a.Commit {
			t.Errorf("%s: repeat %d starts with %s like the repeat before (ABBA)", id, a.Repeat, a.Commit)
		}
		last[id] = a.Commit
	}
}

// withConfigs is a request with n configurations per repeat.
func withConfigs(n, commits, repeats int, order Order) Request {
	o := opts()
	o.Repeats, o.Order, o.Seed = repeats, order, 11
	o.Workloads, o.Axes = []string{"select1"}, map[string][]string{"clients": {"1,2,3,4"[:2*n-1]}}
	if n == 4 {
		o.Workloads, o.Axes["clients"] = []string{"select1", "churn"}, []string{"1,2"}
	}
	for len(o.Commits) < commits {
		o.Commits = append(o.Commits, Commit{Label: fmt.Sprintf("c%d", len(o.Commits)), Ref: "master", Patches: []string{fmt.Sprintf("/p%d", len(o.Commits))}})
	}
	return o
}

// firsts counts, per configuration, the blocks that start with the
// baseline and those that start with another commit.
func firsts(p *results.Plan) (base, other map[string]int) {
	base, other = map[string]int{}, map[string]int{}
	for i, c := range p.Cells {
		if i > 0 && p.Cells[i-1].Config.ID() == c.Config.ID() && p.Cells[i-1].Repeat == c.Repeat {
			continue
		}
		if c.Commit == p.Baseline {
			base[c.Config.ID()]++
		} else {
			other[c.Config.ID()]++
		}
	}
	return base, other
}

// TestOrderBalancedPerConfiguration: for 1 to 4 configurations per
// repeat and 2 or 3 commits, every configuration has as many
// baseline-first blocks as candidate-first ones over an even number of
// repeats, in ABBA and in random order; over an odd number the whole run
// is within one block per configuration pair.
func TestOrderBalancedPerConfiguration(t *testing.T) {
	for _, order := range []Order{ABBA, Random} {
		for n := 1; n <= 4; n++ {
			for commits := 2; commits <= 3; commits++ {
				p, err := NewPlan(withConfigs(n, commits, 4, order))
				if err != nil {
					t.Fatal(err)
				}
				base, other := firsts(p)
				for _, c := range p.Configs {
					if commits == 2 && base[c.ID()] != other[c.ID()] {
						t.Errorf("%s, %d configs, %d commits: %s has %d baseline-first and %d candidate-first blocks", order, n, commits, c.ID(), base[c.ID()], other[c.ID()])
					}
					if order == ABBA && base[c.ID()] != other[c.ID()] {
						t.Errorf("%s, %d configs, %d commits: %s has %d baseline-first and %d candidate-first blocks", order, n, commits, c.ID(), base[c.ID()], other[c.ID()])
					}
				}
			}
		}
		p, _ := NewPlan(withConfigs(4, 2, 3, order))
		base, other := firsts(p)
		var b, o int
		for _, c := range p.Configs {
			b, o = b+base[c.ID()], o+other[c.ID()]
		}
		if order == ABBA && b != o {
			t.Errorf("%s, 4 configs × 3 repeats: %d baseline-first, %d candidate-first blocks", order, b, o)
		}
	}
}

// TestOrderGoldenPerConfigurations snapshots ABBA and random plans with
// 1, 2, 3 and 4 configurations per repeat.
func TestOrderGoldenPerConfigurations(t *testing.T) {
	for _, order := range []Order{ABBA, Random} {
		for n := 1; n <= 4; n++ {
			p, err := NewPlan(withConfigs(n, 2, 4, order))
			if err != nil {
				t.Fatal(err)
			}
			testenv.Golden(t, fmt.Sprintf("plan-%s-%dconfigs.txt", order, n), cellList(p))
		}
	}
}

// TestExtraBlockSameAsPlanned: a block appended by --until-decided has
// the order the same repeat would have had in the plan.
func TestExtraBlockSameAsPlanned(t *testing.T) {
	for _, order := range []Order{ABBA, Random} {
		o := withConfigs(3, 3, 3, order)
		planned, _ := NewPlan(o)
		o.Repeats = 2
		short, _ := NewPlan(o)
		for _, g := range canonical(short.Options) {
			for _, c := range g {
				appendBlock(short, c, 3)
			}
		}
		want := map[string]bool{}
		for _, c := range planned.Cells {
			want[c.ID] = true
		}
		var got, exp []string
		for _, c := range short.Cells[len(short.Cells)-9:] {
			got = append(got, c.ID)
		}
		for _, c := range planned.Cells {
			if c.Repeat == 3 {
				exp = append(exp, c.ID)
			}
		}
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s: extra repeat\n%v\nplanned\n%v", order, got, exp)
		}
	}
}

func TestShardsCoverThePlanOnce(t *testing.T) {
	full, _ := NewPlan(opts())
	seen := map[string]int{}
	for _, s := range []Shard{{1, 3}, {2, 3}, {3, 3}} {
		o := opts()
		o.Shard = s
		p, err := NewPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Cells) == 0 {
			t.Errorf("shard %s is empty", s)
		}
		byConfig := map[string]map[string]bool{}
		for _, c := range p.Cells {
			seen[c.ID]++
			if byConfig[c.Config.ID()] == nil {
				byConfig[c.Config.ID()] = map[string]bool{}
			}
			byConfig[c.Config.ID()][c.Commit] = true
		}
		for cfg, commits := range byConfig {
			if len(commits) != 2 {
				t.Errorf("shard %s has configuration %s without all its commits", s, cfg)
			}
		}
	}
	if len(seen) != len(full.Cells) {
		t.Errorf("shards ran %d distinct cells, the plan has %d", len(seen), len(full.Cells))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("cell %s ran %d times", id, n)
		}
	}
}

func TestBadPlans(t *testing.T) {
	for name, mutate := range map[string]func(*Request){
		"one commit, no repeats": func(o *Request) { o.Commits = o.Commits[:1]; o.Repeats = 1 },
		"zero clients":           func(o *Request) { o.Axes["clients"] = []string{"0"} },
		"zero repeats":           func(o *Request) { o.Repeats = 0 },
		"bad order":              func(o *Request) { o.Order = "zigzag" },
		"duplicate label":        func(o *Request) { o.Commits[1].Label = "base" },
	} {
		o := opts()
		mutate(&o)
		if _, err := NewPlan(o); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: %v, want exit 2", name, err)
		}
	}
	o := opts()
	o.Commits = o.Commits[:1]
	o.Repeats = 5
	if p, err := NewPlan(o); err != nil || len(p.Cells) != 2*2*2*2*5 {
		t.Errorf("noise run with one commit: %v", err)
	}
	for _, s := range []string{"3/2", "0/2", "1/0", "x", "1/2/3"} {
		if _, err := ParseShard(s); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseShard(%q) = %v", s, err)
		}
	}
}

func TestParseSpec(t *testing.T) {
	patch := filepath.Join(t.TempDir(), "fix.patch")
	os.WriteFile(patch, []byte("x"), 0o644)
	for in, want := range map[string]Commit{
		"master":                          {Label: "master", Ref: "master"},
		"base=REL_17_0":                   {Label: "base", Ref: "REL_17_0"},
		"p=HEAD~1+" + patch:               {Label: "p", Ref: "HEAD~1", Patches: []string{patch}},
		"deb=install:/usr/lib/postgresql": {Label: "deb", Install: "/usr/lib/postgresql"},
	} {
		got, err := ParseSpec(in)
		if err != nil || got.Label != want.Label || got.Ref != want.Ref || got.Install != want.Install || len(got.Patches) != len(want.Patches) {
			t.Errorf("ParseSpec(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"HEAD~1", "p=master+/no/such.patch", "=x", "a/b=master", "install:/x"} {
		if _, err := ParseSpec(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseSpec(%q) = %v, want exit 2", bad, err)
		}
	}
}

func TestDiff(t *testing.T) {
	a, _ := NewPlan(opts())
	b, _ := NewPlan(opts())
	if d := results.Diff(a, b); len(d) != 0 {
		t.Errorf("same plans differ: %v", d)
	}
	o := opts()
	o.Axes["clients"] = []string{"2,8"}
	c, _ := NewPlan(o)
	if d := results.Diff(a, c); len(d) != 1 || !strings.Contains(d[0], "[2,8]") {
		t.Errorf("diff = %v", d)
	}
}

func TestReadRecordsSkipsTruncatedLine(t *testing.T) {
	dir := t.TempDir()
	r := &results.Record{Cell: "x/c1/cpuall/r1/a", Commit: "a", Status: "ok", Metrics: results.ValuesOf(map[string]float64{"tps": 1})}
	if err := results.AppendRecord(dir, r); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, results.CellsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"cell":"x/c1/cpuall/r1/b","metr`)
	f.Close()
	recs, warnings, err := results.ReadRecords(dir)
	if err != nil || len(recs) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "line 2") {
		t.Errorf("records %v, warnings %v, err %v", recs, warnings, err)
	}
}

// TestCellDirIsSafe: whatever a cell id holds (a file workload's
// absolute path, "..", "." or empty parts, a trailing "/"), its
// directory is strictly inside the run's cells directory, with one path
// component for each part of the id, and distinct ids get distinct
// directories. A plain filepath.Join fails all three: it climbs out of
// the run on "../..", and cleans "a//b", "a/./b", "x/../a/b" and "a/b/"
// into the directory of "a/b".
func TestCellDirIsSafe(t *testing.T) {
	run := t.TempDir()
	cells := filepath.Join(run, results.CellsDir)
	seen := map[string]string{}
	for _, id := range []string{
		"file:/etc/x.sql/c1/cpuall/search_path=a b/r1/base",
		"file:/etc/x.sql/c1/cpuall/search_path=a b/r1/..",
		"file:/etc/x.sql/c1/cpuall/search_path=a b/r1",
		"../../../etc/passwd", "../..", "..", ".", "",
		"/abs/path", "abs/path",
		"a/b", "a//b", "a/./b", "x/../a/b", "a/b/",
		"w/c1/cpuall/v=a b/r1/base", "w/c1/cpuall/v=a_b/r1/base", "w/c1/cpuall/v=a%20b/r1/base",
		"%", "%25", "_", "_.", "%2E",
	} {
		dir := results.CellDir(run, id)
		rel, err := filepath.Rel(cells, dir)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Errorf("CellDir(%q) = %s: not inside %s", id, dir, cells)
			continue
		}
		if got, want := len(strings.Split(rel, "/")), len(strings.Split(id, "/")); got != want {
			t.Errorf("CellDir(%q) = %s: %d components for the %d parts of the id", id, dir, got, want)
		}
		if other, ok := seen[dir]; ok {
			t.Errorf("CellDir(%q) = CellDir(%q) = %s", id, other, dir)
		}
		seen[dir] = id
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("CellDir(%q): %v", id, err)
		}
	}
}

// TestPlanCarriesDeclaredMetrics: the metrics a workload file declares
// are in the plan's definitions, so the analysis judges them like its
// own.
func TestPlanCarriesDeclaredMetrics(t *testing.T) {
	o := opts()
	o.Workloads = []string{"select1", "file:../examples/queue.sql"}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := p.Metrics.Get("delivery_p99_ms")
	if !ok || m.Unit != "ms" || m.Tier != results.TierBand {
		t.Errorf("delivery_p99_ms in the plan: %+v, %v", m, ok)
	}
	if _, ok := p.Metrics.Get(results.MetricTPS); !ok {
		t.Error("the built-in metrics are gone")
	}
}
