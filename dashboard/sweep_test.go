package dashboard

import (
	"slices"
	"testing"

	"github.com/pgabtest/abtest/store"
)

// TestRunPageConfigsInPlanOrder: the run page lists configurations in
// the order the store gives the cells (the plan's), not as strings
// (r1000 before r500), and says which points of a sweep saturated.
func TestRunPageConfigsInPlanOrder(t *testing.T) {
	d := &runData{cells: []store.Cell{
		{Config: "w/c4/cpuall/r500"}, {Config: "w/c4/cpuall/r500"},
		{Config: "w/c4/cpuall/r1000"}, {Config: "w/c4/cpuall/r4000", Saturated: true}, {Config: "w/c4/cpuall/r4000"},
	}, verdicts: []Verdict{{Config: "w/instr"}}}
	if got, want := d.configs(), []string{"w/c4/cpuall/r500", "w/c4/cpuall/r1000", "w/c4/cpuall/r4000", "w/instr"}; !slices.Equal(got, want) {
		t.Errorf("configs %v, want %v", got, want)
	}
	labels := d.configLabels()
	if len(labels) != 1 || labels["w/c4/cpuall/r4000"] != "w/c4/cpuall/r4000 (saturated in 1 of 2 cells)" {
		t.Errorf("labels %v", labels)
	}
}
