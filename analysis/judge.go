package analysis

// Judging a commit: its tests as one family, with a pooled run-level
// test per primary metric; the run-level answers, and what would answer
// the unknown ones.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pgabtest/abtest/results"
)

// decideCommit decides a commit's tests (judge), then the metrics that
// mirror another; and sums up the commit unless it is the baseline.
func (a *analyzer) decideCommit(c string) {
	sum := Summary{Commit: c}
	var pools []*test
	sum.Tests, sum.Exact, sum.Mirrored, pools = judge(a.byCommit[c], a.d)
	a.pools = pools
	a.pooled(c, pools)
	a.unanswered(c)
	for _, ct := range a.byCommit[c] {
		row := &a.r.Rows[ct.row]
		st := &row.Stats[ct.stat]
		if ct.mirror != "" {
			a.mirrorVerdict(c, ct, row, st)
		} else {
			a.testVerdict(ct, row, st, &sum)
		}
		a.noteChange(c, ct, row, st)
	}
	if c == a.r.Baseline {
		return
	}
	a.countVerdicts(c, &sum)
	a.boundNoChange(c, &sum)
	a.r.Summaries = append(a.r.Summaries, sum)
}

// judge decides one commit's cell tests: a counter within its band in
// both arms by comparison; two arms of one constant as same; the gated
// tests, with one pooled run-level test per primary metric, as one
// family (hierarchy), look by look under a sequential design; the gated
// event counts as a family of their own (Holm at α, the same looks),
// which neither takes the primaries' α nor gives any to a secondary;
// the report-only tests as a family of their own (Holm at α), higher or
// lower only; mirrors are left to their metric. It returns the number
// of gated tests, how many gated counters were compared exactly, how
// many tests mirror, and the pooled tests.
func judge(cts []*cellTest, d design) (family, exact, mirrored int, pools []*test) {
	var fam, loose, events []*test
	byMetric := map[string][]*test{}
	var order []string
	for _, ct := range cts {
		switch {
		case ct.mirror != "":
			mirrored++
		case ct.exact && !ct.count && exactVerdict(ct.t, ct.observed):
			if ct.gated {
				exact++
			}
		case constantEqual(ct.t):
		case ct.count && noEvents(ct.t):
		case ct.count && fewEvents(ct.t, d.alpha):
		case !ct.gated:
			loose = append(loose, ct.t)
		case ct.count:
			// A gated event count: its own family (event).
			ct.t.count, ct.t.counter, ct.t.role = true, false, event
			events = append(events, ct.t)
		default:
			ct.t.count = ct.count
			ct.t.counter = ct.t.counter && !ct.count
			fam = append(fam, ct.t)
			if ct.answer && ct.t.paired && ct.t.log && !ct.t.counter {
				if _, ok := byMetric[ct.metric]; !ok {
					order = append(order, ct.metric)
				}
				byMetric[ct.metric] = append(byMetric[ct.metric], ct.t)
			}
		}
	}
	for _, m := range order {
		parts := byMetric[m]
		moderate(parts)
		if len(parts) < 2 {
			continue
		}
		pt := &test{dir: parts[0].dir, role: pooled, parts: parts, paired: true, log: true, bmed: 1}
		for _, p := range parts {
			pt.minEffect += p.minEffect / float64(len(parts))
		}
		pt.cfg = m
		pools = append(pools, pt)
		fam = append(fam, pt)
	}
	decide(fam, d)
	decideWith(events, d, holm)
	ps := make([]float64, len(loose))
	for i, t := range loose {
		t.measure(len(t.cand), EquivalenceAlpha(d.alpha))
		ps[i] = t.p
	}
	sig, _ := holm(ps, d.alpha)
	for i, t := range loose {
		t.classify(sig[i], d.alpha/float64(len(loose)))
	}
	return len(fam) + len(events), exact, mirrored, pools
}

// constantEqual decides, as same with Δ 0, a test whose two arms are
// every one the same constant (pgss_deallocs 0 against 0 on select1):
// there is nothing to test, and it takes no share of α.
func constantEqual(t *test) bool {
	if len(t.base) == 0 || len(t.cand) == 0 {
		return false
	}
	c := t.base[0]
	for _, v := range t.base {
		if v != c {
			return false
		}
	}
	for _, v := range t.cand {
		if v != c {
			return false
		}
	}
	t.n, t.p, t.est = len(t.cand), math.NaN(), 0
	t.lo, t.hi, t.lo95, t.hi95 = 0, 0, 0, 0
	t.mde, t.verdict = t.minEffect, results.Same
	return true
}

// fewEvents leaves out of the family, unknown, an event count whose
// total is too small for its rate test ever to reach α (2 events
// against 1, say): the smallest p of N events is 2·min(q, 1−q)^N, q the
// candidate's share of the cells, and a test that cannot reject takes
// no share of α (Tarone).
// Sporadic failures in a few cells would otherwise halve the primary's
// α whenever they happen.
func fewEvents(t *test, alpha float64) bool {
	b, c := meanOf(t.base)*float64(len(t.base)), meanOf(t.cand)*float64(len(t.cand))
	q := float64(len(t.cand)) / float64(len(t.base)+len(t.cand))
	if 2*math.Pow(math.Min(q, 1-q), math.Round(b+c)) <= alpha {
		return false
	}
	t.count = true
	t.measureCount(float64(len(t.cand)), alpha)
	t.verdict, t.mde = results.Unknown, math.Inf(1)
	return true
}

// noEvents decides an event count whose arms had no event at all: same,
// with no test (a test of 0 events cannot reject, so it takes no share
// of α; Tarone's rule for discrete tests).
func noEvents(t *test) bool {
	for _, v := range t.base {
		if v != 0 {
			return false
		}
	}
	for _, v := range t.cand {
		if v != 0 {
			return false
		}
	}
	return constantEqual(t)
}

// covered reports whether a primary test is part of a pooled test: the
// pooled one then answers for it.
func (a *analyzer) covered(t *test) bool {
	for _, p := range a.pools {
		if slices.Contains(p.parts, t) {
			return true
		}
	}
	return false
}

// poolDecided reports whether a pooled test covering t was decided.
func (a *analyzer) poolDecided(t *test) bool {
	for _, p := range a.pools {
		if slices.Contains(p.parts, t) && p.verdict != results.Unknown {
			return true
		}
	}
	return false
}

// poolOpen says whether more blocks of t's configuration may still
// decide a run-level test covering it: the test is unknown with a look
// left, no part of it was called better or worse (that part stops, and
// the pool can look again only on whole blocks), and t is below the
// most repeats.
func (a *analyzer) poolOpen(t *test) bool {
	if len(t.cand) >= a.d.limit {
		return false
	}
	for _, p := range a.pools {
		if !slices.Contains(p.parts, t) || p.verdict != results.Unknown || p.look >= a.d.looks() {
			continue
		}
		if !slices.ContainsFunc(p.parts, func(pt *test) bool { return called(pt.verdict) }) {
			return true
		}
	}
	return false
}

// called says whether v is a change: better, worse, higher or lower.
func called(v results.Verdict) bool {
	return v == results.Better || v == results.Worse || v == results.Higher || v == results.Lower
}

// pooled records a commit's run-level answers: each pooled test as a
// Geomean, and its regression, as the gate's.
func (a *analyzer) pooled(c string, pools []*test) {
	for _, t := range pools {
		g := Geomean{Commit: c, Metric: t.cfg, Configs: t.n, P: t.p, Verdict: t.verdict, MinEffectPct: t.minEffect, Bar: a.o.Bar, Look: t.look,
			Ratio: 1 + t.est/100, Lo: 1 + t.lo95/100, Hi: 1 + t.hi95/100, DecideLo: 1 + t.lo/100, DecideHi: 1 + t.hi/100, DecidePct: 100 * (1 - 2*t.alpha)}
		if t.verdict == results.Unknown {
			g.DetectablePct = t.detectable()
			g.NeedRepeats, g.HalfWidthPct = needRepeats(t), halfWidth(t)
			g.NeedMinutes = float64(g.NeedRepeats*t.n*len(a.p.Commits)) * a.cellSeconds() / 60
		}
		a.r.Geomeans = append(a.r.Geomeans, g)
		if t.verdict == results.Worse {
			a.r.Regressions = append(a.r.Regressions, Change{Commit: c, Config: fmt.Sprintf("run level (geometric mean of %d configurations)", t.n), Metric: t.cfg,
				DeltaPct: t.est, P: t.p, Verdict: t.verdict, Gated: true})
		}
	}
}

// cellSeconds is the median time from one timed cell's start to the
// next one's in this run: what a cell costs here, warm-up, setup and
// orchestration included (0 with fewer than 2 cells or no times).
func (a *analyzer) cellSeconds() float64 {
	var starts []time.Time
	for _, rec := range a.in.Records {
		if rec.Config.Instructions || rec.StartedAt.IsZero() {
			continue
		}
		starts = append(starts, rec.StartedAt)
	}
	slices.SortFunc(starts, func(x, y time.Time) int { return x.Compare(y) })
	var gaps []float64
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]).Seconds())
	}
	if len(gaps) == 0 {
		return 0
	}
	return Median(gaps)
}

// needRepeats is how many repeats an unknown test would need to answer
// at the spread it measured (the standard error falls as 1/√n, the
// degrees of freedom grow with n): where its equivalence interval is wider than
// its bar, for the interval's half-width to fit the bar (what a same
// needs, a change of 0 given); where it fits already but straddles the
// bar, for the half-width to shrink to the estimate's distance from the
// bar. 0 when it cannot say (no spread, no bar, or beyond 10⁶).
func needRepeats(t *test) int {
	n := t.n
	if t.role == pooled {
		n = 0 // the blocks, not the configurations it pools
		for _, p := range t.parts {
			n = max(n, len(p.cand))
		}
	}
	if !t.paired || math.IsNaN(t.se) || t.se <= 0 || t.df < 1 || t.minEffect <= 0 || math.IsInf(t.minEffect, 0) || n < 2 || t.alpha <= 0 {
		return 0
	}
	unit := func(pct float64) float64 { // a bar in percent, in the test's units
		if t.log {
			return math.Log1p(pct / 100)
		}
		return pct / 100
	}
	bar := math.Min(unit(t.minEffect), -unit(-t.minEffect))
	target := bar
	if half := tq(1-t.alpha, t.df) * t.se; half <= bar && !math.IsNaN(t.est) {
		target = math.Abs(bar - math.Abs(unit(t.est)))
	}
	if target <= 0 {
		return 0
	}
	// The half-width at m blocks: the standard error falls as 1/√m, the
	// degrees of freedom grow with the blocks.
	half := func(m int) float64 {
		df := math.Max(1, t.df*float64(m-1)/float64(n-1))
		return tq(1-t.alpha, df) * t.se * math.Sqrt(float64(n)/float64(m))
	}
	// At the current degrees of freedom, an m that fits (the quantile
	// only falls as they grow); then the least one, halving.
	guess := float64(n) * math.Pow(tq(1-t.alpha, t.df)*t.se/target, 2)
	if guess > 1e6 || math.IsNaN(guess) {
		return 0
	}
	lo, hi := n, max(int(math.Ceil(guess)), n+1) // half(lo) > target (unknown now) ≥ half(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; half(mid) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// halfWidth is the half-width of a test's decision interval (1−2·EquivalenceAlpha), in
// percent.
func halfWidth(t *test) float64 {
	return (t.hi - t.lo) / 2
}

// unanswered lists a commit's unknown primary answers: its pooled tests,
// and the primaries no pooled test covers.
func (a *analyzer) unanswered(c string) {
	if c == a.r.Baseline {
		return
	}
	for _, t := range a.pools {
		if t.verdict == results.Unknown {
			a.r.Unanswered = append(a.r.Unanswered, fmt.Sprintf("%s run-level %s unknown over %d configurations%s", c, t.cfg, t.n, needText(t)))
		}
	}
	for _, ct := range a.byCommit[c] {
		if ct.answer && ct.t.verdict == results.Unknown && !a.covered(ct.t) {
			a.r.Unanswered = append(a.r.Unanswered, fmt.Sprintf("%s %s %s unknown%s", c, a.p.ShownID(ct.t.cfg), ct.metric, needText(ct.t)))
		}
	}
}

func needText(t *test) string {
	why := ""
	if w := halfWidth(t); !math.IsNaN(w) && !math.IsInf(w, 0) && w > 0 {
		why = fmt.Sprintf("its %.0f%% interval %s … %s against the bar ±%.3g%%; ", 100*(1-2*t.alpha), pct(t.lo), pct(t.hi), t.minEffect)
	}
	if n := needRepeats(t); n > 0 {
		return fmt.Sprintf(": needs r ≥ %d or a quieter host (%ssee abtest doctor)", n, why)
	}
	return fmt.Sprintf(": give more repeats or a quieter host (%ssee abtest doctor)", why)
}
