package analysis

// An A/A run: two arms of one build differ only by noise, and the
// report says how much.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// AA is what an A/A run (two arms of one build) says about noise.
type AA struct {
	Arms []string `json:"arms"`
	// Metric is what the arms are compared on: TPS, or
	// instructions_per_tx in a run of instruction cells only.
	Metric string `json:"metric"`
	// MaxDeltaPct is the largest |Δ| of Metric between the arms.
	MaxDeltaPct float64 `json:"max_delta_pct"`
	// DetectablePct is the smallest change of Metric this run could have
	// called in its least precise configuration.
	DetectablePct float64 `json:"detectable_pct"`
	Note          string  `json:"note"`
}

func (r *Report) aa() {
	builds := map[string][]string{}
	for _, c := range r.Plan.Commits {
		builds[c.Build] = append(builds[c.Build], c.Label)
	}
	for _, arms := range builds {
		if len(arms) < 2 || !slices.Contains(arms, r.Baseline) {
			continue
		}
		a := &AA{Arms: arms, Metric: r.aaMetric()}
		compared, usable := 0, 0
		for _, row := range r.Rows {
			if row.Metric != a.Metric {
				continue
			}
			base := 0
			for _, st := range row.Stats {
				if st.Commit == r.Baseline {
					base = st.N
				}
				if slices.Contains(arms, st.Commit) {
					usable += st.N
				}
			}
			for _, st := range row.Stats {
				if st.Commit == r.Baseline || !slices.Contains(arms, st.Commit) {
					continue
				}
				if !math.IsInf(st.DeltaPct, 0) && !math.IsNaN(st.DeltaPct) {
					a.MaxDeltaPct = math.Max(a.MaxDeltaPct, math.Abs(st.DeltaPct))
				}
				det := st.MinEffectPct
				if st.Verdict == results.Unknown || st.Verdict == results.Incomplete {
					det = st.DetectablePct
					if st.Verdict == results.Incomplete {
						det = math.Inf(1)
					}
				}
				a.DetectablePct = math.Max(a.DetectablePct, det)
				if st.N > 0 && base > 0 {
					compared++
				}
			}
		}
		name := "TPS"
		if a.Metric != results.MetricTPS {
			name = a.Metric
		}
		if compared == 0 {
			// Nothing was measured: no difference to state, nothing it
			// could have detected (not "a change of 0 % or more").
			a.DetectablePct = math.Inf(1)
			why := "this run has no usable cells"
			if usable > 0 {
				why = "no configuration has usable cells of both"
			}
			a.Note = fmt.Sprintf("%s run on one build, but %s: it says nothing about their noise, and could have detected no %s change of any size.", strings.Join(arms, " and "), why, name)
			r.AA = a
			return
		}
		a.Note = fmt.Sprintf("%s run on one build: they differ only by noise. The largest %s difference between them was %.2f%%; in its least precise configuration this run could have detected %s.", strings.Join(arms, " and "), name, a.MaxDeltaPct, detectsChange(name, a.DetectablePct))
		r.AA = a
		return
	}
}

// aaMetric is what an A/A run is judged on: TPS, or, where no cell
// measured it (matrix --instructions-only), instructions_per_tx; an
// instruction-only A/A once read "the largest TPS difference was
// 0.00 %" of a run with no timed cell.
func (r *Report) aaMetric() string {
	// One primary for every configuration (an open-loop sweep's
	// latency_p99_ms, where TPS is the offered rate): judged on it.
	primaries := map[string]bool{}
	for _, c := range r.Plan.Configs {
		primaries[PrimaryFor(c, r.Plan)] = true
	}
	for m := range primaries {
		if len(primaries) == 1 && slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Metric == m }) {
			return m
		}
	}
	for _, row := range r.Rows {
		if row.Metric == results.MetricTPS {
			return results.MetricTPS
		}
	}
	for _, row := range r.Rows {
		if row.Metric == results.MetricInstructionsPerTx {
			return results.MetricInstructionsPerTx
		}
	}
	return results.MetricTPS
}

// detectsChange says what change of metric a run could have detected.
func detectsChange(metric string, mde float64) string {
	if !isFinite(mde) {
		return "no " + metric + " change of any size"
	}
	article := "a "
	if metric != "" && strings.ContainsRune("aeiou", rune(metric[0])) {
		article = "an " // an instructions_per_tx change
	}
	return "only " + article + metric + " change of " + pctAbs(mde) + " or more"
}
