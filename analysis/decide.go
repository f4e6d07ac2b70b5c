package analysis

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"github.com/pgabtest/abtest/results"
)

// noiseK scales a configuration's measured spread into the metric's
// bar there under --bar auto (BarAuto) only: bar = max(threshold,
// noiseK × the baseline's robust CV). By default the bar is the
// threshold: a widened bar called a real −5 % same on a noisy VM
// (issue 40). The test's α already covers the noise
// between the cells of one run; the raised bar is for what it cannot see,
// run-to-run shifts of a bimodal host, which seed 001 found of the order
// of a fraction of a cell's spread. At 0.25 this VM's TPS (CV ~6 %)
// keeps its 2 % threshold, while WAL bytes (CV ~40 %) get a 10 % bar
// instead of being switched off.
const noiseK = 0.25

// role is a test's place in its commit's family (issue 21): the gate
// asks one question per primary metric, and everything else is tested
// behind it or on its own.
type role int

const (
	// secondary: a gated metric other than the primary, tested only once
	// its configuration's primary is rejected (the graph passes the
	// primary's α on to it), so it never dilutes the primary's α.
	secondary role = iota
	// primary: the primary metric in one configuration.
	primary
	// pooled: the primary over every configuration, the run-level answer
	// (the geometric mean of the configurations' paired ratios).
	pooled
	// reportOnly: a descriptive or report-only metric: higher or lower
	// only, under a family of its own.
	reportOnly
	// event: a gated event count (failed_tx, pgss_deallocs), in a family
	// of its own per commit at α (Holm among the counts): it takes no
	// share of the primaries' α and passes none to any secondary (issue
	// 40: a rejected pgss_deallocs passed α to churn's latency_p95, called
	// better with tps at p = 0.25, and any counted event halved tps's α).
	event
)

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
	// otherwise differences relative to norm.
	log  bool
	bmed float64
	// byMean: differences that are not log ratios are relative to the
	// mean of the pairs' baseline values, where no value is negative
	// (the change is then the ratio of the means, never below −100 %);
	// else to |bmed|.
	byMean bool
	// counter: a declared counter against a baseline that varied, tested
	// by the range of the baseline (measureRange) in the commit's family
	// like any gated test; within: every candidate value lay in that
	// range.
	counter, within bool
	// count: an event count, tested by the rate of its totals
	// (measureCount).
	count bool

	role role
	cfg  string // the configuration, for the family's graph
	// parts are a pooled test's configurations: their primary tests.
	parts []*test
	// prior, for a configuration's primary, is the variance prior its
	// metric's configurations share (moderate).
	prior *prior

	n           int
	alpha       float64 // the α its decision interval (1−2α) is at: EquivalenceAlpha
	p           float64
	est, lo, hi float64 // change in percent, and its decision interval (1−2·alpha)
	lo95, hi95  float64 // the 95 % interval shown
	abs         float64 // the mean absolute difference, for a zero baseline
	sd          float64 // spread of the pair differences (log or relative)
	se, df      float64 // standard error of the mean difference, its degrees of freedom
	mde         float64 // percent: what this n could have detected
	look        int
	level       float64 // the test's own level at its look: its weight × the look's α
	significant bool
	// gatekept: a secondary whose primary was not rejected, so it was
	// never given α.
	gatekept  bool
	verdict   results.Verdict
	undecided bool // unknown, and another look may decide it
}

func newTest(def results.Metric, minEffect float64, base, cand []float64, paired bool) *test {
	var bmed float64 // 0 without values
	if len(base) > 0 {
		bmed = Median(base)
	}
	return newTestMedian(def, minEffect, base, cand, paired, bmed)
}

// newTestMedian is newTest given the median of base (Median()).
func newTestMedian(def results.Metric, minEffect float64, base, cand []float64, paired bool, bmed float64) *test {
	t := &test{dir: def.Direction, minEffect: minEffect, base: base, cand: cand, paired: paired, log: true}
	for _, v := range base {
		t.log = t.log && v > 0
	}
	for _, v := range cand {
		t.log = t.log && v > 0
	}
	// Relative to the median, pairs whose baseline lay above it summed
	// to a drop beyond −100 % (buffers_read −100.14 % beside its
	// interval [−100, −97.7]: issue 40); relative to the mean, the mean
	// difference is the ratio of the means.
	t.bmed, t.byMean = bmed, !t.log && nonNegative(base) && nonNegative(cand)
	return t
}

// diffs returns the first n pair differences.
func (t *test) diffs(n int) []float64 {
	d := make([]float64, n)
	norm := math.Abs(t.bmed)
	if t.byMean && !t.log {
		if m := meanOf(t.base[:n]); m > 0 {
			norm = m
		}
	}
	for i := range d {
		switch {
		case t.log:
			d[i] = math.Log(t.cand[i] / t.base[i])
		case t.bmed == 0:
			d[i] = t.cand[i] - t.base[i]
		default:
			d[i] = (t.cand[i] - t.base[i]) / norm
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

// measure computes the test on the first n pairs: the p-value, the
// change with its decision interval of confidence 1−2α (the two
// one-sided tests of equivalence at α each: EquivalenceAlpha, spent
// over the looks: design.equivalence) and its 95 % interval, shown.
func (t *test) measure(n int, alpha float64) {
	t.n, t.alpha = n, alpha
	if t.counter {
		t.measureRange()
		return
	}
	if t.count {
		t.measureCount(float64(n), alpha)
		return
	}
	if t.role == pooled {
		t.measurePooled(n, alpha)
		return
	}
	if !t.paired {
		thresholds := &benchmath.Thresholds{CompareAlpha: alpha}
		bs := benchmath.NewSample(append([]float64(nil), t.base...), thresholds)
		cs := benchmath.NewSample(append([]float64(nil), t.cand...), thresholds)
		t.p = benchmath.AssumeNothing.Compare(bs, cs).P
		cm := benchmath.AssumeNothing.Summary(cs, 0.95).Center
		t.est, t.lo, t.hi = deltaPct(t.bmed, cm), math.Inf(-1), math.Inf(1)
		t.lo95, t.hi95 = t.lo, t.hi
		t.mde, t.se, t.df = math.Inf(1), math.NaN(), 0
		return
	}
	d := t.diffs(n)
	mean, se := meanSE(d)
	t.sd, t.se, t.df = sdOf(d), se, float64(n-1)
	if s2, df := t.prior.variance(t, n, t.sd*t.sd, t.df); df != t.df {
		t.se, t.df = math.Sqrt(s2/float64(n)), df
	}
	t.interval(mean, alpha)
}

// interval sets the p-value, the change and both intervals from the
// mean difference and its standard error; from a zero baseline the size
// in percent is undefined and the absolute difference is kept.
func (t *test) interval(mean, alpha float64) {
	var lo, hi, lo95, hi95 float64
	t.p, lo, hi = meanTest(mean, t.se, t.df, 2*alpha)
	_, lo95, hi95 = meanTest(mean, t.se, t.df, 0.05)
	if !t.log && t.bmed == 0 {
		t.abs = mean
		t.est, t.lo, t.hi, t.lo95, t.hi95 = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if mean == 0 {
			t.est = 0
		}
		return
	}
	t.est, t.lo, t.hi, t.lo95, t.hi95 = t.pct(mean), t.pct(lo), t.pct(hi), t.pct(lo95), t.pct(hi95)
}

// measurePooled is the run-level test of the primary: the mean over the
// configurations of each one's mean log ratio (the geometric mean of the
// ratios), with the standard error from each configuration's own pair
// spread (the configurations are fixed, not sampled) and
// Welch–Satterthwaite's degrees of freedom. Four configurations at -r 8
// give it 32 pairs: it calls −5 % at 2 % noise where no single
// configuration's 8 pairs can.
func (t *test) measurePooled(n int, alpha float64) {
	var sum, v, dfDen float64
	k := 0
	for _, pt := range t.parts {
		m := min(n, len(pt.cand))
		if m < 2 {
			continue
		}
		mean, se := meanSE(pt.diffs(m))
		sum += mean
		v += se * se
		dfDen += se * se * se * se / float64(m-1)
		k++
	}
	t.n = k
	if k == 0 {
		t.p, t.est, t.lo, t.hi, t.lo95, t.hi95, t.se, t.df = 1, math.NaN(), math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1), math.NaN(), 0
		return
	}
	mean := sum / float64(k)
	t.se = math.Sqrt(v) / float64(k)
	t.df = float64(k * (min(n, len(t.parts[0].cand)) - 1))
	if dfDen > 0 {
		t.df = v * v / dfDen
	}
	t.interval(mean, alpha)
}

// measureCount tests an event count by its totals: given the events
// of both arms together, under no change the candidate's share of them
// is binomial with its share of the cells (the conditional test of two
// Poisson rates). One failed transaction in 1 of 12 candidate cells is
// p = 1, not "+∞ worse"; the change is the ratio of the rates, or the
// candidate's rate per cell from a baseline that had none.
//
// Counts that vary more than Poisson events do between cells
// (serialization failures of a contended workload, 100 ± 20 a cell)
// make that test far too eager (7 of 100 A/A runs alarmed at α = 0.01):
// where the cells' dispersion exceeds 1.5, the per-cell values are
// compared by the paired t test instead, as any other metric. Below
// that, paired counts of 5 or more a cell are compared quasi-Poisson:
// the log ratio of the rates over its Poisson standard error scaled by
// the dispersion (at least 1), against Student's t on the cells'
// degrees of freedom. With three cells an arm the dispersion is read on
// 4 of them, and counts that move with the window's throughput
// (pgss_deallocs, 8 % apart between cells: dispersion ~2.6) read under
// 1.5 in about a third of A/A runs, where the exact Poisson test called
// 9 of 400 a change (TestThroughputDrivenCountsAA): a from-source A/A
// run called aa's 879 deallocs against base's 742 worse, p = 0.00073
// (dispersion 1.37; now p = 0.044).
func (t *test) measureCount(n, alpha float64) {
	base, cand := t.base, t.cand
	if t.paired {
		m := min(int(n), len(base), len(cand))
		base, cand = base[:m], cand[:m]
	}
	phi := 1.0
	if t.paired && len(cand) >= 3 && meanOf(base, cand) >= 5 {
		phi = math.Max(1, dispersion(base, cand))
	}
	if phi > 1.5 {
		d := t.diffs(len(cand))
		mean, se := meanSE(d)
		t.n, t.sd, t.se, t.df = len(cand), sdOf(d), se, float64(len(cand)-1)
		t.interval(mean, alpha)
		return
	}
	var b, c float64
	for _, v := range base {
		b += v
	}
	for _, v := range cand {
		c += v
	}
	nb, nc := float64(len(base)), float64(len(cand))
	t.n = len(cand)
	if quasi := t.paired && len(cand) >= 3 && meanOf(base, cand) >= 5 && b > 0 && c > 0; quasi {
		t.p, _, _ = meanTest(math.Log((c/nc)/(b/nb)), math.Sqrt(phi*(1/b+1/c)), nb+nc-2, 2*alpha)
	} else {
		t.p = BinomTwoSided(int(math.Round(c)), int(math.Round(b+c)), nc/(nb+nc))
	}
	t.lo, t.hi, t.lo95, t.hi95, t.se, t.sd, t.mde = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.Inf(1)
	if b == 0 {
		t.est, t.abs = math.NaN(), c/nc
		return
	}
	t.est = 100 * ((c/nc)/(b/nb) - 1)
}

// meanOf is the mean of every value of both arms.
func meanOf(arms ...[]float64) float64 {
	var sum float64
	n := 0
	for _, arm := range arms {
		for _, v := range arm {
			sum += v
		}
		n += len(arm)
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// dispersion is the Pearson χ² of two arms' counts around their own
// means over its degrees of freedom: about 1 for Poisson events.
func dispersion(base, cand []float64) float64 {
	var chi2 float64
	df := -2
	for _, arm := range [][]float64{base, cand} {
		var sum float64
		for _, v := range arm {
			sum += v
		}
		if len(arm) == 0 || sum == 0 {
			continue
		}
		mean := sum / float64(len(arm))
		for _, v := range arm {
			chi2 += (v - mean) * (v - mean) / mean
		}
		df += len(arm)
	}
	if df < 1 {
		return 0
	}
	return chi2 / float64(df)
}

// classify turns the measured test into a verdict: significant (by the
// family's procedure) and beyond the minimum effect → better/worse (or
// higher/lower); the decision interval within ±minimum effect → same;
// else unknown, with the smallest change it could have detected at its
// own level (80 % power).
func (t *test) classify(significant bool, level float64) {
	t.significant, t.level = significant, level
	if t.counter {
		t.classifyRange(level)
		return
	}
	beyond := math.Abs(t.est) > t.minEffect || math.IsNaN(t.est) && t.abs != 0
	switch {
	case significant && beyond:
		up := t.est > 0 || math.IsNaN(t.est) && t.abs > 0
		if t.role == reportOnly {
			t.verdict = directed(results.Descriptive, up)
		} else {
			t.verdict = directed(t.dir, up)
		}
	case !math.IsInf(t.minEffect, 0) && t.lo >= -t.minEffect && t.hi <= t.minEffect:
		t.verdict = results.Same
	default:
		t.verdict = results.Unknown
	}
	t.mde = math.Inf(1)
	if t.paired && !math.IsNaN(t.se) && level > 0 && (t.log || t.bmed != 0) {
		if l := mdeT(t.se, t.df, level); !math.IsInf(l, 0) {
			// Stated for the regression: a drop of a higher-is-better
			// metric (1 − e^−l), a rise of the others (e^l − 1).
			t.mde = t.pct(l)
			if t.dir == results.HigherIsBetter && t.log {
				t.mde = -t.pct(-l)
			}
		}
	}
}

// detectable is the smallest change this test could have called: its MDE
// or its minimum effect, whichever is larger.
//
// A call needs the estimate beyond the bar as well as significance, so
// at a change of exactly the bar the power is about half: the bar is
// passed with 80 % power only at bar + z₀.₈ standard errors.
func (t *test) detectable() float64 {
	d := math.Max(t.mde, t.minEffect)
	if !math.IsNaN(t.se) && t.se > 0 && !math.IsInf(t.mde, 0) {
		d = math.Max(d, t.minEffect+100*zq(0.8)*t.se)
	}
	return d
}

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

// EquivalenceAlpha is the level of each of the two one-sided tests
// that call a change "same within the bar": α, but never below 5 %,
// the usual TOST level (a 90 % interval; bioequivalence uses it).
// A change is still called at α (0.01 by default: a nightly's false
// alarm stays ≤ 1 %); what the looser level risks is a "same" for a
// change just at the bar, 5 % of the time, not a missed regression
// beyond it. At 98 % (the family's α) this VM's A/A needed ~18 min
// of cells for ±2 % in 9 of 10 runs; at 90 % (t + z)² shrinks by
// 0.69, to ~12 min (bench/designed, PG 15 select1 and churn, c 8).
func EquivalenceAlpha(alpha float64) float64 { return math.Max(alpha, 0.05) }

func (d design) looks() int {
	if d.step <= 0 || d.limit <= d.r0 {
		return 1
	}
	return 1 + (d.limit-d.r0+d.step-1)/d.step
}

// n is the number of pairs at look k (1-based).
func (d design) n(k int) int { return min(d.r0+(k-1)*d.step, d.limit) }

// level is the family-wise level spent at look k.
func (d design) level(k int) float64 { return d.alpha * d.share(k) }

// share is the part of a level spent at look k: all of it in a design
// of one look.
func (d design) share(k int) float64 {
	if d.looks() == 1 {
		return 1
	}
	prev := 0.0
	if k > 1 {
		prev = spend(float64(d.n(k-1)) / float64(d.limit))
	}
	return spend(float64(d.n(k))/float64(d.limit)) - prev
}

// decide judges one commit's family of gated tests, look by look: at
// each, the tests still open are measured on their first n_k pairs and
// the family's graph (hierarchy, built once over every test) at that
// look's level says which are significant; a test leaves the family
// once decided (better, worse or same) or when it has no pairs for the
// next look, and counts as p = 1 at the looks after. Each look is then a
// graph procedure on p-values no smaller than the true ones, valid at
// its own level (graphs are monotone in the p-values), and the levels
// sum to α (the union bound); a closed test's α is never handed on.
// Replaying the looks from the data makes the verdict of a resumed or
// re-analysed run the one the run stopped on.
func decide(tests []*test, d design) { decideWith(tests, d, hierarchy(tests).reject) }

// decideWith is decide with the family's procedure given: a graph's
// reject, or holm for a flat family.
func decideWith(tests []*test, d design, reject func(ps []float64, alpha float64) ([]bool, []float64)) {
	index := make(map[*test]int, len(tests))
	for i, t := range tests {
		index[t] = i
	}
	open := tests
	for k := 1; k <= d.looks() && len(open) > 0; k++ {
		nk, a := d.n(k), d.level(k)
		ps := make([]float64, len(tests))
		for i := range ps {
			ps[i] = 1
		}
		for _, t := range open {
			n := len(t.cand)
			if t.paired && d.looks() > 1 {
				n = min(n, nk)
			}
			if t.role == pooled {
				n = nk
				if d.looks() == 1 {
					n = math.MaxInt
				}
			}
			t.measure(n, d.equivalence(k))
			t.look = k
			if !math.IsNaN(t.p) {
				ps[index[t]] = t.p // NaN: no test to reject, a counter inside the range
			}
		}
		sig, w := reject(ps, a)
		var next []*test
		for _, t := range open {
			i := index[t]
			t.classify(sig[i], w[i]*a)
			t.gatekept = t.role == secondary && w[i] == 0 && !sig[i]
			if t.verdict != results.Unknown || k == d.looks() || t.counter {
				// A counter is judged once, on every value, at the first
				// look's level: it never asks for more blocks.
				continue
			}
			if t.paired && len(t.cand) >= d.n(k+1) || t.role == pooled && t.reaches(d.n(k+1)) {
				next = append(next, t)
			} else {
				t.undecided = true
			}
		}
		open = next
	}
	for _, t := range tests {
		if t.role == pooled && t.verdict == results.Unknown {
			t.undecided = false // a pooled test asks for no blocks of its own
		}
	}
}

// reaches says whether every part of a pooled test has n pairs: the
// pool looks again only on whole blocks. Judged again on the same pairs
// at each later look's level, a pool had a chance at each level with
// one set of data: with O'Brien–Fleming-type spending (the last look's
// level near 5 %) a −2 % was same at ±2 % in 7 % of designed runs under
// --until-decided, not 5 % (bench/designed -until-decided).
func (t *test) reaches(n int) bool {
	for _, pt := range t.parts {
		if len(pt.cand) < n {
			return false
		}
	}
	return true
}

// hierarchy is the graph (Bretz et al. 2009) of a commit's gated
// tests. Each primary metric has an equal share of α; within it the
// run-level (pooled) test holds half and the configurations' primaries
// share the other half (all of it without a pooled test). A rejected
// pooled test passes its α to the configurations; a rejected primary
// passes half of its α to the secondaries of its configuration and half
// to the other configurations (Holm's step-down), or all of it where one
// side has none; a rejected secondary passes its α to the other
// secondaries of its configuration, the last of them to the primaries.
// Secondaries start with none: they are tested behind their primary
// (fixed-sequence gatekeeping), so at any -r the primary's power is
// the same with four gated metrics or forty.
func hierarchy(ts []*test) graph {
	m := len(ts)
	g := graph{w: make([]float64, m), g: newMatrix(m)}
	f := familyOf(ts)
	if len(f.groups) == 0 {
		// No primary in the family at all (a commit whose configurations
		// all lack one is incomplete; this is for the simulations and
		// plans without a primary): the secondaries share α equally,
		// Holm's procedure among them.
		var all []int
		for _, sc := range f.secs {
			all = append(all, sc...)
		}
		holmEdges(g, all)
		return g
	}
	share := 1 / float64(len(f.groups))
	for _, grp := range f.groups {
		f.wirePrimary(g, ts, grp, share)
	}
	f.wireSecondaries(g, ts)
	return g
}

// holmEdges gives the tests in idx equal weights and complete edges.
func holmEdges(g graph, idx []int) {
	for _, s := range idx {
		g.w[s] = 1 / float64(len(idx))
		for _, o := range idx {
			if o != s {
				g.g[s][o] = 1 / float64(len(idx)-1)
			}
		}
	}
}

// family is a look's open gated tests by role: each group is a primary
// metric's pooled test (−1 without one) followed by its configurations'
// primaries; secs are the secondaries by configuration.
type family struct {
	groups  [][]int
	prims   map[string][]int // configuration → its primaries
	secs    map[string][]int // configuration → its secondaries
	primAll []int
}

func familyOf(ts []*test) family {
	f := family{prims: map[string][]int{}, secs: map[string][]int{}}
	var poolIdx []int
	for i, t := range ts {
		switch t.role {
		case pooled:
			poolIdx = append(poolIdx, i)
		case primary:
			f.prims[t.cfg] = append(f.prims[t.cfg], i)
			f.primAll = append(f.primAll, i)
		case secondary:
			f.secs[t.cfg] = append(f.secs[t.cfg], i)
		}
	}
	covered := map[int]bool{}
	for _, pi := range poolIdx {
		grp := []int{pi}
		for _, j := range f.primAll {
			if slices.Contains(ts[pi].parts, ts[j]) {
				grp = append(grp, j)
				covered[j] = true
			}
		}
		f.groups = append(f.groups, grp)
	}
	loose := []int{-1}
	for _, j := range f.primAll {
		if !covered[j] {
			loose = append(loose, j)
		}
	}
	if len(loose) > 1 {
		f.groups = append(f.groups, loose)
	}
	return f
}

// wirePrimary weighs one primary metric's group (its share of α: half
// to the pooled test, half over the configurations) and its edges.
func (f family) wirePrimary(g graph, ts []*test, grp []int, share float64) {
	pi, members := grp[0], grp[1:]
	cfgShare := share
	if pi >= 0 {
		cfgShare, g.w[pi] = share/2, share/2
		if len(members) == 0 {
			g.w[pi] = share
		}
		for _, j := range members {
			g.g[pi][j] = 1 / float64(len(members))
		}
	}
	for _, j := range members {
		g.w[j] = cfgShare / float64(len(members))
		var others []int
		for _, o := range members {
			if o != j {
				others = append(others, o)
			}
		}
		if pi >= 0 && len(others) == 0 {
			others = []int{pi}
		}
		sc := f.secs[ts[j].cfg]
		toSec := 0.0
		switch {
		case len(sc) > 0 && len(others) > 0:
			toSec = 0.5
		case len(sc) > 0:
			toSec = 1
		}
		for _, s := range sc {
			g.g[j][s] += toSec / float64(len(sc)) / float64(len(f.prims[ts[j].cfg]))
		}
		for _, o := range others {
			g.g[j][o] += (1 - toSec) / float64(len(others))
		}
	}
}

// wireSecondaries passes a rejected secondary's α to the other
// secondaries of its configuration, the last one's to the primaries of
// the other configurations.
func (f family) wireSecondaries(g graph, ts []*test) {
	for cfg, sc := range f.secs {
		for _, s := range sc {
			var to []int
			for _, o := range sc {
				if o != s {
					to = append(to, o)
				}
			}
			if len(to) == 0 {
				for _, j := range f.primAll {
					if ts[j].cfg != cfg {
						to = append(to, j)
					}
				}
			}
			for _, o := range to {
				g.g[s][o] = 1 / float64(len(to))
			}
		}
	}
}
