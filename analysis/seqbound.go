package analysis

// Group-sequential boundaries for the equivalence tests: the nominal
// level of each look's one-sided test such that, over every look, a
// change of exactly the bar is called within it with probability α,
// found by numerical integration over the looks' joint distribution
// (Armitage, McPherson and Rowe 1969; Jennison and Turnbull 2000,
// ch. 19), not by the union bound. The union bound gave each of 25
// looks its increment of α, so an A/A answered "same" in 27.5 % of
// runs (bench/untildecided); the looks' statistics are correlated
// (corr = √(n_j/n_k)), and the exact boundary gives the last look most
// of α again.

import (
	"math"
	"sync"
)

// obfSpend is the Lan–DeMets O'Brien–Fleming-type spending function of
// a one-sided level α: the part of α spent by information fraction t.
// It spends little early (a "same" at a quarter of the blocks needs an
// interval about half as wide as at the end), so the last look keeps
// nearly the fixed design's level.
func obfSpend(t, alpha float64) float64 {
	if t <= 0 {
		return 0
	}
	return math.Erfc(zq(1-alpha/2) / math.Sqrt(math.Min(t, 1)) / math.Sqrt2)
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// seqGrid is how many points the density between looks is kept on: the
// last of 25 looks' level is 0.03221 on it, 0.03209 on 4 000 points
// (0.2 % of α more); 25 looks take ~20 ms, 500 looks ~0.35 s (the
// density is carried look to look at seqGrid² normal densities).
const seqGrid = 200

// nominalLevels is each look's one-sided nominal level, for looks at
// information fractions ts (increasing, the last 1), such that a
// standard Brownian motion observed at them crosses the upper boundary
// at some look with probability spend(1) in all, spend(t_k) −
// spend(t_{k−1}) of it first at look k.
func nominalLevels(ts []float64, spend func(float64) float64) []float64 {
	out := make([]float64, len(ts))
	var xs, gs []float64 // the last look's continuation grid (score scale) and density
	prevT, spent := 0.0, 0.0
	for k, t := range ts {
		target := spend(t) - spent
		if k == 0 {
			// z above which a standard normal lies with probability
			// target, capped: a look that spends nothing stops nothing.
			u := math.Sqrt(t) * math.Min(math.Sqrt2*math.Erfcinv(2*target), 40)
			out[0] = target
			xs, gs = densityGrid(-8*math.Sqrt(t), u, func(y float64) float64 { return normPDF(y/math.Sqrt(t)) / math.Sqrt(t) })
			prevT, spent = t, spend(t)
			continue
		}
		sd := math.Sqrt(t - prevT)
		cross := func(u float64) float64 {
			p := 0.0
			for i, x := range xs {
				p += gs[i] * (1 - normCDF((u-x)/sd))
			}
			return p
		}
		lo, hi := xs[0], xs[len(xs)-1]+10*sd+10
		for range 100 {
			mid := (lo + hi) / 2
			if cross(mid) > target {
				lo = mid
			} else {
				hi = mid
			}
		}
		u := (lo + hi) / 2
		out[k] = 0.5 * math.Erfc(u/math.Sqrt(t)/math.Sqrt2)
		spent += cross(u)
		oldX, oldG := xs, gs
		xs, gs = densityGrid(-8*math.Sqrt(t), u, func(y float64) float64 {
			d := 0.0
			for i, x := range oldX {
				d += oldG[i] * normPDF((y-x)/sd) / sd
			}
			return d
		})
		prevT = t
	}
	return out
}

// densityGrid is f on seqGrid points from lo to hi, as weights for the
// trapezoidal rule: gs[i] is f(xs[i]) times its share of the width.
func densityGrid(lo, hi float64, f func(float64) float64) (xs, gs []float64) {
	if hi <= lo {
		return []float64{lo}, []float64{0}
	}
	h := (hi - lo) / (seqGrid - 1)
	xs, gs = make([]float64, seqGrid), make([]float64, seqGrid)
	for i := range xs {
		xs[i] = lo + float64(i)*h
		w := h
		if i == 0 || i == seqGrid-1 {
			w = h / 2
		}
		gs[i] = f(xs[i]) * w
	}
	return xs, gs
}

// equivalenceLevels caches nominalLevels per design: a run's commits
// and resumed analyses ask for the same few.
var equivalenceLevels sync.Map // design → []float64

// equivalence is the level of look k's two one-sided tests of
// equivalence: EquivalenceAlpha over every look, so a change of exactly
// the bar is called same in at most EquivalenceAlpha of runs whatever
// the looks; each look's nominal level comes from the exact
// group-sequential boundary of an O'Brien–Fleming-type spending
// (seqbound.go). At the same level at every look, a designed run under
// --until-decided (two looks) called a −2 % same at ±2 % in 14 % of
// runs, not 5 % (bench/designed -until-decided, this VM's recorded A/A
// noise); spent by the union bound, an A/A of 25 looks answered same in
// 27.5 % (bench/untildecided).
func (d design) equivalence(k int) float64 {
	alpha := EquivalenceAlpha(d.alpha)
	if d.looks() == 1 {
		return alpha
	}
	if v, ok := equivalenceLevels.Load(d); ok {
		return v.([]float64)[k-1]
	}
	ts := make([]float64, d.looks())
	for i := range ts {
		ts[i] = float64(d.n(i+1)) / float64(d.limit)
	}
	levels := nominalLevels(ts, func(t float64) float64 { return obfSpend(t, alpha) })
	equivalenceLevels.Store(d, levels)
	return levels[k-1]
}
