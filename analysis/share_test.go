package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// shareInput is a run whose db_time_pct halves in the patch (22 % →
// 10 % of the sampled backends), each cell sampling total backends of
// which the share is active, as the wait-event sampler counts them.
func shareInput(total int) *Input {
	in := input([]float64{100, 101, 99, 100, 100, 101}, []float64{100, 99, 101, 100, 101, 100})
	in.Plan.Options.Repeats, in.Plan.Options.Workloads = 6, []string{"select1"}
	for i := range in.Records {
		rec := &in.Records[i]
		share := 0.22 + 0.01*float64(i%3)
		if rec.Commit == "patch" {
			share = 0.10 + 0.01*float64(i%3)
		}
		active := int(share*float64(total) + 0.5)
		rec.Waits = &results.Waits{Ticks: total, Active: active, Idle: total - active, ByEvent: map[string]int{"IO:WALSync": active}}
		rec.Metrics = results.ValuesOf(map[string]float64{"tps": rec.Metrics.Value("tps"), results.MetricDBTimePct: 100 * float64(active) / float64(total)})
	}
	return in
}

func dbTime(t *testing.T, r *Report) Stat {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric == results.MetricDBTimePct {
			return row.Stats[1]
		}
	}
	t.Fatal("no db_time_pct row")
	return Stat{}
}

// TestShareOfFewSamples: the seed's ticker run said db_time_pct
// "22.2 → 10, −48 %, moved" from 5 and 2 active samples per cell. A
// share that rests on fewer than minShareSamples events (both commits
// together) has no verdict and no Δ in any form, is no change, and its
// wait shares are not shown; with 20 times the samples the same shares
// are compared.
func TestShareOfFewSamples(t *testing.T) {
	r, err := Analyze(shareInput(10), Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := dbTime(t, r)
	if st.NoSignal != fewSharesWhy || st.Verdict != results.Unknown || isFinite(st.DeltaPct) || !strings.Contains(st.Note, "rests on 12 and 6 sampled active backends") {
		t.Errorf("a share of 20 samples judged: %+v", st)
	}
	for _, c := range r.Changes {
		if c.Metric == results.MetricDBTimePct {
			t.Errorf("a share of 20 samples is a change: %+v", c)
		}
	}
	var md, txt, js bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "text": txt.String()} {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "db_time_pct") && (strings.Contains(l, "%]") || strings.Contains(l, "lower") || strings.Contains(l, "moved")) {
				t.Errorf("%s judges db_time_pct: %s", name, l)
			}
		}
		if !strings.Contains(out, "a share of fewer than 100 samples") {
			t.Errorf("%s lacks the footnote of the few samples:\n%s", name, out)
		}
	}
	if !strings.Contains(md.String(), "—‡ (6 active samples)") || strings.Contains(md.String(), "IO:WALSync 100%") {
		t.Errorf("markdown shows wait shares of 6 active samples:\n%s", md.String())
	}
	var back struct {
		Rows []struct {
			Metric string `json:"metric"`
			Stats  []struct {
				NoSignal string   `json:"no_signal"`
				DeltaPct *float64 `json:"delta_pct"`
			} `json:"stats"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, row := range back.Rows {
		if row.Metric == results.MetricDBTimePct && (row.Stats[1].NoSignal == "" || row.Stats[1].DeltaPct != nil) {
			t.Errorf("report.json gives db_time_pct a Δ or no reason: %+v", row.Stats[1])
		}
	}

	r, err = Analyze(shareInput(200), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := dbTime(t, r); st.NoSignal != "" || st.Verdict != results.Lower || !isFinite(st.DeltaPct) {
		t.Errorf("a share of 408 samples not compared: %+v", st)
	}
	md.Reset()
	r.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "IO:WALSync 100%, of 132 active samples") {
		t.Errorf("markdown hides wait shares of 132 active samples:\n%s", md.String())
	}
}

// TestWaitShiftOfFewSamples: a wait event that went from half of the
// active samples to none is no shift when either arm has fewer than
// minShareSamples of them.
func TestWaitShiftOfFewSamples(t *testing.T) {
	for _, tc := range []struct {
		active int
		want   bool
	}{{24, false}, {25, true}} { // 4 cells per commit
		in := input([]float64{100, 101, 99, 100}, []float64{110, 111, 109, 110})
		in.Plan.Options.Repeats, in.Plan.Options.Workloads = 4, []string{"select1"}
		for i := range in.Records {
			rec := &in.Records[i]
			rec.Waits = &results.Waits{Active: tc.active, ByEvent: map[string]int{"CPU": tc.active / 2, "LWLock:pg_stat_statements": tc.active - tc.active/2}}
			if rec.Commit == "patch" {
				rec.Waits.ByEvent = map[string]int{"CPU": tc.active}
			}
		}
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(r.WaitShifts) > 0; got != tc.want {
			t.Errorf("%d active samples per commit: shifts %+v, want some: %v", 4*tc.active, r.WaitShifts, tc.want)
		}
	}
}
