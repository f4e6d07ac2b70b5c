package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// testdata/v1 was written by abtest before this package existed (schema
// version 1): it must still read, with its metric definitions upgraded.
func TestReadVersion1(t *testing.T) {
	p, err := ReadPlan("testdata/v1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != Version || len(p.Commits) != 2 || p.Baseline != "base" {
		t.Fatalf("plan = version %d, %d commits, baseline %q", p.Version, len(p.Commits), p.Baseline)
	}
	want := map[string]struct {
		d  Direction
		th float64
		t  Tier
	}{
		"tps":            {HigherIsBetter, 2, TierBand},
		"latency_p99_ms": {LowerIsBetter, 10, TierReport},
		"failed_tx":      {LowerIsBetter, 0, TierExact},
		"pgss_hot":       {HigherIsBetter, 1, TierBand},
	}
	for name, w := range want {
		m, ok := p.Metrics.Get(name)
		if !ok || m.Direction != w.d || m.ThresholdPct != w.th || m.Tier != w.t {
			t.Errorf("%s = %+v (found %v), want %+v", name, m, ok, w)
		}
	}
	recs, warnings, err := ReadRecords("testdata/v1")
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if len(recs) != len(p.Cells) || recs[0].Status != StatusOK || recs[0].Metrics.Value("tps") == 0 {
		t.Fatalf("%d records for %d cells; first %+v", len(recs), len(p.Cells), recs[0])
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, PlanFile), []byte(`{"version": 99, "commits": [{"label": "a"}]}`), 0o644)
	_, err := ReadPlan(dir)
	if !errors.Is(err, ErrNewerSchema) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "plan version 99") {
		t.Fatalf("err = %v (exit %d)", err, exitcode.Code(err))
	}
	os.WriteFile(filepath.Join(dir, PlanFile), []byte(`{"version": 1}`), 0o644)
	// Issue 14 item 14: this was `--baseline "": the plan's commits are`.
	if _, err := ReadPlan(dir); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "no commits") {
		t.Fatalf("a plan without commits: %v", err)
	}
}

// A run killed (or a disk filled) mid-append leaves a torn last line;
// Repair cuts it so the next record starts a line of its own.
func TestRepairTornLine(t *testing.T) {
	dir := t.TempDir()
	a := &Record{Cell: "select1/c1/cpuall/r1/base", Status: StatusOK}
	if err := AppendRecord(dir, a); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, CellsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"cell":"select1/c1/cpuall/r1/pat`)
	f.Close()
	note, err := Repair(dir)
	if err != nil || !strings.Contains(note, "torn last line (33 bytes") {
		t.Fatalf("note %q, err %v", note, err)
	}
	b := &Record{Cell: "select1/c1/cpuall/r1/patch", Status: StatusOK}
	if err := AppendRecord(dir, b); err != nil {
		t.Fatal(err)
	}
	recs, warnings, err := ReadRecords(dir)
	if err != nil || len(warnings) != 0 || len(recs) != 2 || recs[1].Cell != b.Cell {
		t.Fatalf("records %+v, warnings %v, err %v", recs, warnings, err)
	}
	if note, err := Repair(dir); note != "" || err != nil {
		t.Fatalf("a whole file was repaired: %q %v", note, err)
	}
}

func TestLockRefusesSecondRun(t *testing.T) {
	dir := t.TempDir()
	release, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	if !errors.Is(err, ErrLocked) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second lock: %v", err)
	}
	release()
	release2, err := Lock(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release2()
}

func TestConfigIDAndDiff(t *testing.T) {
	c := Config{Workload: "churn", Clients: 64, CPUs: 2, Settings: map[string]string{"pg_stat_statements.max": "5000", "work_mem": "4MB"}}
	if got := c.ID(); got != "churn/c64/cpu2/pgss.max=5000/work_mem=4MB" {
		t.Errorf("ID = %s", got)
	}
	a := &Plan{Commits: []Commit{{Label: "base", Ref: "master", SHA: "aa"}}, Shard: "1/1"}
	b := &Plan{Commits: []Commit{{Label: "base", Ref: "master", SHA: "aa"}}, Shard: "1/1"}
	if d := Diff(a, b); len(d) != 0 {
		t.Errorf("equal plans differ: %v", d)
	}
	b.Commits[0].Patches = []Patch{{File: "x", SHA256: "ff"}}
	b.Options.Repeats = 3
	if d := Diff(a, b); len(d) != 2 {
		t.Errorf("diff = %v", d)
	}
}

// TestBuiltinDeclarations: every built-in metric is declared once, in
// the typed vocabulary; the rows a transaction writes are exact (fixed
// by the script, seed 000 gates them exactly), what timing decides
// (HOT, pruning, autovacuum, sizes) is not.
func TestBuiltinDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Builtin {
		if seen[m.Name] || !m.Direction.Valid() || !m.Tier.Valid() || !m.Validity.Valid() || !m.MeasuredBy.Valid() || m.Unit == "" || m.Doc == "" {
			t.Errorf("%s: duplicate %v or incomplete declaration %+v", m.Name, seen[m.Name], m)
		}
		seen[m.Name] = true
	}
	for name, tier := range map[string]Tier{
		MetricTupInsPerTx: TierExact, MetricTupUpdPerTx: TierExact, MetricTupDelPerTx: TierExact,
		MetricWALRecordsPerTx: TierBand, MetricHOTUpdatePct: TierBand, MetricBuffersHitPerTx: TierBand,
		MetricDeadTupGrowth: TierReport, MetricAutovacuumRuns: TierReport, MetricIndexGrowth: TierReport, MetricOldestXminAge: TierReport,
		MetricOfferedTPS: TierReport, MetricBacklog: TierReport,
	} {
		if m, ok := Builtin.Get(name); !ok || m.Tier != tier {
			t.Errorf("%s: tier %q (declared %v), want %q", name, m.Tier, ok, tier)
		}
	}
	for _, name := range []string{MetricAutovacuumRuns, MetricAutoanalyzeRuns} {
		if m, _ := Builtin.Get(name); !m.Count {
			t.Errorf("%s is not an event count", name)
		}
	}
}
