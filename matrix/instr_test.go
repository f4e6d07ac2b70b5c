package matrix

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestPlanInstructions: --instructions adds one instruction cell per
// commit × workload × settings (not per client count or CPU count: those
// would repeat the same count), once (or --instr-repeats times,
// interleaved ABBA like the timed cells), and the plan without it is
// unchanged.
func TestPlanInstructions(t *testing.T) {
	without, err := NewPlan(opts())
	if err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.Instructions = true
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	// 2 workloads × 2 pgss.max × 1 run × 2 commits: an instruction cell
	// runs once by default, whatever -r (2 here).
	if got, want := len(p.Cells)-len(without.Cells), 2*2*1*2; got != want || p.Options.InstrRepeats != 1 {
		t.Fatalf("%d instruction cells (instr repeats %d), want %d", got, p.Options.InstrRepeats, want)
	}
	for _, c := range p.Cells {
		if c.Instructions && c.Repeat != 1 {
			t.Errorf("instruction cell %s in repeat %d", c.ID, c.Repeat)
		}
	}
	o.InstrRepeats = 2
	if p, err = NewPlan(o); err != nil {
		t.Fatal(err)
	}
	if got, want := len(p.Cells)-len(without.Cells), 2*2*2*2; got != want {
		t.Fatalf("--instr-repeats 2: %d instruction cells, want %d", got, want)
	}
	var instr []string
	for _, c := range p.Cells {
		if c.Instructions {
			if c.Clients != 1 || c.CPUs != 0 || !strings.Contains(c.ID, "/instr/cpuall") {
				t.Errorf("instruction cell %+v", c)
			}
			instr = append(instr, c.ID)
		}
	}
	// ABBA per configuration: repeat 1 and repeat 2 of one configuration
	// run the commits in opposite orders.
	first := map[string]string{}
	for _, id := range instr {
		parts := strings.Split(id, "/")
		cfg := strings.Join(parts[:len(parts)-2], "/")
		key := cfg + parts[len(parts)-2]
		if _, ok := first[key]; !ok {
			first[key] = parts[len(parts)-1]
		}
	}
	for _, cfg := range []string{"select1/instr/cpuall/pgss.max=100", "churn/instr/cpuall/pgss.max=5000"} {
		if first[cfg+"r1"] == first[cfg+"r2"] {
			t.Errorf("%s: both repeats start with %s, want ABBA", cfg, first[cfg+"r1"])
		}
	}
	if !p.Options.Instructions {
		t.Error("plan options do not record --instructions")
	}
	// The estimate of an instruction cell follows its transactions: 3N
	// (and a warm-up) beside one server start.
	if d := InstrCellTime(p); d != 13*time.Second {
		t.Errorf("an instruction cell of the default N is estimated %s, want 13s", d)
	}
	o.InstrTransactions = 500
	if p, err = NewPlan(o); err != nil {
		t.Fatal(err)
	}
	if d := InstrCellTime(p); p.Options.InstrTransactions != 500 || d != 8500*time.Millisecond {
		t.Errorf("--instr-transactions 500: plan records %d, a cell is estimated %s; want 500, 8.5s", p.Options.InstrTransactions, d)
	}
}

// TestPlanInstructionsOnly: instruction-only plans no timed cells and
// refuses a clients axis other than one client.
func TestPlanInstructionsOnly(t *testing.T) {
	o := opts()
	o.InstructionsOnly, o.Axes["clients"] = true, []string{"1"}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		if !c.Instructions {
			t.Errorf("timed cell %s in an instruction-only plan", c.ID)
		}
	}
	if len(p.Cells) != 2*2*1*2 || !p.Options.Instructions {
		t.Errorf("%d cells, options %+v", len(p.Cells), p.Options)
	}
	o.Axes["clients"] = []string{"1,4"}
	if _, err := NewPlan(o); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "one client") {
		t.Errorf("-c 1,4 instruction-only: %v", err)
	}
}

// TestInstrCellSkipsWithoutAMethod: on a host with neither perf nor
// valgrind, instruction cells are skipped (not recorded) with one line
// for the whole run.
func TestInstrCellSkipsWithoutAMethod(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	o := opts()
	o.InstructionsOnly, o.Axes["clients"] = true, []string{"1"}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r := &run{deps: &Deps{Proc: &proc.Runner{}, Out: &out}, plan: p, dir: t.TempDir(), started: map[string]bool{}}
	for _, c := range p.Cells[:3] {
		if rec := r.cell(context.Background(), c); rec != nil {
			t.Errorf("%s: recorded %+v, want skipped", c.ID, rec)
		}
	}
	if strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "instruction cells are skipped") {
		t.Errorf("output %q: want one line", out.String())
	}
}

// TestRunInstructionsLeavesUsersCluster (issue 22): a matrix with
// instruction cells while the user's cluster of the same name runs
// with its own settings (switch -w a -m 777 --set work_mem=7MB) counts
// on the matrix's cluster m-a, not on a: a keeps its server (pid, start
// time), port, options and settings; m-a is left stopped at the end
// like any cluster the run started, without socket directory, and each
// cell keeps the log m-a wrote during its quiet period.
func TestRunInstructionsLeavesUsersCluster(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	deps, install := prebuiltDeps(t)
	cm, ctx := deps.Clusters, context.Background()
	t.Cleanup(func() { cm.Stop(context.Background(), "a") })
	user, err := cm.Start(ctx, "a", cluster.Options{Install: install, PgssMax: 777, Settings: []cluster.Setting{{Name: "work_mem", Value: "7MB"}}})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := cluster.PID(user.DataDir)
	began, _ := procfs.StartTime(pid)

	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"1"}}, Repeats: 1, Duration: time.Second, Protocol: "simple",
		// The clusters, not the count: 50 transactions, not 500 (about
		// 0.7 CPU-seconds less a cell at select1's 0.49 ms a
		// transaction under valgrind, InstrCellTime).
		InstructionsOnly: true, InstrTransactions: 50,
	}
	plan, err := Prepare(ctx, deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	deps.Out = &out
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(ctx, deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}

	after, err := cm.ReadState("a")
	if err != nil {
		t.Fatal(err)
	}
	p, running := cluster.PID(after.DataDir)
	again, _ := procfs.StartTime(p)
	if !running || p != pid || !again.Equal(began) || !after.StartedAt.Equal(user.StartedAt) {
		t.Errorf("the user's cluster a: pid %d (running %v) started %s, state started %s; before pid %d started %s, state %s", p, running, again, after.StartedAt, pid, began, user.StartedAt)
	}
	if after.Port != user.Port || after.MaxClients != user.MaxClients || !maps.Equal(after.Settings, user.Settings) || after.Settings["work_mem"] != "7MB" || after.Settings["pg_stat_statements.max"] != "777" {
		t.Errorf("the user's cluster a changed: port %d max_clients %d settings %v; before port %d max_clients %d settings %v", after.Port, after.MaxClients, after.Settings, user.Port, user.MaxClients, user.Settings)
	}

	own, err := cm.ReadState(ClusterName("a"))
	if err != nil {
		t.Fatalf("the matrix's cluster: %v", err)
	}
	if _, running := cluster.PID(own.DataDir); running || own.Settings["pg_stat_statements.max"] != "5000" {
		t.Errorf("the matrix's cluster %s: running %v, settings %v; want stopped, with the cells' settings", own.Name, running, own.Settings)
	}
	// Stopped, it keeps no socket directory; the user's running one does.
	if _, err := os.Lstat(own.SocketDir); err == nil {
		t.Errorf("the matrix's stopped cluster kept its socket directory %s", own.SocketDir)
	}
	if fi, err := os.Lstat(after.SocketDir); err != nil || !fi.IsDir() {
		t.Errorf("the user's cluster lost its socket directory %s: %v", after.SocketDir, err)
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	for _, rec := range recs {
		if rec.Status != results.StatusOK || !rec.Instructions {
			t.Fatalf("%s: %s %s %v", rec.Cell, rec.Status, rec.Error, rec.LogTail)
		}
		log, err := os.ReadFile(filepath.Join(dir, rec.Artifacts["server_log"]))
		if err != nil || rec.Artifacts["server_log"] == "" || !strings.Contains(string(log), "database system is shut down") {
			t.Errorf("%s: the quiet period's server log %q: %v\n%s", rec.Cell, rec.Artifacts["server_log"], err, log)
		}
	}
}

// TestInstrToConfirm: after one run of each instruction cell, a
// configuration is confirmed (one more block) only where a commit's
// count differs from the baseline's beyond the threshold: an A/A pair
// 0.001 % apart is not, a +0.2 % one is, and one already confirmed is
// not again.
func TestInstrToConfirm(t *testing.T) {
	o := opts()
	o.Instructions = true
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]float64{}
	var recs []results.Record
	for _, c := range p.Cells {
		if !c.Instructions {
			continue
		}
		v := 33796.8
		if c.Commit != p.Baseline {
			v = 33797.2 // A/A: 0.0012 %
			if c.Workload == "churn" && c.Settings["pg_stat_statements.max"] == "5000" {
				v = 33796.8 * 1.002
			}
		}
		count[c.ID] = v
		recs = append(recs, results.Record{Cell: c.ID, Commit: c.Commit, Config: c.Config, Repeat: c.Repeat, Status: results.StatusOK,
			Metrics: results.ValuesOf(map[string]float64{results.MetricInstructionsPerTx: v})})
	}
	ids, threshold := instrToConfirm(p, recs)
	if want := []string{"churn/instr/cpuall/pgss.max=5000"}; !slices.Equal(ids, want) || threshold != 0.1 {
		t.Fatalf("to confirm %v (threshold %v), want %v", ids, threshold, want)
	}
	r := &run{plan: p}
	for _, c := range r.configsOf(ids) {
		appendBlock(p, c, 2)
	}
	if again, _ := instrToConfirm(p, recs); len(again) != 0 {
		t.Errorf("confirmed again: %v", again)
	}
}

// TestOneInstructionRunDecides: with one instruction run per commit (the
// default) the analysis still calls +0.2 % worse and an A/A pair 0.001 %
// apart the same, gated, with nothing incomplete.
func TestOneInstructionRunDecides(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		want  results.Verdict
	}{{1.000012, results.Same}, {1.002, results.Worse}} {
		commits := []results.Commit{{Label: "base", Install: "/x", Build: "base"}, {Label: "patch", Install: "/y", Build: "patch"}}
		p, err := PlanFor(Request{Workloads: []string{"select1"}, Repeats: 3, Duration: 5 * time.Second, Protocol: "simple",
			Build: "release", Order: ABBA, Seed: 1, Instructions: true, Axes: map[string][]string{"clients": {"2"}, "settings": {results.PgssMax + "=5000"}}}, commits)
		if err != nil {
			t.Fatal(err)
		}
		in := &analysis.Input{Plan: p}
		for _, cell := range p.Cells {
			m := map[string]float64{results.MetricTPS: 1000 * (1 + 0.01*float64(cell.Repeat%2))}
			if cell.Instructions {
				v := 33796.8
				if cell.Commit == "patch" {
					v *= c.ratio
				}
				m = map[string]float64{results.MetricInstructionsPerTx: v}
			}
			in.Records = append(in.Records, results.Record{Cell: cell.ID, Commit: cell.Commit, Config: cell.Config, Repeat: cell.Repeat, Status: results.StatusOK, DurationS: 5, Metrics: results.ValuesOf(m)})
		}
		r, err := analysis.Analyze(in, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got results.Verdict
		for _, row := range r.Rows {
			for _, st := range row.Stats {
				if row.Metric == results.MetricInstructionsPerTx && st.Commit == "patch" {
					got = st.Verdict
				}
			}
		}
		if got != c.want || len(r.Incomplete) != 0 {
			t.Errorf("×%v: %q, incomplete %v; want %q", c.ratio, got, r.Incomplete, c.want)
		}
	}
}
