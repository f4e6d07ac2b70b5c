package results_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestRateInOperations: a rate in operations names its configuration
// r2000ops (beside r2000 in transactions: two configurations), and
// pgbench is offered it divided by the cell's operations per
// transaction; a configuration of an earlier version (no unit, no
// declaration) is offered its rate as before.
func TestRateInOperations(t *testing.T) {
	o := results.PlanOpts{Declares: map[string]results.WorkloadDeclares{
		"file:ping.sql": {OpsPerTx: ":batch"}, "file:fixed.sql": {OpsPerTx: "4"}}}
	ping := func(rate float64, unit results.RateUnit, batch string) results.Config {
		return results.Config{Workload: "file:ping.sql", Clients: 4, Rate: rate, RateUnit: unit, Vars: map[string]string{"batch": batch}}
	}
	ops, tx := ping(2000, results.PerOp, "10"), ping(2000, results.PerTx, "10")
	if ops.ID() != "file:ping.sql/c4/cpuall/r2000ops/:batch=10" || tx.ID() != "file:ping.sql/c4/cpuall/r2000/:batch=10" || ops.Point() != "r2000ops :batch=10" {
		t.Errorf("ids %s, %s, point %s", ops.ID(), tx.ID(), ops.Point())
	}
	if ops.Series().ID() != tx.Series().ID() {
		t.Errorf("series %s vs %s", ops.Series().ID(), tx.Series().ID())
	}
	for _, c := range []struct {
		c           results.Config
		tx, opsRate float64
		opsPerTx    float64
	}{
		{ops, 200, 2000, 10},
		{ping(2000, results.PerOp, "1"), 2000, 2000, 1},
		{ping(1000, results.PerOp, "3"), 1000.0 / 3, 1000, 3},
		{tx, 2000, 20000, 10},
		{results.Config{Workload: "file:fixed.sql", Rate: 100, RateUnit: results.PerOp}, 25, 100, 4},
		{results.Config{Workload: "select1", Rate: 500}, 500, 500, 1},
		{results.Config{Workload: "file:ping.sql", Clients: 1}, 0, 0, 1}, // no --var: 1, refused by the matrix
	} {
		if got := o.TxRate(c.c); got != c.tx {
			t.Errorf("%s: pgbench offered %g tx/s, want %g", c.c.ID(), got, c.tx)
		}
		if got := o.OpsRate(c.c); got != c.opsRate {
			t.Errorf("%s: %g ops/s, want %g", c.c.ID(), got, c.opsRate)
		}
		if got := o.OpsPerTx(c.c); got != c.opsPerTx {
			t.Errorf("%s: %g ops/tx, want %g", c.c.ID(), got, c.opsPerTx)
		}
	}
	// Plans of earlier versions: no declares, no unit.
	var old results.PlanOpts
	if err := json.Unmarshal([]byte(`{"workloads":["file:ping.sql"],"rates":[200]}`), &old); err != nil || old.RateUnit != results.PerTx || old.TxRate(tx) != 2000 {
		t.Errorf("an earlier plan: %+v %v", old, err)
	}
}

// TestOpsPerTxRefused: a declaration the plan cannot evaluate says why
// (no such --var, a value that is no positive number).
func TestOpsPerTxRefused(t *testing.T) {
	for _, c := range []struct {
		expr string
		vars map[string]string
		want string
	}{
		{":batch", nil, "no --var batch"},
		{":batch", map[string]string{"batch": "0"}, "positive"},
		{":batch", map[string]string{"batch": "-3"}, "positive"},
		{":batch", map[string]string{"batch": "ten"}, "positive"},
		{":batch", map[string]string{"batch": "NaN"}, "positive"},
		{":batch", map[string]string{"batch": "Inf"}, "positive"},
		{":batch", map[string]string{"batch": "1e7"}, "up to"},
		{"0", nil, "positive"},
	} {
		_, err := results.WorkloadDeclares{OpsPerTx: c.expr}.Ops(c.vars)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v; want %q", c.expr, c.vars, err, c.want)
		}
	}
	for _, bad := range []string{"", ":", ":1x", ":a-b", "x", "-1", "0", "1e400", "Inf", "NaN", "2 3", ":a;DROP"} {
		if results.CheckOpsPerTx(bad) == nil {
			t.Errorf("CheckOpsPerTx(%q) accepted", bad)
		}
	}
	for _, good := range []string{":batch", "1", "2.5", "10"} {
		if err := results.CheckOpsPerTx(good); err != nil {
			t.Errorf("CheckOpsPerTx(%q): %v", good, err)
		}
	}
}

// TestShownID: a workload file's id reads as its base name, or as its
// path when another workload file of the run has the same base name;
// built-in workloads and foreign ids are left as they are.
func TestShownID(t *testing.T) {
	p := &results.Plan{Options: results.PlanOpts{Workloads: []string{"file:/work/a/ping.sql", "select1"}}}
	for id, want := range map[string]string{
		results.EscapeID("file:/work/a/ping.sql") + "/c2/cpuall/r300ops/r1/a": "ping.sql/c2/cpuall/r300ops/r1/a",
		"select1/c8/cpuall": "select1/c8/cpuall",
		"other/c1":          "other/c1",
	} {
		if got := p.ShownID(id); got != want {
			t.Errorf("ShownID(%s) = %s, want %s", id, got, want)
		}
	}
	p.Options.Workloads = append(p.Options.Workloads, "file:/work/b/ping.sql")
	if got := p.ShownID(results.EscapeID("file:/work/b/ping.sql") + "/c2"); got != "/work/b/ping.sql/c2" {
		t.Errorf("two ping.sql: %s, want the path", got)
	}
}
