package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testenv"
)

func opts() Options {
	return Options{
		Commits:   []results.Commit{{Label: "base", Ref: "master", SHA: "aaaa", Build: "base"}, {Label: "patch", Ref: "master", SHA: "aaaa", Build: "patch", Patches: []results.Patch{{File: "/p", SHA256: "ff"}}}},
		Workloads: []string{"select1", "churn"},
		Clients:   []int{2, 4},
		CPUs:      []int{1, 2},
		Settings:  []results.Setting{{Name: "pg_stat_statements.max", Values: []string{"100", "5000"}}},
		Repeats:   2,
		Duration:  3 * time.Second,
		Order:     "abba",
	}
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
		order string
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
// alternates the order from one block to the next.
func TestInterleaving(t *testing.T) {
	p, err := NewPlan(opts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(p.Cells); i += 2 {
		a, b := p.Cells[i], p.Cells[i+1]
		if a.Config.ID() != b.Config.ID() || a.Repeat != b.Repeat || a.Commit == b.Commit {
			t.Fatalf("cells %d and %d are not one block: %s, %s", i+1, i+2, a.ID, b.ID)
		}
		wantFirst := "base"
		if (i/2)%2 == 1 {
			wantFirst = "patch"
		}
		if a.Commit != wantFirst {
			t.Errorf("block %d starts with %s, want %s (ABBA)", i/2, a.Commit, wantFirst)
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
	for name, mutate := range map[string]func(*Options){
		"one commit, no repeats": func(o *Options) { o.Commits = o.Commits[:1]; o.Repeats = 1 },
		"zero clients":           func(o *Options) { o.Clients = []int{0} },
		"zero repeats":           func(o *Options) { o.Repeats = 0 },
		"bad order":              func(o *Options) { o.Order = "zigzag" },
		"duplicate label":        func(o *Options) { o.Commits[1].Label = "base" },
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
	for in, want := range map[string]results.Commit{
		"master":                          {Label: "master", Ref: "master"},
		"base=REL_17_0":                   {Label: "base", Ref: "REL_17_0"},
		"p=HEAD~1+" + patch:               {Label: "p", Ref: "HEAD~1", Patches: []results.Patch{{File: patch}}},
		"deb=install:/usr/lib/postgresql": {Label: "deb", Install: "/usr/lib/postgresql", Build: "deb"},
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
	o.Clients = []int{2, 8}
	c, _ := NewPlan(o)
	if d := results.Diff(a, c); len(d) != 1 || !strings.Contains(d[0], "[2,8]") {
		t.Errorf("diff = %v", d)
	}
}

func TestReadRecordsSkipsTruncatedLine(t *testing.T) {
	dir := t.TempDir()
	r := &results.Record{Cell: "x/c1/cpuall/r1/a", Commit: "a", Status: "ok", Metrics: map[string]float64{"tps": 1}}
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

func TestCellDirIsSafe(t *testing.T) {
	got := results.CellDir("/r", "file:/etc/x.sql/c1/cpuall/search_path=a b/r1/..")
	if !strings.HasPrefix(got, "/r/cells/") || strings.Contains(got, "/../") || strings.HasSuffix(got, "/..") {
		t.Errorf("cellDir = %s", got)
	}
}
