package analysis

// A decided test into the report: its Stat's verdict, method and note,
// the called changes and regressions, and the commit's Summary.

import (
	"fmt"
	"math"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// unit is a metric's unit.
func (a *analyzer) unit(m string) string {
	def, _ := a.p.Metrics.Get(m)
	return def.Unit
}

// mirrorVerdict copies to a mirroring metric's Stat the verdict of the
// metric it mirrors.
func (a *analyzer) mirrorVerdict(c string, ct *cellTest, row *Row, st *Stat) {
	j, ok := a.rowIdx[[2]string{row.Config, ct.mirror}]
	var src *Stat
	if ok {
		for k := range a.r.Rows[j].Stats {
			if a.r.Rows[j].Stats[k].Commit == c {
				src = &a.r.Rows[j].Stats[k]
			}
		}
	}
	if src == nil {
		return
	}
	st.Verdict, st.P, st.Look, st.Blocks, st.Method = src.Verdict, src.P, src.Look, src.Blocks, "as "+ct.mirror
	st.MinEffectPct, st.DetectablePct = ct.t.minEffect, src.DetectablePct
	a.mirrorDelta(row.Metric, ct.mirror, st, src)
	st.Note = "one statistic with " + ct.mirror + ": tested once, as " + ct.mirror
	if src.Verdict == results.Better || src.Verdict == results.Worse {
		// Better and worse agree across the pair by
		// construction (both directions say the same).
		st.Verdict = src.Verdict
	}
}

// mirrorDelta gives a mirroring metric's Stat the change its function
// of the mirrored metric's paired estimate implies, so the two never
// disagree: a metric of the opposite direction is its reciprocal
// (latency_avg_ms = clients/tps in a closed loop: Δ = 1/(1+e) − 1, the
// interval's bounds swapped), one of the same direction the same
// change. A ratio of medians once showed tps −2.41 % beside latency_avg
// +3.40 %, where clients/TPS implies +2.47 % (issue 40).
func (a *analyzer) mirrorDelta(m, of string, st, src *Stat) {
	def, _ := a.p.Metrics.Get(m)
	sdef, _ := a.p.Metrics.Get(of)
	f := func(x float64) float64 { return x }
	if def.Direction != sdef.Direction && def.Direction != results.Descriptive && sdef.Direction != results.Descriptive {
		f = reciprocalPct
		st.DeltaLo, st.DeltaHi, st.DecideLo, st.DecideHi = f(src.DeltaHi), f(src.DeltaLo), f(src.DecideHi), f(src.DecideLo)
		if isFinite(src.DetectablePct) {
			// The drop of the one the other's rise.
			st.DetectablePct = f(-src.DetectablePct)
		}
	} else {
		st.DeltaLo, st.DeltaHi, st.DecideLo, st.DecideHi = src.DeltaLo, src.DeltaHi, src.DecideLo, src.DecideHi
	}
	st.DeltaPct, st.DeltaAbs = f(src.DeltaPct), 0
}

// reciprocalPct is the change of 1/x, in percent, when x changed by
// pct percent.
func reciprocalPct(pct float64) float64 {
	if pct <= -100 {
		return math.Inf(1)
	}
	return 100 * (1/(1+pct/100) - 1)
}

// testVerdict writes a decided test into its Stat.
func (a *analyzer) testVerdict(ct *cellTest, row *Row, st *Stat, sum *Summary) {
	t := ct.t
	st.P, st.DeltaLo, st.DeltaHi, st.DecideLo, st.DecideHi, st.Look = t.p, t.lo95, t.hi95, t.lo, t.hi, t.look
	st.DeltaPct = t.est
	if math.IsNaN(t.est) && t.abs != 0 {
		st.DeltaAbs = t.abs
		st.Note = fmt.Sprintf("from a baseline of 0: %+.4g %s on average (absolute)", t.abs, a.unit(row.Metric))
	}
	st.Verdict, st.MinEffectPct = t.verdict, t.minEffect
	if t.paired && t.n >= 1 && t.n < len(t.cand) {
		// Decided at an earlier look: Δ rests on its first n blocks.
		st.Geomean, st.BaseGeomean = geoMean(t.cand[:t.n]), geoMean(t.base[:t.n])
	}
	st.Method = "paired"
	switch {
	case ct.exact:
		st.Method = "exact"
	case !t.paired:
		st.Method = "unpaired"
	case a.r.Sequential != nil:
		st.Blocks = t.n
	}
	if t.count {
		st.Method = "rate"
	}
	if t.paired && !ct.exact || t.verdict == results.Unknown {
		st.DetectablePct = t.detectable()
	}
	if t.verdict == results.Unknown {
		switch {
		case t.gatekept:
			st.Behind = true
			st.DetectablePct = math.NaN()
			st.Note = "secondary: tested only where the configuration's primary was called better or worse, and it was not"
		case t.paired && t.n < 2:
			if ct.gated {
				sum.Unreachable++
			}
			st.Note = fmt.Sprintf("%d pair(s): no test; give more repeats", t.n)
		case ct.gated && t.counter && t.level > 0 && minUP(len(t.base), t.n) >= t.level:
			sum.Unreachable++
			st.Note = fmt.Sprintf("%d + %d repeats cannot reach p < %.2g against a baseline that varied: give more repeats", len(t.base), t.n, t.level)
		}
		if ct.answer && t.role == primary && !a.covered(t) {
			if n := needRepeats(t); n > 0 {
				st.Note = fmt.Sprintf("the primary could not answer: needs r ≥ %d, or a quieter host (abtest doctor)", n)
			}
		}
		if t.undecided && ct.answer && !a.poolDecided(t) {
			// Only the primary asks for more blocks: a configuration
			// stops once its primary is decided, or once the run-level
			// answer that covers it is (the gate's question is
			// answered; its own verdict stays unknown, with its MDE).
			a.undecided[row.Config] = true
		}
	}
	if ct.answer && t.role == primary && t.verdict == results.Same && a.poolOpen(t) {
		// A configuration decided same goes on while the run-level
		// answer that covers it is open, so that the pooled test sees
		// whole blocks: had it stopped because it looked same, it left
		// the pool a sample chosen for lying near 0. One called better
		// or worse stops (the gate has its answer), and the pool with
		// it, at its last whole block.
		a.undecided[row.Config] = true
	}
	if ct.exact && ct.observed && t.verdict == results.Unknown {
		st.Note = "constant on the baseline, but only some of this commit's cells differ from it: an event, not a shift"
	}
	if t.significant && t.verdict == results.Same && t.paired && t.role != pooled {
		st.Note = fmt.Sprintf("significant, but within ±%.3g%%", t.minEffect)
	}
}

// noteChange lists a called change, and a gated one for the worse as a
// regression.
func (a *analyzer) noteChange(c string, ct *cellTest, row *Row, st *Stat) {
	switch st.Verdict {
	case results.Better, results.Worse, results.Higher, results.Lower:
		ch := Change{Commit: c, Config: row.Config, Metric: row.Metric, DeltaPct: st.DeltaPct, P: st.P, Verdict: st.Verdict, Gated: st.Gated}
		a.r.Changes = append(a.r.Changes, ch)
		if ch.Gated && st.Verdict != results.Better && ct.mirror == "" {
			a.r.Regressions = append(a.r.Regressions, ch)
		}
	}
}

// countVerdicts counts a commit's verdicts into its summary.
func (a *analyzer) countVerdicts(c string, sum *Summary) {
	for _, row := range a.r.Rows {
		for _, st := range row.Stats {
			if st.Commit != c {
				continue
			}
			role := st.Role()
			if st.Gated && role != results.RoleMirrored {
				sum.Blocks = max(sum.Blocks, st.Blocks)
			}
			sum.Count(role, st.Verdict)
		}
	}
}

// boundNoChange sets the summary's no-change bound when every gated
// verdict of the commit is same and none is incomplete, and the largest
// change its gated unknowns could have missed.
func (a *analyzer) boundNoChange(c string, sum *Summary) {
	allSame, anyGated := true, false
	for _, row := range a.r.Rows {
		for _, st := range row.Stats {
			if st.Commit != c || !st.Gated || strings.HasPrefix(st.Method, "as ") {
				continue
			}
			anyGated = true
			if st.Behind {
				continue
			}
			switch st.Verdict {
			case results.Same:
				sum.NoChangePct = math.Max(sum.NoChangePct, st.MinEffectPct)
			case results.Unknown:
				allSame = false
				sum.GatedUnknown++
				sum.DetectablePct = math.Max(sum.DetectablePct, st.DetectablePct)
			default:
				allSame = false
			}
		}
	}
	if !allSame || !anyGated {
		sum.NoChangePct = 0
	}
	for _, in := range a.r.Incomplete {
		if in.Commit == c && in.Gated {
			sum.NoChangePct = 0
		}
	}
}
