package analysis

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// instrInput is a run with --instructions and one repeat (one client:
// the timed and the instruction cells share workload, clients and CPUs
// and must still be told apart): base, a
// patch costing +3 607 instructions per transaction (+9.8 %), and an
// A/A arm 0.01 % off (the measured run-to-run spread is far smaller).
func instrInput(t *testing.T) *Input {
	t.Helper()
	commits := []results.Commit{{Label: "base", Ref: "m", SHA: "1", Build: "base"}, {Label: "patch", Ref: "m", SHA: "2", Build: "patch"}, {Label: "aa", Ref: "m", SHA: "1", Build: "base"}}
	p, err := matrix.PlanFor(matrix.Request{Workloads: []string{"select1"}, Clients: []int{1}, Repeats: 1, Duration: 5 * time.Second, Order: matrix.ABBA, Instructions: true}, commits)
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Dirs: []string{t.TempDir()}, Plan: p}
	for _, c := range p.Cells {
		rec := results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Workload: c.Workload, Clients: c.Clients, Settings: c.Settings, Repeat: c.Repeat, Status: results.StatusOK}
		if !c.Instructions {
			rec.Metrics = map[string]float64{"tps": 10000}
		} else {
			per := map[string]float64{"base": 36803, "patch": 36803 + 3607, "aa": 36803 * 1.0001}[c.Commit]
			rec.Instructions = true
			rec.Instr = &results.InstrInfo{Method: "valgrind-cachegrind", Transactions: 2000, Seed: 1}
			rec.Metrics = map[string]float64{"instructions_per_tx": per, "instructions": per * 2000}
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

func TestGroupDigits(t *testing.T) {
	for x, want := range map[float64]string{3607: "+3 607", -1234567: "-1 234 567", 12: "+12", 0: "+0", 999.6: "+1 000"} {
		if got := groupDigits(x, true); got != want {
			t.Errorf("groupDigits(%v) = %q, want %q", x, got, want)
		}
	}
}
