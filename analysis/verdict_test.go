package analysis

import (
	"bytes"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// TestLatencyMethodsNotCompared (issue 13 item 9): when the cells of a
// configuration were not all measured by one latency method (the last
// repeats of a commit came from a shard or resumption run by another
// abtest version), its latency percentiles are refused there — an
// incomplete verdict saying why, which gates — and compared as usual
// where one method measured everything.
func TestLatencyMethodsNotCompared(t *testing.T) {
	in := loadFixture(t)
	mixed := "select1/c8/cpuall/pgss.max=1000"
	edit(in, func(r *results.Record) {
		r.Metrics.Set("latency_p50_ms", 0.2*(1+0.01*float64(r.Repeat%3)))
		r.LatencyMethod = "completion-intervals"
		if r.Config.ID() == mixed && r.Commit == "patch" && r.Repeat > 6 {
			r.LatencyMethod = "pgbench-latency"
		}
	})
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var refused []Incomplete
	for _, inc := range r.Incomplete {
		if inc.Metric == "latency_p50_ms" {
			refused = append(refused, inc)
		}
	}
	want := "latency_p50_ms measured by completion-intervals in base and by completion-intervals and pgbench-latency in patch: different latency methods are not compared"
	if len(refused) != 1 || refused[0].Config != mixed || refused[0].Why != want || !refused[0].Gated {
		t.Fatalf("incomplete latency: %+v; want one, gated, in %s: %q", refused, mixed, want)
	}
	for _, row := range r.Rows {
		if row.Metric != "latency_p50_ms" {
			continue
		}
		st := row.Stats[1]
		if got := st.Verdict == results.Incomplete; got != (row.Config == mixed) {
			t.Errorf("%s: verdict %s (%s)", row.Config, st.Verdict, st.Note)
		}
		if row.Config == mixed && st.Note != want {
			t.Errorf("%s: note %q", row.Config, st.Note)
		}
	}
	// Without the regression elsewhere, the refusal alone gates: exit 3.
	r.Regressions = nil
	if err := r.Gate(); exitcode.Code(err) != exitcode.Infra || !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "latency_p50_ms") {
		t.Errorf("gate: %v", err)
	}
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	if !strings.Contains(md.String(), want) {
		t.Errorf("the markdown summary does not say why")
	}
}

// TestInstructionMethodsNotCompared: instruction counts by valgrind and
// by the CPU's counter in one comparison are refused in the metric rows
// too, not only in the instruction table.
func TestInstructionMethodsNotCompared(t *testing.T) {
	for _, mixed := range []bool{false, true} {
		in := input([]float64{1, 1, 1, 1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1, 1, 1, 1})
		edit(in, func(r *results.Record) {
			r.Metrics.Set("instructions_per_tx", 35000)
			r.Instr = &results.InstrInfo{Method: "valgrind-callgrind"}
			if mixed && r.Commit == "patch" && r.Repeat%2 == 0 {
				r.Instr.Method = "perf-stat"
			}
		})
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, row := range r.Rows {
			if row.Metric != "instructions_per_tx" {
				continue
			}
			seen++
			st := row.Stats[1]
			if (st.Verdict == results.Incomplete) != mixed || mixed && !strings.Contains(st.Note, "by perf-stat and valgrind-callgrind in patch") {
				t.Errorf("mixed %v: %s (%s)", mixed, st.Verdict, st.Note)
			}
		}
		if seen == 0 {
			t.Fatalf("mixed %v: no instructions_per_tx row", mixed)
		}
	}
}

// TestSequentialBlocksReported: under --until-decided the report says
// how many blocks a verdict took. A 4 % TPS drop at 2 % noise, planned 4
// repeats, at most 16, one block a look: the t test passes the
// Pocock-type per-look level at 8 pairs (look 5), so the verdict is
// worse after 8 blocks, in the stat, the summary, the markdown and the
// text; a fixed design says nothing of blocks.
func TestSequentialBlocksReported(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	base := noisy(rng, 16, 50000, 0.02)
	patch := make([]float64, len(base))
	for i, b := range base {
		patch[i] = 0.96 * b * (1 + 0.02*rng.NormFloat64())
	}
	in := input(base, patch)
	in.Plan.Options.Repeats, in.Plan.Options.Workloads = 4, []string{"select1"}
	r, err := Analyze(in, Options{Sequential: Sequential{Step: 1, MaxRepeats: 16}})
	if err != nil {
		t.Fatal(err)
	}
	st := tpsStat(t, r)
	if st.Verdict != results.Worse || st.Blocks != 8 || st.Look != 5 || r.Summaries[0].Blocks != 8 {
		t.Fatalf("tps: %s after %d blocks at look %d, summary %d; want worse after 8 at look 5", st.Verdict, st.Blocks, st.Look, r.Summaries[0].Blocks)
	}
	var md, text bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteText(&text)
	line := "until-decided: the gated verdicts took up to 8 blocks per configuration (4 planned, at most 16)"
	for name, out := range map[string]string{"markdown": md.String(), "text": strings.Join(strings.Fields(text.String()), " ")} {
		if !strings.Contains(out, line) || !strings.Contains(out, "worse, after 8 blocks") {
			t.Errorf("%s lacks the blocks:\n%s", name, out)
		}
	}
	fixed, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fmd bytes.Buffer
	fixed.WriteMarkdown(&fmd)
	if tpsStat(t, fixed).Blocks != 0 || strings.Contains(fmd.String(), "blocks per configuration") {
		t.Errorf("a fixed design reports blocks")
	}
}

func tpsStat(t *testing.T, r *Report) Stat {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric == "tps" {
			return row.Stats[1]
		}
	}
	t.Fatal("no tps row")
	return Stat{}
}

// TestNoiseNeverUngates: a TPS spread of 30 % between cells costs power
// (and raises no bar: issue 40), but leaves tps gated, with or without the extra
// blocks of --until-decided: a cutoff on the measured spread switched
// tiers from run to run (issue 21 item 9), and the primary must answer
// or say it could not (exit 3), never drop out of the gate.
func TestNoiseNeverUngates(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	in := input(noisy(rng, 4, 30000, 0.3), noisy(rng, 4, 30000, 0.3))
	in.Plan.Options.Repeats = 4
	for _, seq := range []Sequential{{}, {Step: 1, MaxRepeats: 20}} {
		r, err := Analyze(in, Options{Sequential: seq})
		if err != nil {
			t.Fatal(err)
		}
		for _, tier := range r.Tiers {
			if tier.Metric == "tps" && (!tier.Gated || tier.Tier != results.TierBand) {
				t.Errorf("%+v: tps %s, gated %v (%s); want band, gated", seq, tier.Tier, tier.Gated, tier.Why)
			}
		}
		if seq == (Sequential{}) && !errors.Is(r.Gate(), ErrUnanswered) {
			t.Errorf("4 pairs at 30%% noise: gate %v; want could not answer", r.Gate())
		}
	}
}

// TestObservedExactNeedsAShift: a banded metric that never varied on
// the baseline (WAL records of a read-only workload: 0) is not called
// worse for background WAL in one candidate cell — an event, unknown —
// but is when every candidate cell has it; a declared counter
// (failed_tx) is called on a single cell as before.
func TestObservedExactNeedsAShift(t *testing.T) {
	for _, tc := range []struct {
		metric string
		cand   []float64
		want   results.Verdict
	}{
		{"wal_records_per_tx", []float64{0, 0, 0, 0.001, 0, 0, 0, 0}, results.Unknown},
		{"wal_records_per_tx", []float64{0.5, 0.5, 0.4, 0.5, 0.5, 0.6, 0.5, 0.5}, results.Worse},
		{"failed_tx", []float64{0, 0, 0, 3, 0, 0, 0, 0}, results.Unknown},
	} {
		in := input([]float64{1, 1, 1, 1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1, 1, 1, 1})
		edit(in, func(r *results.Record) {
			r.Metrics.Set(tc.metric, 0)
			if r.Commit == "patch" {
				r.Metrics.Set(tc.metric, tc.cand[r.Repeat-1])
			}
		})
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Rows {
			if row.Metric != tc.metric {
				continue
			}
			st := row.Stats[1]
			method, note := "exact", "an event, not a shift"
			if tc.metric == "failed_tx" {
				// An event count: sporadic failures are judged by the
				// rate of the totals (3 against 0: p = 0.25), not as a
				// shift of a constant.
				method, note = "rate", "from a baseline of 0"
			}
			if st.Verdict != tc.want || st.Method != method || tc.want == results.Unknown && !strings.Contains(st.Note, note) {
				t.Errorf("%s %v: %s by %s (%s); want %s", tc.metric, tc.cand, st.Verdict, st.Method, st.Note, tc.want)
			}
		}
		if regressed := len(r.Regressions) > 0; regressed != (tc.want == results.Worse) {
			t.Errorf("%s %v: regressions %+v", tc.metric, tc.cand, r.Regressions)
		}
	}
}

// TestVaryingCounterNeedsEvidence: a declared counter whose baseline
// varied (statements_per_tx on churn when pg_stat_statements evicts:
// ±0.4 %) is not called on 2 + 2 repeats where both candidate values
// happen to lie above the baseline's (a third of A/A runs), but is when
// every one of 5 lies beyond it (p = 2/252); failed_tx of 0, 0, 1, 0, 0
// against 5 000 a cell is called worse.
func TestVaryingCounterNeedsEvidence(t *testing.T) {
	for _, tc := range []struct {
		metric     string
		base, cand []float64
		want       results.Verdict
	}{
		{"statements_per_tx", []float64{1.0010, 1.0020}, []float64{1.0045, 1.0030}, results.Unknown},
		{"statements_per_tx", []float64{1.0010, 1.0020, 1.0015, 1.0012, 1.0018}, []float64{1.05, 1.06, 1.05, 1.04, 1.05}, results.Worse},
		{"failed_tx", []float64{0, 0, 1, 0, 0}, []float64{5000, 5100, 4900, 5000, 5050}, results.Worse},
	} {
		ones := make([]float64, len(tc.base))
		for i := range ones {
			ones[i] = 100
		}
		in := input(ones, ones)
		edit(in, func(r *results.Record) {
			if r.Commit == "patch" {
				r.Metrics.Set(tc.metric, tc.cand[r.Repeat-1])
			} else {
				r.Metrics.Set(tc.metric, tc.base[r.Repeat-1])
			}
		})
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Rows {
			if row.Metric == tc.metric {
				method := "exact"
				if tc.metric == "failed_tx" {
					method = "rate"
				}
				if st := row.Stats[1]; st.Verdict != tc.want || st.Method != method {
					t.Errorf("%s %v vs %v: %s by %s (p %v); want %s", tc.metric, tc.base, tc.cand, st.Verdict, st.Method, st.P, tc.want)
				}
			}
		}
	}
}
