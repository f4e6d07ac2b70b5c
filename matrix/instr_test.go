package matrix

import (
	"context"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
)

// TestPlanInstructions: --instructions adds one instruction cell per
// commit × workload × settings to every repeat (not per client count or
// CPU count: those would repeat the same count), interleaved ABBA like
// the timed cells, and the plan without it is unchanged.
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
	// 2 workloads × 2 pgss.max × 2 repeats × 2 commits.
	if got, want := len(p.Cells)-len(without.Cells), 2*2*2*2; got != want {
		t.Fatalf("%d instruction cells, want %d", got, want)
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
}

// TestPlanInstructionsOnly: instruction-only plans no timed cells and
// refuses a clients axis other than one client.
func TestPlanInstructionsOnly(t *testing.T) {
	o := opts()
	o.InstructionsOnly, o.Clients = true, []int{1}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		if !c.Instructions {
			t.Errorf("timed cell %s in an instruction-only plan", c.ID)
		}
	}
	if len(p.Cells) != 2*2*2*2 || !p.Options.Instructions {
		t.Errorf("%d cells, options %+v", len(p.Cells), p.Options)
	}
	o.Clients = []int{1, 4}
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
	o.InstructionsOnly, o.Clients = true, []int{1}
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
