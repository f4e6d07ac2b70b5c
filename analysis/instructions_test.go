package analysis

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"
)

// instrInput is a run with --instructions and one repeat (one client:
// the timed and the instruction cells share workload, clients and CPUs
// and must still be told apart): base, a
// patch costing +3 607 instructions per transaction (+9.8 %), and an
// A/A arm 0.01 % off (the measured run-to-run spread is far smaller).
func instrInput(t *testing.T) *Input { return instrRun(t, false) }

// instrRun is instrInput, with only its instruction cells when only is
// set (matrix --instructions-only).
func instrRun(t *testing.T, only bool) *Input {
	t.Helper()
	commits := []results.Commit{{Label: "base", Ref: "m", SHA: "1", Build: "base"}, {Label: "patch", Ref: "m", SHA: "2", Build: "patch"}, {Label: "aa", Ref: "m", SHA: "1", Build: "base"}}
	p, err := matrix.PlanFor(matrix.Request{Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"1"}}, Repeats: 1, Duration: 5 * time.Second, Order: matrix.ABBA, Instructions: !only, InstructionsOnly: only}, commits)
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Dirs: []string{t.TempDir()}, Plan: p}
	for _, c := range p.Cells {
		rec := results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: results.Config{Workload: c.Workload, Clients: c.Clients, Settings: c.Settings}, Repeat: c.Repeat, Status: results.StatusOK}
		if !c.Instructions {
			rec.Metrics = results.ValuesOf(map[string]float64{"tps": 10000})
		} else {
			per := map[string]float64{"base": 36803, "patch": 36803 + 3607, "aa": 36803 * 1.0001}[c.Commit]
			rec.Instructions = true
			rec.Instr = &results.InstrInfo{Method: "valgrind-cachegrind", Transactions: 2000, Seed: 1}
			rec.Metrics = results.ValuesOf(map[string]float64{"instructions_per_tx": per, "instructions": per * 2000})
		}
		in.Records = append(in.Records, rec)
	}
	return in
}

// TestInstructionsVerdicts: with one repeat per commit, the exact tier
// calls +9.8 % worse and a 0.01 % A/A difference same, and the report
// states the absolute change.
func TestInstructionsVerdicts(t *testing.T) {
	r, err := Analyze(instrInput(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]InstrWent{}
	for _, iw := range r.Instructions {
		got[iw.Commit] = iw
	}
	if iw := got["patch"]; iw.Verdict != results.Worse || iw.Diff < 3606 || iw.Diff > 3608 || iw.Config != "select1/instr/cpuall" {
		t.Errorf("patch: %+v", iw)
	}
	if iw := got["aa"]; iw.Verdict != results.Same {
		t.Errorf("A/A: %+v", iw)
	}
	var md, txt bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	for _, want := range []string{"## Instructions per transaction", "| select1/instr/cpuall | patch | valgrind-cachegrind | 36 803 | 40 410 | +3 607 | +9.80% | worse |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(txt.String(), "select1/instr/cpuall patch: +3 607 instructions per transaction, +9.80%") {
		t.Errorf("text report:\n%s", txt.String())
	}
}

// TestInstructionsOnlyRun: a run of instruction cells alone states its
// A/A arm on instructions_per_tx, not on a TPS no cell measured, and
// counts no test as short of repeats: the descriptive instructions
// count, with one pair, is no gated test (the report once said "1 gated
// tests have too few pairs" beside "one repeat answers").
func TestInstructionsOnlyRun(t *testing.T) {
	in := instrRun(t, true)
	for _, rec := range in.Records {
		if !rec.Instructions {
			t.Fatalf("a timed cell in an instruction-only plan: %s", rec.Cell)
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.AA == nil || r.AA.Metric != results.MetricInstructionsPerTx || !strings.Contains(r.AA.Note, "largest instructions_per_tx difference between them was 0.01%") || strings.Contains(r.AA.Note, "TPS") ||
		!strings.Contains(r.AA.Note, "only an instructions_per_tx change of") {
		t.Errorf("A/A: %+v", r.AA)
	}
	for _, sm := range r.Summaries {
		if sm.Unreachable != 0 {
			t.Errorf("%s: %d gated tests short of repeats", sm.Commit, sm.Unreachable)
		}
	}
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	if strings.Contains(md.String(), "too few pairs") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

func TestGroupDigits(t *testing.T) {
	for x, want := range map[float64]string{3607: "+3 607", -1234567: "-1 234 567", 12: "+12", 0: "+0", 999.6: "+1 000"} {
		if got := groupDigits(x, true); got != want {
			t.Errorf("groupDigits(%v) = %q, want %q", x, got, want)
		}
	}
}

// instrProfile is a valgrind instruction profile: one sample per
// function, its instructions.
func instrProfile(funcs map[string]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"},
	}
	for name, v := range funcs {
		fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
		loc := &profile.Location{ID: fn.ID, Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v}})
	}
	return p
}

// TestInstrWentRows: rows whose change prints as ±0.0 instructions/tx
// are left out, valgrind's bare addresses are summed into one row (and
// a large share of them gets the missing-symbols hint), rows are sorted
// by |Δ| and end with the profiles' totals.
func TestInstrWentRows(t *testing.T) {
	const tx = 1000
	base := map[string]int64{
		"ExecInterpExpr": 5_000_000, "LWLockAcquire": 2_000_000, "palloc": 1_000_000, "pfree": 700_000,
		"0x0000000004a1b2c0": 900_000, "0x000000000010a3b0": 300_000, "0x7f3a2b1c": 100_000,
	}
	cur := map[string]int64{
		"ExecInterpExpr":     5_000_040,                                                     // +0.04/tx: prints as +0.0
		"LWLockAcquire":      2_300_000,                                                     // +300
		"palloc":             1_000_000,                                                     // 0
		"pfree":              699_000,                                                       // −1
		"hash_bytes":         200,                                                           // new, +0.2
		"0x0000000004a1b2c0": 950_000, "0x000000000010a3b0": 300_000, "0x7f3a2b1c": 110_000, // +60 in all
	}
	r := &Report{Baseline: "base", Plan: &results.Plan{Options: results.PlanOpts{Instructions: true}}}
	b := &instrGroup{values: []float64{10000}, methods: []string{"valgrind-callgrind"}, prof: instrProfile(base), tx: tx}
	c := &instrGroup{values: []float64{10361.2}, methods: []string{"valgrind-callgrind"}, prof: instrProfile(cur), tx: tx}
	iw := r.instrWent("select1/instr/cpuall", "patch", b, c)
	var names []string
	for _, d := range iw.Deltas {
		names = append(names, d.Name)
	}
	if want := []string{"LWLockAcquire", profiles.UnresolvedAddresses, "pfree", "hash_bytes"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
	if iw.ProfileBase != 10000 || iw.ProfileNew != 10359.24 {
		t.Errorf("totals %v → %v, want 10000 → 10359.24", iw.ProfileBase, iw.ProfileNew)
	}
	r.Instructions = []InstrWent{iw}
	var md bytes.Buffer
	writeMarkdownBlocks(&md, r.instructionBlocks(false))
	for _, want := range []string{
		"| `[unresolved addresses]` | 1300.0 | 1360.0 | +60.0 |",
		"| all functions | 10000.0 | 10359.2 | +359.2 |",
		"Missing symbols: 13 % of base's instructions are unresolved. ",
		"Missing symbols: 13 % of patch's instructions are unresolved",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, bad := range []string{"| +0.0 |", "| -0.0 |", "`0x", "ExecInterpExpr", "palloc"} {
		if strings.Contains(md.String(), bad) {
			t.Errorf("markdown has %q:\n%s", bad, md.String())
		}
	}
	// Under 10 % unresolved: no hint.
	delete(base, "0x0000000004a1b2c0")
	delete(cur, "0x0000000004a1b2c0")
	b.prof, c.prof = instrProfile(base), instrProfile(cur)
	if iw := r.instrWent("select1/instr/cpuall", "patch", b, c); len(iw.Unresolved) > 0 {
		t.Errorf("hint at 4 %%: %+v", iw.Unresolved)
	}
}
