package analysis

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestWaitShifts: the demo's explanation (LWLock:pg_stat_statements half
// of the waits in base, gone in the patch) is listed in every format; a
// difference of a few points between equal arms is not.
func TestWaitShifts(t *testing.T) {
	in := input([]float64{100, 101, 99, 100}, []float64{110, 111, 109, 110})
	in.Plan.Options.Repeats, in.Plan.Options.Workloads = 4, []string{"select1"}
	for i := range in.Records {
		rec := &in.Records[i]
		rec.Waits = &results.Waits{Active: 100, Idle: 0, ByEvent: map[string]int{"CPU": 50, "LWLock:pg_stat_statements": 50}}
		if rec.Commit == "patch" {
			rec.Waits.ByEvent = map[string]int{"CPU": 97, "IO:DataFileRead": 3}
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.WaitShifts) != 2 || r.WaitShifts[0].Event != "LWLock:pg_stat_statements" || r.WaitShifts[0].BasePct != 50 || r.WaitShifts[0].CommitPct != 0 {
		t.Fatalf("shifts %+v, want LWLock:pg_stat_statements 50 %% → 0 %% first, then CPU", r.WaitShifts)
	}
	var md, txt, js bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	r.WriteJSON(&js)
	want := "select1: LWLock:pg_stat_statements 50.0% of active samples in base, 0.0% in patch (-50.0 points; 400 and 400 samples)"
	for name, out := range map[string]string{"markdown": md.String(), "text": strings.Join(strings.Fields(txt.String()), " ")} {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, out)
		}
	}
	if !strings.Contains(js.String(), `"event": "LWLock:pg_stat_statements"`) {
		t.Errorf("json lacks the shift")
	}

	// IO:DataFileRead at 3 % of the patch's samples only: under the
	// floor of 5 points, not listed.
	for _, s := range r.WaitShifts {
		if s.Event == "IO:DataFileRead" {
			t.Errorf("a 3-point shift listed: %+v", s)
		}
	}
}
