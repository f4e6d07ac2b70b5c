package matrix

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestParseRateList: -R counts transactions, or operations with ops
// after the list (or after each item); one list, one unit.
func TestParseRateList(t *testing.T) {
	for _, c := range []struct {
		in    string
		rates string
		unit  results.RateUnit
	}{
		{"", "[]", results.PerTx},
		{"500,1000", "[500 1000]", results.PerTx},
		{"2000ops", "[2000]", results.PerOp},
		{"500,2000ops", "[500 2000]", results.PerOp},
		{"500ops, 2000ops", "[500 2000]", results.PerOp},
		{"0,2000ops", "[0 2000]", results.PerOp},
		{"500tx,1000", "[500 1000]", results.PerTx},
		{" 2.5ops ", "[2.5]", results.PerOp},
	} {
		rates, unit, err := ParseRateList(c.in)
		if err != nil || fmtFloats(rates) != c.rates || unit != c.unit {
			t.Errorf("-R %q: %v %q %v; want %s %q", c.in, rates, unit, err, c.rates, c.unit)
		}
	}
	for _, bad := range []string{"500tx,2000ops", "ops", "2000opsx", "2000 ops ops", "-5ops", "NaNops", "1e10ops", "500,500ops", "2000OPS", "2000ops<script>"} {
		if _, _, err := ParseRateList(bad); exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("-R %q: %v; want exit 2 in one line", bad, err)
		}
	}
}

func fmtFloats(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, results.FormatRate(x))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// pingRequest is a sweep of the shipped ping workload at rates -R.
func pingRequest(t *testing.T, rates string, vars ...string) Request {
	t.Helper()
	ping, err := filepath.Abs(filepath.Join("..", "examples", "ping.sql"))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Commits: "a=master,b=master", Workloads: "file:" + ping, PgssMax: "5000", Axes: map[string][]string{"clients": {"2"}, "rate": {rates}, "vars": vars},
		Seconds: 2, Repeats: 1, Build: "release", Protocol: "simple", Order: "abba"}
	req, err := o.Request()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestPlanInOperations: a plan in operations records what the files
// declare and the unit; each cell's id says r2000ops, and -n shows
// what pgbench is offered there (2000 pings a second at 10 a
// transaction: 200).
func TestPlanInOperations(t *testing.T) {
	req := pingRequest(t, "0,2000ops", "batch=1,10")
	p, err := NewPlan(req)
	if err != nil {
		t.Fatal(err)
	}
	ping := req.Workloads[0]
	if d := p.Options.Declares[ping]; d.OpsPerTx != ":batch" || d.Primary != "" || len(p.Options.Declares) != 1 || p.Options.RateUnit != results.PerOp {
		t.Fatalf("declares %+v, unit %q", p.Options.Declares, p.Options.RateUnit)
	}
	got := map[string]float64{}
	for _, c := range p.Configs {
		if (c.Rate > 0) != (c.RateUnit == results.PerOp) {
			t.Errorf("%s: rate %v unit %q", c.ID(), c.Rate, c.RateUnit)
		}
		got[c.Point()] = p.Options.TxRate(c)
	}
	want := map[string]float64{":batch=1": 0, ":batch=10": 0, "r2000ops :batch=1": 2000, "r2000ops :batch=10": 200}
	if len(got) != len(want) {
		t.Errorf("points %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: pgbench -R %v, want %v", k, got[k], v)
		}
	}
	var out strings.Builder
	PrintPlan(&out, p, "/r", nil)
	for _, s := range []string{"# workload " + ping + " declares operations per transaction :batch\n", "/r2000ops/:batch=10/pgss.max=5000/r1/a  (pgbench -R 200)\n", "/r2000ops/:batch=1/pgss.max=5000/r1/b  (pgbench -R 2000)\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("-n lacks %q:\n%s", s, out.String())
		}
	}
}

// TestPlanInOperationsRefused: operations a workload does not define,
// an ops-per-tx variable the run does not set or sets to no positive
// number: exit 2 before anything runs, naming the workload.
func TestPlanInOperationsRefused(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return "file:" + f
	}
	fixed := file("fixed.sql", "-- abtest:script\nSELECT :n;\n-- abtest:ops-per-tx 4\n")
	byVar := file("byvar.sql", "-- abtest:script\nSELECT :n;\n-- abtest:ops-per-tx :n\n")
	plain := file("plain.sql", "-- abtest:script\nSELECT :n;\n")
	for _, c := range []struct {
		workloads []string
		rates     []float64
		unit      results.RateUnit
		vars      []string
		want      string
	}{
		{[]string{"select1"}, []float64{2000}, results.PerOp, nil, "workload select1 does not say what an operation is"},
		{[]string{fixed, plain}, []float64{2000}, results.PerOp, []string{"1"}, "workload " + plain + " does not say"},
		{[]string{byVar}, []float64{2000}, results.PerTx, nil, "the run has no --var n"},
		{[]string{byVar}, []float64{2000}, results.PerOp, []string{"1", "0"}, "--var n=0"},
		{[]string{byVar}, []float64{2000}, results.PerOp, []string{"x"}, "--var n=x"},
		{[]string{fixed}, []float64{0}, results.PerOp, []string{"1"}, "at least one offered rate"},
		{[]string{fixed}, []float64{1}, "bogus", []string{"1"}, "want offered rates"},
	} {
		req := opts()
		var rates []string
		for _, r := range c.rates {
			rates = append(rates, results.FormatRate(r))
		}
		req.Workloads, req.Axes = c.workloads, map[string][]string{"clients": {"1"}, "rate": {strings.Join(rates, ",") + string(c.unit)}}
		if c.vars != nil {
			req.Axes["vars"] = []string{"n=" + strings.Join(c.vars, ",")}
		}
		_, err := NewPlan(req)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v -R %v%s --var n=%v: %v; want exit 2 with %q", c.workloads, c.rates, c.unit, c.vars, err, c.want)
		}
	}
	// What is well declared plans: operations of a fixed count, and the
	// transactions' rate of a workload of any kind.
	for _, c := range []struct {
		workloads []string
		unit      results.RateUnit
	}{{[]string{fixed}, results.PerOp}, {[]string{"select1", plain, fixed}, results.PerTx}} {
		req := opts()
		req.Workloads, req.Axes = c.workloads, map[string][]string{"clients": {"1"}, "rate": {"2000" + string(c.unit)}, "vars": {"n=1"}}
		if p, err := NewPlan(req); err != nil {
			t.Errorf("%v %q: %v", c.workloads, c.unit, err)
		} else if c.unit == results.PerOp && p.Options.TxRate(p.Configs[0]) != 500 {
			t.Errorf("fixed 4 a transaction at 2000 ops/s: pgbench -R %v", p.Options.TxRate(p.Configs[0]))
		}
	}
}

// TestRunInOperations: on real PostgreSQL and pgbench, -R 1000ops of
// the shipped ping workload at 5 pings a transaction offers pgbench
// 200 tx/s: its command line says -R 200, it committed about that,
// and the record keeps the rate the user gave, in operations.
func TestRunInOperations(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	plan := pingPlan(t, deps, Options{Commits: "a=install:" + install, Axes: map[string][]string{"rate": {"1000ops"}}, Seconds: 3})
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	var out strings.Builder
	deps.Out = &out
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records (%v), want 2\n%s", len(recs), err, out.String())
	}
	for _, r := range recs {
		if r.Status != results.StatusOK {
			t.Fatalf("%s: %s %s", r.Cell, r.Status, r.Error)
		}
		cmd, _ := os.ReadFile(filepath.Join(dir, r.Artifacts["pgbench"]))
		tps := r.Metrics.Value(results.MetricTPS)
		t.Logf("%s: %.1f tx/s committed, offered %v", r.Cell, tps, r.Saturation)
		if !strings.Contains(string(cmd), " -R 200 ") || strings.Contains(string(cmd), "-R 1000") {
			t.Errorf("%s: pgbench not offered 200 tx/s:\n%.400s", r.Cell, cmd)
		}
		if r.Rate != 1000 || r.RateUnit != results.PerOp || !strings.Contains(r.Cell, "/r1000ops/:batch=5/") || r.Saturation == nil || r.Saturation.OfferedTPS != 200 {
			t.Errorf("%s: rate %v %q, saturation %+v", r.Cell, r.Rate, r.RateUnit, r.Saturation)
		}
		// 600 transactions in 3 s of a Poisson schedule: well apart
		// from 1000 (the operations) and 40 (divided twice).
		if !(tps > 150 && tps < 250) {
			t.Errorf("%s: committed %.1f tx/s, want about 200", r.Cell, tps)
		}
	}
}
