package analysis

import (
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestObserverCostLine: the host section says what measuring cost,
// summed over the cells that recorded it, and marks a cost above the
// target; without any, it says nothing (older results).
func TestObserverCostLine(t *testing.T) {
	in := input([]float64{100, 101, 99}, []float64{100, 100, 101})
	report := func() (md, txt string) {
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var m, x strings.Builder
		if err := r.WriteMarkdown(&m); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(&x); err != nil {
			t.Fatal(err)
		}
		return m.String(), x.String()
	}
	if md, txt := report(); strings.Contains(md, "measuring cost") || strings.Contains(txt, "measuring cost") {
		t.Errorf("a measuring cost without any cell's:\n%s", md)
	}
	// 6 cells of 30 s: backend 30 ms, abtest 60 ms, log 30 ms each:
	// 120 ms in 30 s, 0.4 % of one core.
	for i := range in.Records {
		in.Records[i].Observer = &results.Observer{WindowS: 30, BackendS: 0.03, AbtestS: 0.06, PgbenchLogS: 0.03, PgbenchS: 10, ServerS: 50}
	}
	want := "measuring cost 0.40 % of one core (sampler backend 0.10 %, abtest 0.20 %, pgbench logging 0.10 %; 0.20 % of the window's server and pgbench CPU) over 6 cells"
	md, txt := report()
	if !strings.Contains(md, "- "+want+"\n") {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
	if !strings.Contains(strings.Join(strings.Fields(txt), " "), want) {
		t.Errorf("text lacks %q:\n%s", want, txt)
	}
	in.Records[0].Observer.AbtestS = 3
	if md, _ := report(); !strings.Contains(md, "above the target of 1 %") {
		t.Errorf("a cost of %.2f %% is not marked:\n%s", in.Records[0].Observer.PctOfCore(), md)
	}
}
