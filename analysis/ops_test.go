package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// opsInput is seed 000's sweep in pings a second: the ping workload
// declares :batch pings a transaction and a primary, the run offers
// 500 and 2000 pings a second at batch 1 and 10, with and without an
// xmin holder. Each cell updates batch rows a transaction, writes 5.2
// WAL records and leaves 0.95 dead tuples a ping, and commits what
// pgbench was offered; its delivery p99 is 9 ms, 52 under the holder.
// In two cells of each r2000ops :batch=10 base point an autovacuum ran
// and its dead tuples fell.
func opsInput(t *testing.T, primary string) *Input {
	t.Helper()
	wl := "file:/x/ping.sql"
	delivery := results.Metric{Name: "delivery_p99_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierBand}
	p := &results.Plan{
		Version: results.Version, Baseline: "base", Metrics: append(slices.Clone(results.Builtin), delivery),
		Commits: []results.Commit{{Label: "base", Install: "/x", Build: "base"}, {Label: "patch", Install: "/y", Build: "patch"}},
		Options: results.PlanOpts{Workloads: []string{wl}, Clients: []int{4}, Rates: []float64{500, 2000}, RateUnit: results.PerOp,
			Vars: []results.Axis{{Name: "batch", Values: []string{"1", "10"}}}, Conditions: []string{"none", "xmin-holder"}, Repeats: 3, DurationS: 5, Order: "abba",
			Declares: map[string]results.WorkloadDeclares{wl: {OpsPerTx: ":batch", Primary: primary}}},
	}
	for _, cond := range []string{"", "xmin-holder"} {
		for _, batch := range []string{"1", "10"} {
			for _, rate := range p.Options.Rates {
				c := results.Config{Workload: wl, Clients: 4, Rate: rate, RateUnit: results.PerOp, Vars: map[string]string{"batch": batch}, Condition: cond}
				p.Configs = append(p.Configs, c)
				for rep := 1; rep <= 3; rep++ {
					for _, commit := range []string{"base", "patch"} {
						p.Cells = append(p.Cells, results.Cell{ID: fmt.Sprintf("%s/r%d/%s", c.ID(), rep, commit), Seq: len(p.Cells) + 1, Commit: commit, Repeat: rep, Config: c})
					}
				}
			}
		}
	}
	in := &Input{Plan: p}
	for _, c := range p.Cells {
		k := p.Options.OpsPerTx(c.Config)
		delivery := 9.0
		if c.Condition != "" {
			delivery = 52
		}
		in.Records = append(in.Records, results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: c.Config, Repeat: c.Repeat, Status: results.StatusOK, DurationS: 5,
			Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: p.Options.TxRate(c.Config), results.MetricLatencyP99: 3,
				results.MetricTupUpdPerTx: k, results.MetricWALRecordsPerTx: 5.2 * k, results.MetricDeadTupPerTx: 0.95 * k, "delivery_p99_ms": delivery}),
			ConditionFacts: map[string]float64{"xmin_age": 4242},
		})
		rec := &in.Records[len(in.Records)-1]
		rec.Metrics.Set(results.MetricAutovacuumRuns, 0)
		if c.Repeat <= 2 && c.Commit == "base" && c.Rate == 2000 && k == 10 {
			// An autovacuum in the window removed the dead tuples
			// the others counted (a heartbeat cell: −16 a ping).
			rec.Metrics.Set(results.MetricAutovacuumRuns, 1)
			rec.Metrics.Set(results.MetricDeadTupPerTx, -164.5)
		}
	}
	return in
}

// TestSweepPerOperation: the point table of a sweep in operations says
// per ping what the probes count per transaction (1 update a ping at
// batch 1 and at 10, 10 per transaction beside it), the offered and
// committed rates in pings a second (and pgbench's transactions where
// they differ); the plot's axis is the pings.
func TestSweepPerOperation(t *testing.T) {
	r, err := Analyze(opsInput(t, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sweeps) != 2 {
		t.Fatalf("%d sweeps, want one per condition", len(r.Sweeps))
	}
	for _, s := range r.Sweeps {
		if s.OpsPerTx != ":batch" || len(s.Points) != 8 {
			t.Fatalf("%s: ops %q, %d points", s.Series, s.OpsPerTx, len(s.Points))
		}
		for _, pt := range s.Points {
			upd, ok := pt.PerOp(results.MetricTupUpdPerTx)
			if dead, _ := pt.PerOp(results.MetricDeadTupPerTx); !(dead > 0.94 && dead < 0.96) {
				t.Errorf("%s %s: dead/op %v: a vacuumed cell counted", pt.Point, pt.Commit, dead)
			}
			if !ok || upd != 1 || pt.OfferedTPS*pt.OpsPerTx != pt.OfferedOps || pt.OfferedOps != pt.Medians[results.MetricTPS]*pt.OpsPerTx {
				t.Errorf("%s %s: upd/op %v, offered %v ops = %v tx × %v", pt.Point, pt.Commit, upd, pt.OfferedOps, pt.OfferedTPS, pt.OpsPerTx)
			}
		}
	}
	var md, txt strings.Builder
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	for _, want := range []string{
		"| point | commit | offered ops/s | committed ops/s | p99 ms | upd/op | WAL rec/op | dead/op | autovacuums | saturated |",
		"| r2000ops :batch=10 | base | 2000 (200 tx) | 2000 (200 tx) | 3 | 1 (10/tx) | 5.2 (52/tx) | 0.95 (9.5/tx) | 1 | no |",
		"| r2000ops :batch=1 | patch | 2000 | 2000 | 3 | 1 | 5.2 | 0.95 | 0 | no |",
		"-- abtest:ops-per-tx :batch",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(txt.String(), "Rates in operations a second") || !strings.Contains(txt.String(), "r500ops :batch=10") {
		t.Errorf("text report:\n%s", txt.String())
	}
	for _, l := range strings.Split(txt.String(), "\n") {
		// The sweep's lines (a configuration's own heading is another
		// table's).
		if n := len([]rune(l)); n > 80 && (strings.HasPrefix(l, "  r") || strings.HasPrefix(l, "  point") || strings.HasPrefix(l, "  Rates")) {
			t.Errorf("text line of %d columns: %q", n, l)
		}
	}
	if name := benchName(r.Sweeps[0].Points[0].configOf(t, opsInput(t, ""))); !strings.Contains(name, "/rate=500ops/") {
		t.Errorf("benchmark name %s", name)
	}
}

// configOf is the configuration of the point in in's plan.
func (pt SweepPoint) configOf(t *testing.T, in *Input) results.Config {
	for _, c := range in.Plan.Configs {
		if c.ID() == pt.Config {
			return c
		}
	}
	t.Fatalf("no configuration %s", pt.Config)
	return results.Config{}
}

// TestConditionsShowTheWorkloadsMeasure: the Under-conditions table
// shows the workload's declared primary (else the metric it declares,
// else pgbench's p99) and its probes per operation.
func TestConditionsShowTheWorkloadsMeasure(t *testing.T) {
	for _, c := range []struct{ primary, metric, cell string }{
		{"delivery_p99_ms", "delivery_p99_ms", "delivery_p99_ms 9 → 52"},
		{"", "delivery_p99_ms", "delivery_p99_ms 9 → 52"},
		{results.MetricLatencyP99, results.MetricLatencyP99, "p99 ms 3 → 3"},
	} {
		r, err := Analyze(opsInput(t, c.primary), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Conditions) != 8 {
			t.Fatalf("%d rows under conditions, want 8", len(r.Conditions))
		}
		for _, u := range r.Conditions {
			if u.Metric != c.metric || u.OpsPerTx != map[bool]float64{true: 10, false: 1}[strings.Contains(u.Config, "batch=10")] {
				t.Errorf("primary %q: %s shows %s at %v ops/tx", c.primary, u.Config, u.Metric, u.OpsPerTx)
			}
		}
		var md, txt strings.Builder
		r.WriteMarkdown(&md)
		r.WriteText(&txt)
		row := "| xmin-holder | ping.sql/c4/cpuall/r2000ops/:batch=10/cond=xmin-holder | base | xmin age 4242 | 2000 → 2000 (200 → 200 tx/s) | " + c.cell + " | – | – | 0.95 → 0.95 (9.5 → 9.5/tx) | – | – |"
		if !strings.Contains(md.String(), row) {
			t.Errorf("primary %q: markdown lacks\n%s\n%s", c.primary, row, md.String())
		}
		if strings.Contains(md.String(), "| TPS |") || c.metric != results.MetricLatencyP99 && strings.Contains(md.String(), "p99 ms 3 → 3") {
			t.Errorf("primary %q: pgbench's TPS or p99 shown instead of the workload's:\n%s", c.primary, md.String())
		}
		if want := strings.ReplaceAll(c.cell, "→", "->"); !strings.Contains(txt.String(), want) {
			t.Errorf("primary %q: text lacks %q:\n%s", c.primary, want, txt.String())
		}
	}
}
