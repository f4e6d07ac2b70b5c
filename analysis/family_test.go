package analysis

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/gatesim"
	"github.com/pgabtest/abtest/results"
)

// Issue 40 items 2, 10, 11 and the primary per configuration.

// scale multiplies metric m of the candidate's records where pick
// says, in place.
func scale(recs []results.Record, m string, f float64, pick func(r *results.Record) bool) {
	for i := range recs {
		r := &recs[i]
		if v, ok := r.Metrics.Get(m); ok && r.Commit == "patch" && pick(r) {
			r.Metrics.Set(m, v*f)
		}
	}
}

func isChurn(r *results.Record) bool { return r.Workload == "churn" }

func analyzeRun(t testing.TB, p *results.Plan, recs []results.Record, o Options) *Report {
	t.Helper()
	r, err := Analyze(&Input{Plan: p, Records: recs}, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stat is the candidate's Stat of metric m in the configuration whose
// ID starts with prefix.
func stat(t testing.TB, r *Report, prefix, m string) Stat {
	t.Helper()
	for _, exact := range []bool{true, false} {
		for _, row := range r.Rows {
			if (row.Config == prefix || !exact && strings.HasPrefix(row.Config, prefix)) && row.Metric == m {
				return row.Stats[1]
			}
		}
	}
	t.Fatalf("no row %s %s", prefix, m)
	return Stat{}
}

func geomean(r *Report, m string) (Geomean, bool) {
	for _, g := range r.Geomeans {
		if g.Metric == m {
			return g, true
		}
	}
	return Geomean{}, false
}

// TestEventCountsOwnFamily (issue 40 item 10): where churn's
// pgss_deallocs triples (called worse) and tps did not change, churn's
// latency_p95 — 30 % better — is a secondary behind tps: untested, never
// called (it was called better in 100 of 100 runs, the count passing it
// α). The count still fails the gate. And tps's run-level p and MDE are
// the same with and without a count that changed (a rejected count took
// half of tps's α: run-level MDE 3.80 % → 4.15 %).
func TestEventCountsOwnFamily(t *testing.T) {
	rng := rand.New(rand.NewSource(40))
	demo := demoBlocks(t)
	var with, without []float64
	for run := range 20 {
		p, recs := gatesim.Run(rng, gatesim.Design{Configs: 4, Repeats: 8, Noise: gatesim.Noise{Real: demo}, Full: true})
		scale(recs, results.MetricPGSSDeallocs, 3, isChurn)
		scale(recs, results.MetricLatencyP95, 0.7, isChurn)
		r := analyzeRun(t, p, recs, Options{})
		tps, p95 := stat(t, r, "churn/", results.MetricTPS), stat(t, r, "churn/", results.MetricLatencyP95)
		if tps.Verdict == results.Worse || tps.Verdict == results.Better {
			continue // tps called by chance: its secondaries are tested then
		}
		if p95.Verdict == results.Better || !p95.Behind {
			t.Errorf("run %d: churn latency_p95 %s (behind %v) with tps %s p %.2g: a secondary tested behind an event count", run, p95.Verdict, p95.Behind, tps.Verdict, tps.P)
		}
		if d := stat(t, r, "churn/", results.MetricPGSSDeallocs); d.Verdict != results.Worse || !errors.Is(r.Gate(), ErrRegression) {
			t.Errorf("run %d: pgss_deallocs ×3: %s, gate %v; want worse, exit 1", run, d.Verdict, r.Gate())
		}
		// The same run without the count.
		for i := range recs {
			recs[i].Metrics.Delete(results.MetricPGSSDeallocs)
		}
		r0 := analyzeRun(t, p, recs, Options{})
		g, _ := geomean(r, results.MetricTPS)
		g0, _ := geomean(r0, results.MetricTPS)
		if g.P != g0.P || g.DetectablePct != g0.DetectablePct || g.Verdict != g0.Verdict {
			t.Errorf("run %d: run-level tps with a changed count p %.4g MDE %.3f%% %s, without p %.4g MDE %.3f%% %s; want the same", run, g.P, g.DetectablePct, g.Verdict, g0.P, g0.DetectablePct, g0.Verdict)
		}
		if st, st0 := stat(t, r, "churn/", results.MetricTPS), stat(t, r0, "churn/", results.MetricTPS); st.DetectablePct != st0.DetectablePct {
			t.Errorf("run %d: churn tps MDE %.3f%% with the count, %.3f%% without; want the same", run, st.DetectablePct, st0.DetectablePct)
		}
		with, without = append(with, g.DetectablePct), append(without, g0.DetectablePct)
	}
	if len(with) < 15 {
		t.Fatalf("tps called by chance in %d of 20 A/A runs", 20-len(with))
	}
	t.Logf("README design (4 configurations, r 8, the demo's noise): median run-level tps MDE %.2f%% with churn's pgss_deallocs ×3, %.2f%% without it", medianOf(with), medianOf(without))
}

func medianOf(xs []float64) float64 { return Median(slices.Clone(xs)) }

// TestDerivedAgree (issue 40 item 11): in a closed loop latency_avg_ms
// is clients/tps, so its Δ and intervals are the reciprocal of tps's
// paired estimate, bounds swapped (tps −2.41 % once sat beside
// latency_avg +3.40 %, a ratio of medians, where +2.47 % is implied);
// with -R it is pgbench's own measurement, tested as itself (not "as
// tps"): a latency that rose 20 % at a held rate is worse there.
func TestDerivedAgree(t *testing.T) {
	p, recs := gatesim.Run(rand.New(rand.NewSource(11)), gatesim.Design{Configs: 2, Repeats: 8, Effect: -0.024, Noise: gatesim.Noise{CV: 0.02}})
	r := analyzeRun(t, p, recs, Options{})
	for _, id := range []string{"select1/", "churn/"} {
		tps, lat := stat(t, r, id, results.MetricTPS), stat(t, r, id, results.MetricLatencyAvg)
		want := 100 * (1/(1+tps.DeltaPct/100) - 1)
		if lat.Method != "as tps" || math.Abs(lat.DeltaPct-want) > 1e-9 {
			t.Errorf("%s: tps %+.3f%%, latency_avg %+.3f%% (%s); want %+.3f%% as tps", id, tps.DeltaPct, lat.DeltaPct, lat.Method, want)
		}
		lo, hi := 100*(1/(1+tps.DeltaHi/100)-1), 100*(1/(1+tps.DeltaLo/100)-1)
		if math.Abs(lat.DeltaLo-lo) > 1e-9 || math.Abs(lat.DeltaHi-hi) > 1e-9 || !(lat.DeltaLo <= lat.DeltaPct && lat.DeltaPct <= lat.DeltaHi) {
			t.Errorf("%s: latency_avg interval [%.3f, %.3f] around %.3f; want [%.3f, %.3f], tps's swapped", id, lat.DeltaLo, lat.DeltaHi, lat.DeltaPct, lo, hi)
		}
	}
	// Open loop: latency_avg is its own; tps held by the rate.
	for i := range p.Configs {
		p.Configs[i].Rate = 5000
	}
	for i := range p.Cells {
		p.Cells[i].Config.Rate = 5000
	}
	p.Options.Rates = []float64{5000}
	rng := rand.New(rand.NewSource(12))
	for i := range recs {
		recs[i].Rate = 5000
		recs[i].Metrics.Set(results.MetricTPS, 5000*(1+0.001*rng.NormFloat64()))
		lat := 0.5 * (1 + 0.02*rng.NormFloat64())
		if recs[i].Commit == "patch" {
			lat *= 1.2
		}
		recs[i].Metrics.Set(results.MetricLatencyAvg, lat)
		recs[i].Metrics.Set(results.MetricLatencyP99, 2*lat)
	}
	r = analyzeRun(t, p, recs, Options{})
	for _, id := range []string{"select1/", "churn/"} {
		lat := stat(t, r, id, results.MetricLatencyAvg)
		if lat.Method == "as tps" || lat.Verdict != results.Worse || lat.DeltaPct < 15 {
			t.Errorf("open loop %s: latency_avg %s %+.2f%% (%s); want its own test, worse by ~20%%", id, lat.Verdict, lat.DeltaPct, lat.Method)
		}
	}
}

// TestDeltaInsideInterval (issue 40): every Δ shown lies inside its
// own 95 % and decision intervals. A metric with zeros has differences
// relative to the baseline, not log ratios; relative to the baseline's
// median, pairs whose baseline lay above it summed past −100 %
// (buffers_read −100.14 % beside [−100, −97.7]). Here the baseline reads
// 0, 1 or 30 blocks a transaction and the candidate nearly none.
func TestDeltaInsideInterval(t *testing.T) {
	p, recs := gatesim.Run(rand.New(rand.NewSource(14)), gatesim.Design{Configs: 2, Repeats: 8, Noise: gatesim.Noise{CV: 0.02}, Full: true})
	for i := range recs {
		v := []float64{0, 1, 1, 30, 1, 0.9, 1.1, 28}[recs[i].Repeat-1]
		if recs[i].Commit == "patch" {
			v = []float64{0, 0, 0.01, 0, 0, 0, 0.02, 0}[recs[i].Repeat-1]
		}
		recs[i].Metrics.Set(results.MetricBuffersReadPerTx, v)
	}
	r := analyzeRun(t, p, recs, Options{})
	n := 0
	for _, row := range r.Rows {
		for _, st := range row.Stats[1:] {
			if !isFinite(st.DeltaPct) {
				continue
			}
			if isFinite(st.DeltaLo) && !(st.DeltaLo <= st.DeltaPct && st.DeltaPct <= st.DeltaHi) ||
				isFinite(st.DecideLo) && !(st.DecideLo <= st.DeltaPct && st.DeltaPct <= st.DecideHi) {
				t.Errorf("%s %s: Δ %+.2f%% outside its interval [%.2f, %.2f] (decision [%.2f, %.2f])", row.Config, row.Metric, st.DeltaPct, st.DeltaLo, st.DeltaHi, st.DecideLo, st.DecideHi)
			}
			if row.Metric == results.MetricBuffersReadPerTx {
				n++
				if st.DeltaPct < -100 || st.DeltaPct > -99 {
					t.Errorf("%s buffers_read: Δ %+.2f%%; want the ratio of the means, −99.9 %%", row.Config, st.DeltaPct)
				}
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d buffers_read rows; want 2", n)
	}
}

// mixedLoops is a run of select1 and churn each at -R 0 and -R 500 (a
// plan mixing loops), r 8: tps changes by tpsEff in the closed loop,
// latency_p99 and a declared delivery_p99_ms by latEff in the open one.
func mixedLoops(rng *rand.Rand, tpsEff, latEff float64) (*results.Plan, []results.Record) {
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: append(slices.Clone(results.Builtin),
		results.Metric{Name: "delivery_p99_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport}),
		Commits: []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "patch"}},
		Options: results.PlanOpts{Repeats: 8, Rates: []float64{0, 500}}}
	var recs []results.Record
	for _, w := range []string{"select1", "churn"} {
		for _, rate := range []float64{0, 500} {
			cfg := results.Config{Workload: w, Clients: 4, Rate: rate}
			p.Configs = append(p.Configs, cfg)
			for rep := 1; rep <= 8; rep++ {
				for _, c := range []string{"base", "patch"} {
					id := fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c)
					p.Cells = append(p.Cells, results.Cell{ID: id, Commit: c, Repeat: rep, Config: cfg})
					tps, lat := 20000*(1+0.02*rng.NormFloat64()), 0.4*(1+0.03*rng.NormFloat64())
					if rate > 0 {
						tps = rate * (1 + 0.001*rng.NormFloat64())
					}
					if c == "patch" && rate == 0 {
						tps *= 1 + tpsEff
					}
					if c == "patch" && rate > 0 {
						lat *= 1 + latEff
					}
					m := map[string]float64{results.MetricTPS: tps, results.MetricLatencyAvg: 1000 * 4 / tps, results.MetricLatencyP99: lat,
						"delivery_p99_ms": 10 * lat}
					recs = append(recs, results.Record{Cell: id, Commit: c, Config: cfg, Repeat: rep, Status: results.StatusOK, Metrics: results.ValuesOf(m), LatencyMethod: "intervals"})
				}
			}
		}
	}
	return p, recs
}

// TestPrimaryPerLoop (issue 40 item 2): a closed loop's primary is tps,
// an open loop's latency_p99_ms (declared report-only, gated as the
// primary there and reported in the closed loop) or the metric its
// workload declares; the run-level answer pools only configurations of
// one primary, one pooled test per primary metric; --primary overrides;
// -n's reach counts the same configurations. A +30 % p99 at a held rate
// fails the gate (it passed: tps, the primary, was the rate itself).
func TestPrimaryPerLoop(t *testing.T) {
	p, recs := mixedLoops(rand.New(rand.NewSource(2)), 0, 0.3)
	r := analyzeRun(t, p, recs, Options{})
	gt, okT := geomean(r, results.MetricTPS)
	gl, okL := geomean(r, results.MetricLatencyP99)
	if !okT || !okL || gt.Configs != 2 || gl.Configs != 2 || len(r.Geomeans) != 2 {
		t.Fatalf("geomeans %+v; want tps over the 2 closed loops and latency_p99_ms over the 2 open ones", r.Geomeans)
	}
	if gl.Verdict != results.Worse || exitcode.Code(r.Gate()) != exitcode.Regression {
		t.Errorf("open-loop p99 +30%%: run level %s, gate %v; want worse, exit 1", gl.Verdict, r.Gate())
	}
	if st := stat(t, r, "select1/c4/cpuall/r500", results.MetricLatencyP99); !st.Gated || st.Verdict != results.Worse {
		t.Errorf("open-loop select1 latency_p99: gated %v %s; want gated, worse", st.Gated, st.Verdict)
	}
	if st := stat(t, r, "select1/c4/cpuall", results.MetricLatencyP99); st.Gated {
		t.Errorf("closed-loop select1 latency_p99 gated; want reported only (declared report-only, not the primary there)")
	}
	if !slices.ContainsFunc(r.Tiers, func(tr Tier) bool {
		return tr.Metric == results.MetricLatencyP99 && tr.Gated && strings.Contains(tr.Why, "primary of 2")
	}) {
		t.Errorf("tiers %+v; want latency_p99_ms gated as the primary of 2 configurations", r.Tiers)
	}
	reach := PlanReach(p, Options{})
	if len(reach) != 2 || reach[0].Metric != results.MetricTPS || reach[1].Metric != results.MetricLatencyP99 || reach[0].Configs != 2 || reach[1].Configs != 2 || reach[0].Level != reach[1].Level || math.Abs(reach[0].Level-0.01/2/2/2) > 1e-12 {
		t.Errorf("reach %+v; want tps and latency_p99_ms over 2 configurations each, each at level α/2/2/2", reach)
	}
	// --primary tps: the old answer, blind to the open loop's latency.
	if r := analyzeRun(t, p, recs, Options{Primary: []string{results.MetricTPS}}); len(r.Geomeans) != 1 || r.Geomeans[0].Metric != results.MetricTPS || r.Geomeans[0].Configs != 4 {
		t.Errorf("--primary tps: geomeans %+v; want tps over all 4", r.Geomeans)
	}
	// A declared primary: delivery_p99_ms for churn's open loop.
	p.Options.Declares = map[string]results.WorkloadDeclares{"churn": {Primary: "delivery_p99_ms"}}
	r = analyzeRun(t, p, recs, Options{})
	if st := stat(t, r, "churn/c4/cpuall/r500", "delivery_p99_ms"); !st.Gated || st.Verdict != results.Worse || !slices.ContainsFunc(r.Regressions, func(c Change) bool { return c.Metric == "delivery_p99_ms" }) {
		t.Errorf("declared primary delivery_p99_ms: gated %v %s, regressions %+v; want gated, worse, a regression", st.Gated, st.Verdict, r.Regressions)
	}
	if st := stat(t, r, "churn/c4/cpuall/r500", results.MetricLatencyP99); st.Gated {
		t.Errorf("churn's open loop declares its primary: latency_p99 there is reported only")
	}
	if reach := PlanReach(p, Options{}); len(reach) != 3 {
		t.Errorf("reach %+v; want tps, latency_p99_ms and delivery_p99_ms", reach)
	}
	// A declared primary the plan does not define is said and not used.
	p.Options.Declares = map[string]results.WorkloadDeclares{"churn": {Primary: "no_such_metric"}}
	r = analyzeRun(t, p, recs, Options{})
	if g, _ := geomean(r, results.MetricLatencyP99); g.Configs != 2 || !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "no_such_metric") }) {
		t.Errorf("an unknown declared primary: geomeans %+v, warnings %q; want latency_p99_ms over both open loops and a warning", r.Geomeans, r.Warnings)
	}
}

// TestPrimaryPerLoopAA: A/A runs of the mixed-loop plan exit 1 in at
// most 1 % of runs: two primaries, each an equal share of α.
func TestPrimaryPerLoopAA(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alarms := 0
	for range 200 {
		p, recs := mixedLoops(rng, 0, 0)
		if errors.Is(analyzeRun(t, p, recs, Options{}).Gate(), ErrRegression) {
			alarms++
		}
	}
	if alarms > 2 {
		t.Errorf("mixed loops A/A: exit 1 in %d of 200 runs; want ≤ 2", alarms)
	}
}
