package analysis

import (
	"math"

	"github.com/pgabtest/abtest/results"
)

// boundDeltas makes each comparison's Δ say no more than it can, before
// anything shows it:
//   - a change of a quantity that is never negative cannot fall below
//     −100 %: its intervals are cut there (a difference-based interval
//     of a metric near 0, db_time_pct 4.36 → 4.17, reached −215 %);
//   - MediansDisagree marks a Δ that the medians shown beside it do not
//     bear out: their ratio points the other way, or differs from Δ by
//     more than a quarter of the metric's bar (issue 42: churn's medians
//     42 987 → 43 869, +2.05 %, beside Δ +3.98 % at a 2 % bar). Δ is the
//     paired estimate (the geometric mean of the per-pair ratios, what
//     the verdict judges) and the medians are each commit's own: with
//     few pairs that scatter they differ, and the reader is told so
//     instead of shown one as the other. (The overview shows the
//     geometric means Δ rests on, whose ratio is Δ.)
func (r *Report) boundDeltas() {
	r.eachAgainstBase(func(base, st *Stat) {
		if st.N == 0 || st.Verdict == results.VerdictBaseline {
			return
		}
		if nonNegative(base.Values) && nonNegative(st.Values) {
			st.DeltaLo, st.DeltaHi = atLeast(st.DeltaLo, -100), atLeast(st.DeltaHi, -100)
			st.DecideLo, st.DecideHi = atLeast(st.DecideLo, -100), atLeast(st.DecideHi, -100)
		}
		st.MediansDisagree = disagree(st.DeltaPct, st.Median-base.Median) || apart(st.DeltaPct, base.Median, st.Median, st.MinEffectPct)
	})
}

// eachAgainstBase calls f with each row's baseline Stat and each other
// commit's Stat of that row (not for rows without a baseline Stat).
func (r *Report) eachAgainstBase(f func(base, st *Stat)) {
	for i := range r.Rows {
		row := &r.Rows[i]
		var base *Stat
		for k := range row.Stats {
			if row.Stats[k].Commit == r.Baseline {
				base = &row.Stats[k]
			}
		}
		if base == nil {
			continue
		}
		for k := range row.Stats {
			if st := &row.Stats[k]; st != base {
				f(base, st)
			}
		}
	}
}

// disagree reports whether a change and a difference point opposite
// ways (neither zero nor undefined).
func disagree(delta, diff float64) bool {
	if !isFinite(delta) || !isFinite(diff) || delta == 0 || diff == 0 {
		return false
	}
	return math.Signbit(delta) != math.Signbit(diff)
}

// apart reports whether the medians' ratio, in %, is further from the
// change delta than a quarter of the bar minEffect (both finite and
// positive; a baseline median of 0 has no ratio).
func apart(delta, baseMedian, median, minEffect float64) bool {
	if !isFinite(delta) || !isFinite(minEffect) || minEffect <= 0 || baseMedian == 0 {
		return false
	}
	ratio := 100 * (median/baseMedian - 1)
	return isFinite(ratio) && math.Abs(ratio-delta) > minEffect/4
}

func nonNegative(xs []float64) bool {
	for _, x := range xs {
		if x < 0 {
			return false
		}
	}
	return true
}

// atLeast is x, raised to lo; NaN and ±Inf stay as they are.
func atLeast(x, lo float64) float64 {
	if isFinite(x) && x < lo {
		return lo
	}
	return x
}
