package analysis

// Counters: a deterministic counter compared within its band, or tested
// against the range of a baseline that varied.

import (
	"math"
	"slices"

	"github.com/pgabtest/abtest/results"
)

// exactVerdict judges a deterministic counter (seed 001) against a
// baseline that never varied beyond half its band: any difference is
// real, and no p-value or share of α is needed. Instructions per
// transaction repeat to 0.0002 % under valgrind against a 0.1 % band:
// each arm within the band is compared by its median, beyond the band
// better or worse, within it same, however many timed blocks follow (a
// rank test of 6 against 6 read unknown once --until-decided had spent
// α on 16 timed looks). A metric exact only by observation (declared
// banded, constant on the few baseline repeats) is called only when
// every candidate value left the constant the same way: background work
// lands in some cells and not others (WAL of a read-only select1 was 0
// in 8 baseline cells and not in 1 of 2 candidate cells of a from-source
// run), which is an event, not a shift. It reports false, deciding
// nothing, when the baseline varied beyond the band (a single failed
// transaction): the counter is then a test (t.counter) of the family.
func exactVerdict(t *test, observed bool) bool {
	bmin, bmax := slices.Min(t.base), slices.Max(t.base)
	tol := t.minEffect / 200 * math.Abs(t.bmed) // half the band
	if bmax-bmin > 2*tol {
		t.counter = true
		return false
	}
	t.n = len(t.cand)
	t.p, t.lo, t.hi, t.lo95, t.hi95, t.mde = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), t.minEffect
	cs := append([]float64(nil), t.cand...)
	slices.Sort(cs)
	cmed := Median(cs)
	if t.bmed == 0 {
		t.est, t.abs = math.NaN(), cmed-t.bmed
		if cmed == 0 {
			t.est = 0
		}
	} else {
		t.est = deltaPct(t.bmed, cmed)
	}
	switch {
	case bmin == bmax && cs[0] == cs[len(cs)-1] && cs[0] == bmin:
		t.verdict = results.Same
	case cs[len(cs)-1]-cs[0] <= 2*tol && tol > 0:
		// Both arms within their band: compared, not tested.
		t.verdict = results.Same
		if math.Abs(t.est) > t.minEffect {
			t.verdict = directed(t.dir, t.est > 0)
		}
	case observed && !allLeft(t.cand, bmin):
		t.verdict = results.Unknown
	case t.bmed == 0:
		t.verdict = directed(t.dir, t.abs > 0)
	case math.Abs(t.est) > t.minEffect:
		t.verdict = directed(t.dir, t.est > 0)
	default:
		t.verdict = results.Same
	}
	return true
}

// measureRange tests a counter against the range of a baseline that
// varied: with no change, every candidate value lands beyond it on one
// side with probability 2/C(n+m, m) (the U-test's most extreme case),
// the p-value; otherwise there is no test to report a p of (NaN).
// statements_per_tx on churn varies by ±0.4 % when pg_stat_statements
// evicts entries, and 2 + 2 repeats put both candidate values above the
// baseline's in a third of A/A runs. The p goes through the commit's
// Holm family: tested alone at α in each of 48 configurations, 5 + 5
// repeats (p = 2/252) called a false change in about a third of A/A
// runs (TestCounterFamilyWiseAA).
func (t *test) measureRange() {
	t.n = len(t.cand)
	bmin, bmax := slices.Min(t.base), slices.Max(t.base)
	s := append([]float64(nil), t.cand...)
	slices.Sort(s)
	t.est = deltaPct(t.bmed, Median(s))
	t.p, t.lo, t.hi, t.sd = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if s[0] > bmax || s[len(s)-1] < bmin {
		t.p = minUP(len(t.base), len(s))
	}
	t.within = s[0] >= bmin && s[len(s)-1] <= bmax
}

// classifyRange: a counter beyond the baseline's range and significant
// in its family is better or worse; inside the range it is the same
// only when that range itself lies within ±its bar (a baseline of
// 1 000 ×5 and one 1 030 would otherwise call +2 % instructions, 20×
// the band, same); else unknown. Its bar is its threshold, or none at
// all when its repeats cannot reach its level a.
func (t *test) classifyRange(a float64) {
	bmin, bmax := slices.Min(t.base), slices.Max(t.base)
	narrow := t.bmed != 0 && 100*(bmax-bmin)/2 <= t.minEffect*math.Abs(t.bmed)
	switch {
	case t.significant && math.Abs(t.est) > t.minEffect:
		t.verdict = directed(t.dir, slices.Min(t.cand) > bmax)
	case t.within && narrow:
		t.verdict = results.Same
	default:
		t.verdict = results.Unknown
	}
	t.mde = t.minEffect
	if minUP(len(t.base), t.n) >= a {
		t.mde = math.Inf(1)
	}
}

// allLeft reports whether every value differs from c, all on one side.
func allLeft(vs []float64, c float64) bool {
	above, below := 0, 0
	for _, v := range vs {
		switch {
		case v > c:
			above++
		case v < c:
			below++
		}
	}
	return above == len(vs) || below == len(vs)
}
