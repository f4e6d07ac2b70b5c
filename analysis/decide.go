package analysis

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"github.com/pgabtest/abtest/results"
)

// noiseK scales a configuration's measured spread into the metric's
// minimum effect there: min effect = max(declared threshold, noiseK ×
// the baseline's robust CV). The test's α already covers the noise
// between the cells of one run; the raised bar is for what it cannot see,
// run-to-run shifts of a bimodal host, which seed 001 found of the order
// of a fraction of a cell's spread. At 0.25 this VM's TPS (CV ~6 %)
// keeps its 2 % threshold, while WAL bytes (CV ~40 %) get a 10 % bar
// instead of being switched off.
const noiseK = 0.25

// maxGatedMDEPct: a metric whose pooled minimum detectable effect at the
// planned number of pairs exceeds this is too noisy for any verdict and
// is only reported (a cell CV above ~23 % at 5 pairs, ~33 % at 10).
const maxGatedMDEPct = 50.0

// test is one comparison of a commit with the baseline in one
// configuration and metric, from its inputs to its verdict. Analyze
// builds them from records; the simulations build them directly, so both
// go through decide and classify.
type test struct {
	dir       results.Direction
	minEffect float64 // percent
	// base and cand are the values in repeat order; when paired,
	// base[i] and cand[i] are the two cells of block i.
	base, cand []float64
	paired     bool
	// log: the pair differences are log ratios (every value > 0);
	// otherwise differences relative to the baseline's median.
	log  bool
	bmed float64
	// counter: a declared counter against a baseline that varied, tested
	// by the range of the baseline (measureRange) in the commit's Holm
	// family like any gated test; within: every candidate value lay in
	// that range.
	counter, within bool

	n           int
	p           float64
	est, lo, hi float64 // change in percent, and its interval
	sd          float64 // spread of the pair differences (log or relative)
	mde         float64 // percent: what this n could have detected
	look        int
	level       float64 // the per-look family level the test was judged at
	family      int
	significant bool
	verdict     results.Verdict
	undecided   bool // unknown, and another look may decide it
}

func newTest(def results.Metric, minEffect float64, base, cand []float64, paired bool) *test {
	t := &test{dir: def.Direction, minEffect: minEffect, base: base, cand: cand, paired: paired, log: true}
	for _, v := range base {
		t.log = t.log && v > 0
	}
	for _, v := range cand {
		t.log = t.log && v > 0
	}
	s := append([]float64(nil), base...)
	slices.Sort(s)
	if len(s) > 0 {
		t.bmed = median(s)
	}
	return t
}

// diffs returns the first n pair differences.
func (t *test) diffs(n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		if t.log {
			d[i] = math.Log(t.cand[i] / t.base[i])
		} else {
			d[i] = (t.cand[i] - t.base[i]) / math.Abs(t.bmed)
		}
	}
	return d
}

func (t *test) pct(x float64) float64 {
	if t.log {
		return 100 * math.Expm1(x)
	}
	return 100 * x
}

// measure computes the test on the first n pairs at level a: the
// p-value, and the change with its interval of confidence 1−2a (the two
// one-sided tests of equivalence at a each).
func (t *test) measure(n int, a float64) {
	t.n = n
	if t.counter {
		t.measureRange()
		return
	}
	if !t.paired {
		thresholds := &benchmath.Thresholds{CompareAlpha: a}
		bs := benchmath.NewSample(append([]float64(nil), t.base...), thresholds)
		cs := benchmath.NewSample(append([]float64(nil), t.cand...), thresholds)
		t.p = benchmath.AssumeNothing.Compare(bs, cs).P
		cm := benchmath.AssumeNothing.Summary(cs, 0.95).Center
		t.est, t.lo, t.hi = deltaPct(t.bmed, cm), math.Inf(-1), math.Inf(1)
		t.mde = math.Inf(1)
		return
	}
	if !t.log && t.bmed == 0 {
		// Relative differences against a zero baseline: the direction is
		// known, the size is not.
		d := make([]float64, n)
		for i := range d {
			d[i] = t.cand[i] - t.base[i]
		}
		t.p = signFlipP(d)
		var s float64
		for _, x := range d {
			s += x
		}
		t.est, t.lo, t.hi, t.sd = deltaPct(0, s), math.Inf(-1), math.Inf(1), math.NaN()
		return
	}
	d := t.diffs(n)
	t.p = signFlipP(d)
	est, lo, hi := pairedCI(d, 2*a)
	t.est, t.lo, t.hi = t.pct(est), t.pct(lo), t.pct(hi)
	t.sd = sdOf(d)
}

// classify turns the measured test into a verdict: significant (by the
// family's procedure) and beyond the minimum effect → better/worse (or
// higher/lower); the interval within ±minimum effect → same; else
// unknown, with the smallest change this n could have detected at the
// Bonferroni level a/m of Holm's first step.
func (t *test) classify(significant bool, a float64, m int) {
	t.significant, t.level, t.family = significant, a, m
	if m < 1 {
		m = 1
	}
	if t.counter {
		t.classifyRange(a / float64(m))
		return
	}
	switch {
	case significant && !math.IsNaN(t.est) && math.Abs(t.est) > t.minEffect:
		t.verdict = directed(t.dir, t.est > 0)
	case !math.IsInf(t.minEffect, 0) && t.lo >= -t.minEffect && t.hi <= t.minEffect:
		t.verdict = results.Same
	default:
		t.verdict = results.Unknown
	}
	t.mde = math.Inf(1)
	if t.paired && !math.IsNaN(t.sd) {
		if l := mdeLog(t.sd, t.n, a/float64(m)); !math.IsInf(l, 0) {
			t.mde = t.pct(l)
		}
	}
}

// detectable is the smallest change this test could have called: its MDE
// or its minimum effect, whichever is larger.
func (t *test) detectable() float64 { return math.Max(t.mde, t.minEffect) }

// directed names a change by the metric's direction.
func directed(dir results.Direction, up bool) results.Verdict {
	switch {
	case dir == results.Descriptive && up:
		return results.Higher
	case dir == results.Descriptive:
		return results.Lower
	case up == (dir == results.HigherIsBetter):
		return results.Better
	}
	return results.Worse
}

// deltaPct is the change from b to c in percent, ±Inf from a zero b.
func deltaPct(b, c float64) float64 {
	switch {
	case b != 0:
		return 100 * (c/b - 1)
	case c == 0:
		return 0
	}
	return math.Inf(int(math.Copysign(1, c)))
}

// design is the sequence of looks: one at the planned repeats, then one
// every Step blocks up to MaxRepeats. Each look k spends its share of α
// (Lan–DeMets, Pocock type, over the information fraction n_k/MaxRepeats)
// and the looks are combined by the union bound, so the false-positive
// rate over every look stays ≤ α whatever the correlation between looks,
// and with the discrete exact test.
type design struct {
	alpha           float64
	r0, step, limit int
}

func (d design) looks() int {
	if d.step <= 0 || d.limit <= d.r0 {
		return 1
	}
	return 1 + (d.limit-d.r0+d.step-1)/d.step
}

// n is the number of pairs at look k (1-based).
func (d design) n(k int) int { return min(d.r0+(k-1)*d.step, d.limit) }

// level is the family-wise level spent at look k.
func (d design) level(k int) float64 {
	if d.looks() == 1 {
		return d.alpha
	}
	prev := 0.0
	if k > 1 {
		prev = spend(float64(d.n(k-1)) / float64(d.limit))
	}
	return d.alpha * (spend(float64(d.n(k))/float64(d.limit)) - prev)
}

// decide judges one commit's family of gated tests, look by look: at
// each, the tests still open are measured on their first n_k pairs and
// Holm's procedure at that look's level says which are significant; a
// test leaves the family once decided (better, worse or same) or when it
// has no pairs for the next look. Replaying the looks from the data makes
// the verdict of a resumed or re-analysed run the one the run stopped on.
func decide(tests []*test, d design) {
	open := tests
	for k := 1; k <= d.looks() && len(open) > 0; k++ {
		nk, a := d.n(k), d.level(k)
		ps := make([]float64, len(open))
		for i, t := range open {
			n := len(t.cand)
			if t.paired && d.looks() > 1 {
				n = min(n, nk)
			}
			t.measure(n, a)
			t.look = k
			ps[i] = t.p
			if math.IsNaN(t.p) {
				ps[i] = 1 // no test to reject: a counter inside the range
			}
		}
		sig := holm(ps, a)
		var next []*test
		for i, t := range open {
			t.classify(sig[i], a, len(open))
			if t.verdict != results.Unknown || k == d.looks() || t.counter {
				// A counter is judged once, on every value, at the first
				// look's level: it never asks for more blocks.
				continue
			}
			if t.paired && len(t.cand) >= d.n(k+1) {
				next = append(next, t)
			} else {
				t.undecided = true
			}
		}
		open = next
	}
}

// exactVerdict judges a deterministic counter (seed 001) against a
// baseline that never varied: any difference is real. A metric exact
// only by observation (declared banded, constant on the few baseline
// repeats) is called only when every candidate value left the constant
// the same way: background work lands in some cells and not others (WAL
// of a read-only select1 was 0 in 8 baseline cells and not in 1 of 2
// candidate cells of a from-source run), which is an event, not a shift.
// It reports false, deciding nothing, when the baseline varied (a single
// failed transaction): the counter is then a test (t.counter) that joins
// the commit's Holm family.
func exactVerdict(t *test, observed bool) bool {
	bmin, bmax := slices.Min(t.base), slices.Max(t.base)
	if bmin != bmax {
		t.counter = true
		return false
	}
	t.n = len(t.cand)
	t.p, t.lo, t.hi, t.mde = math.NaN(), math.NaN(), math.NaN(), t.minEffect
	var sum float64
	same := true
	for _, v := range t.cand {
		sum += v
		same = same && v == bmin
	}
	t.est = deltaPct(bmin, sum/float64(len(t.cand)))
	switch {
	case same:
		t.verdict = results.Same
	case observed && !allLeft(t.cand, bmin):
		t.verdict = results.Unknown
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
	t.est = deltaPct(t.bmed, median(s))
	t.p, t.lo, t.hi, t.sd = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if s[0] > bmax || s[len(s)-1] < bmin {
		t.p = minUP(len(t.base), len(s))
	}
	t.within = s[0] >= bmin && s[len(s)-1] <= bmax
}

// classifyRange: a counter beyond the baseline's range and significant
// in its family is better or worse; inside the range it is the same;
// else unknown. Its bar is its threshold, or none at all when its
// repeats cannot reach the Bonferroni level a of Holm's first step.
func (t *test) classifyRange(a float64) {
	switch {
	case t.significant && math.Abs(t.est) > t.minEffect:
		t.verdict = directed(t.dir, slices.Min(t.cand) > slices.Max(t.base))
	case t.within:
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

// measureTier decides a metric's tier from the baseline's repeats in
// every configuration, pooled by the median of the configurations'
// spreads: one noisy configuration (churn's 10.9 %) no longer decides for
// all, and a median over many configurations holds still from run to
// run where the maximum flipped.
func measureTier(def results.Metric, forced bool, th float64, spreads []float64, pairs int, alpha float64) Tier {
	t := Tier{Metric: def.Name, ThresholdPct: th, Gated: true}
	finite := spreads[:0:0]
	for _, s := range spreads {
		if !math.IsInf(s, 0) {
			finite = append(finite, s)
		}
	}
	if len(finite) > 0 {
		s := append([]float64(nil), finite...)
		slices.Sort(s)
		t.SpreadPct = median(s)
	}
	switch {
	case def.Direction == results.Descriptive && !forced:
		t.Tier, t.Gated, t.Why = results.TierReport, false, "descriptive: says higher or lower, never better or worse (--gate it to gate it)"
	case def.Tier == results.TierReport && !forced:
		t.Tier, t.Gated, t.Why = results.TierReport, false, "declared report-only"
	case def.Tier == results.TierExact:
		t.Tier, t.Why = results.TierExact, "a deterministic counter: any difference from a constant baseline is real"
	case len(spreads) == 0:
		t.Tier, t.Gated, t.Why = results.TierReport, false, "the baseline has fewer than 2 repeats of every configuration: no spread to measure"
	case slices.Max(spreads) == 0:
		t.Tier, t.Why = results.TierExact, fmt.Sprintf("never varied over the baseline's repeats in %d configurations", len(spreads))
	default:
		// The normal-approximation MDE of the pooled spread: the
		// discreteness of small n makes a test unknown, not the metric
		// report-only.
		sd := math.Sqrt2 * t.SpreadPct / 100
		mde := 100 * math.Expm1((zq(1-alpha/2)+zq(0.8))*sd/math.Sqrt(float64(max(pairs, 1))))
		switch {
		case len(finite) < len(spreads)/2+1:
			t.Tier, t.Gated = results.TierReport, false
			t.Why = fmt.Sprintf("too noisy for any verdict: the baseline varied around a median of 0 in %d of %d configurations", len(spreads)-len(finite), len(spreads))
		case mde > maxGatedMDEPct:
			t.Tier, t.Gated = results.TierReport, false
			t.Why = fmt.Sprintf("too noisy for any verdict at %d pairs: median spread %s over %d configurations, smallest detectable change %s > %.0f%%", pairs, pctAbs(t.SpreadPct), len(spreads), pctAbs(mde), maxGatedMDEPct)
		default:
			t.Tier = results.TierBand
			t.Why = fmt.Sprintf("median spread %s over %d configurations; the bar in each is max(%.3g%%, %.2g × its spread)", pctAbs(t.SpreadPct), len(spreads), th, noiseK)
		}
	}
	return t
}
