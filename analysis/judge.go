package analysis

// Judging a commit: its tests as one family, with a pooled run-level
// test per primary metric; the run-level answers, and what would answer
// the unknown ones.

import (
	"fmt"
	"math"
	"slices"

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
// family (hierarchy), look by look under a sequential design; the
// report-only tests as a family of their own (Holm at α), higher or
// lower only; mirrors are left to their metric. It returns the size of
// the gated family, how many gated counters were compared exactly, how
// many tests mirror, and the pooled tests.
func judge(cts []*cellTest, d design) (family, exact, mirrored int, pools []*test) {
	var fam, loose []*test
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
	ps := make([]float64, len(loose))
	for i, t := range loose {
		t.measure(len(t.cand), d.alpha)
		ps[i] = t.p
		if math.IsNaN(ps[i]) {
			ps[i] = 1
		}
	}
	sig := holm(ps, d.alpha)
	for i, t := range loose {
		t.classify(sig[i], d.alpha/float64(len(loose)))
	}
	return len(fam), exact, mirrored, pools
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

// pooled records a commit's run-level answers: each pooled test as a
// Geomean, and its regression, as the gate's.
func (a *analyzer) pooled(c string, pools []*test) {
	for _, t := range pools {
		g := Geomean{Commit: c, Metric: t.cfg, Configs: t.n, P: t.p, Verdict: t.verdict, MinEffectPct: t.minEffect, Look: t.look,
			Ratio: 1 + t.est/100, Lo: 1 + t.lo95/100, Hi: 1 + t.hi95/100, DecideLo: 1 + t.lo/100, DecideHi: 1 + t.hi/100}
		if t.verdict == results.Unknown {
			g.DetectablePct = t.detectable()
			g.NeedRepeats = needRepeats(t)
		}
		a.r.Geomeans = append(a.r.Geomeans, g)
		if t.verdict == results.Worse {
			a.r.Regressions = append(a.r.Regressions, Change{Commit: c, Config: fmt.Sprintf("run level (geometric mean of %d configurations)", t.n), Metric: t.cfg,
				DeltaPct: t.est, P: t.p, Verdict: t.verdict, Gated: true})
		}
	}
}

// needRepeats is how many repeats an unknown test would need for its
// 80 %-power change to shrink to its bar, at the noise it measured (the
// standard error falls as 1/√n); 0 when it cannot say.
func needRepeats(t *test) int {
	n := t.n
	if t.role == pooled {
		n = 0 // the blocks, not the configurations it pools
		for _, p := range t.parts {
			n = max(n, len(p.cand))
		}
	}
	if math.IsInf(t.mde, 0) || math.IsNaN(t.mde) || t.minEffect <= 0 || n < 1 {
		return 0
	}
	need := math.Ceil(float64(n) * (t.mde / t.minEffect) * (t.mde / t.minEffect))
	if need > 1e6 {
		return 0
	}
	return max(int(need), n+1)
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
			a.r.Unanswered = append(a.r.Unanswered, fmt.Sprintf("%s %s %s unknown%s", c, ct.t.cfg, ct.metric, needText(ct.t)))
		}
	}
}

func needText(t *test) string {
	if n := needRepeats(t); n > 0 {
		return fmt.Sprintf(": needs r ≥ %d (or a quieter host; see abtest doctor)", n)
	}
	return ": give more repeats (or a quieter host; see abtest doctor)"
}
