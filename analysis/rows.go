package analysis

// Planning the tests: a row per configuration and metric, a Stat per
// commit, and a test for each Stat that can be decided; an incomplete
// one gets its verdict here.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// cellTest is one test of a commit × configuration × metric, and the
// Stat its verdict goes to.
type cellTest struct {
	t     *test
	row   int
	stat  int
	exact bool
	// observed: exact only because the baseline never varied here (the
	// metric is declared banded).
	observed bool
	gated    bool
	mirror   string
	metric   string
	// answer: the test answers the run's question (a primary metric);
	// count: an event count, judged by a rate test.
	answer, count bool
}

// planTests makes the rows, one per configuration × metric that has
// values, and one test per commit × configuration × metric.
func (a *analyzer) planTests() {
	a.rowIdx = map[[2]string]int{}
	a.byCommit = map[string][]*cellTest{}
	for _, id := range a.configs {
		for _, m := range a.r.Metrics {
			a.planRow(id, m)
		}
	}
}

// rowInputs is what the commits of one row share.
type rowInputs struct {
	id, m string
	def   results.Metric
	tier  Tier
	bg    *group
	base  []float64
	// bmed is the median of base (Median()), 0 without values.
	bmed float64
}

// planRow makes the row of a configuration and metric, if any commit has
// values there.
func (a *analyzer) planRow(id, m string) {
	expected := false
	for _, c := range a.r.Commits {
		if len(a.values(a.groups[id][c], m)) > 0 {
			expected = true
		}
	}
	if !expected {
		return
	}
	def, _ := a.p.Metrics.Get(m)
	bg := a.groups[id][a.r.Baseline]
	in := &rowInputs{id: id, m: m, def: def, tier: a.tiers[m], bg: bg, base: a.values(bg, m)}
	if len(in.base) > 0 {
		in.bmed = a.column(bg, m).median
	}
	row := Row{Config: id, Metric: m}
	for _, c := range a.r.Commits {
		st, ct := a.planStat(in, c, len(row.Stats))
		if ct != nil {
			a.byCommit[c] = append(a.byCommit[c], ct)
		}
		row.Stats = append(row.Stats, st)
	}
	a.rowIdx[[2]string{id, m}] = len(a.r.Rows)
	a.r.Rows = append(a.r.Rows, row)
}

// planStat makes a commit's Stat in a row: the median and its interval,
// and either the verdict (baseline, incomplete) or the test to decide it.
func (a *analyzer) planStat(in *rowInputs, c string, stat int) (Stat, *cellTest) {
	g := a.groups[in.id][c]
	vs := a.values(g, in.m)
	gated := a.gatedIn(in.m, in.id)
	st := Stat{Commit: c, N: len(vs), Values: vs, Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN(),
		DeltaPct: math.NaN(), DeltaLo: math.NaN(), DeltaHi: math.NaN(), DecideLo: math.NaN(), DecideHi: math.NaN(), P: math.NaN(), Gated: gated && c != a.r.Baseline}
	st.Geomean, st.BaseGeomean = geoMean(vs), math.NaN()
	if len(vs) > 0 {
		c := a.column(g, in.m)
		st.Median, st.Lo, st.Hi = c.center, c.lo, c.hi
	}
	if c == a.r.Baseline {
		st.Verdict = results.VerdictBaseline
		return st, nil
	}
	isPrimary := slices.Contains(a.primary[in.id], in.m)
	aroundZero := in.tier.Tier == results.TierBand && a.aroundZero[in.m][in.id] && !isPrimary
	if isPrimary {
		// The primary always gates: its answer is the run's.
		st.Gated, st.Primary = true, true
	}
	if aroundZero {
		// The baseline varied around a median of 0 here (sporadic WAL
		// of a read-only workload): reported, not gated, in this
		// configuration, whatever the metric's tier.
		st.Gated = false
	}
	why := a.metricMissing(in, c, g, vs)
	if why == "" {
		why = a.methodsDiffer(in, c, g, len(vs))
	}
	if len(vs) > 0 && len(in.base) > 0 {
		st.DeltaPct = deltaPct(in.bmed, st.Median)
	}
	if c != a.r.Baseline {
		st.BaseGeomean = geoMean(in.base)
	}
	if why != "" {
		a.judgeIncomplete(&st, in, vs, why)
		return st, nil
	}
	if len(vs) == 0 || len(in.base) == 0 {
		// An arm with no value here and nothing missing: its cells all
		// saturated, which the rate row calls, not the incomplete list.
		// Nothing to compare, so no verdict (an empty arm reached the
		// exact comparison and panicked), and no change of any size
		// could have been detected (a detectable size of 0 read
		// "unknown <0%").
		st.Verdict, st.Note, st.DetectablePct = results.Unknown, emptyArm(in, c, g, len(vs) == 0), math.Inf(1)
		return st, nil
	}
	if note := fewShareSamples(in.m, in.bg, g); note != "" {
		st.Verdict, st.NoSignal, st.Note, st.DeltaPct, st.DetectablePct = results.Unknown, fewSharesWhy, note, math.NaN(), math.Inf(1)
		return st, nil
	}
	// Complete: every repeat of both commits is usable, so the blocks
	// pair.
	pb, pc := a.pairs(in.bg, g, in.m)
	ct := &cellTest{row: len(a.r.Rows), stat: stat, gated: st.Gated, metric: in.m, exact: in.tier.Tier == results.TierExact, observed: in.def.Tier != results.TierExact}
	me := a.minEffect[in.m][in.id]
	paired := len(pb) == len(in.base) && len(pc) == len(vs)
	switch {
	case ct.exact && !in.def.Count || !paired:
		ct.t = newTestMedian(in.def, me, in.base, vs, false, in.bmed)
	case len(pb) > 0 && &pb[0] == &in.base[0]:
		// The pairs are the columns (pairs).
		ct.t = newTestMedian(in.def, me, pb, pc, true, in.bmed)
	default:
		ct.t = newTest(in.def, me, pb, pc, true)
	}
	if paired {
		st.Geomean, st.BaseGeomean = geoMean(pc), geoMean(pb)
	}
	if aroundZero {
		ct.t.minEffect = a.threshold(in.m)
	}
	a.placeTest(in, ct, gated, isPrimary)
	return st, ct
}

// placeTest gives a cell test its place: the metric it mirrors, if
// any, and its role in the commit's families.
func (a *analyzer) placeTest(in *rowInputs, ct *cellTest, gated, isPrimary bool) {
	if in.def.SameAs != "" && slices.Contains(a.r.Metrics, in.def.SameAs) && a.gatedIn(in.def.SameAs, in.id) == gated && !a.cfgs[in.id].Open() {
		// A function of another metric in a closed loop only
		// (latency_avg_ms is clients/tps there); with -R it is
		// pgbench's own measurement, and tested as itself.
		ct.mirror = in.def.SameAs
	}
	ct.t.cfg, ct.count = in.id, in.def.Count
	switch {
	case isPrimary:
		ct.t.role, ct.answer = primary, true
	case !gated:
		ct.t.role = reportOnly
	case in.def.Count:
		// Events are their own question (a build that fails 5 % of its
		// transactions is worse whatever its TPS): a family of their
		// own (judge), taken only when some cell had an event.
		ct.t.role = event
	}
}

// emptyArm says why an arm of a complete row has no value: the
// candidate's (cand) or the baseline's cells all saturated.
func emptyArm(in *rowInputs, c string, g *group, cand bool) string {
	who, grp := c, g
	if !cand {
		who, grp = "the baseline", in.bg
	}
	if grp != nil && grp.saturated > 0 {
		return fmt.Sprintf("no value: %s saturated in all %d cells (see the rate row)", who, grp.saturated)
	}
	return fmt.Sprintf("no value of %s in %s's cells", in.m, who)
}

// metricMissing says why a commit's cells in a configuration cannot be
// tested for a metric: the cells are incomplete, or complete but some
// lack the metric (which it adds to the report's incomplete list); ""
// when they can.
func (a *analyzer) metricMissing(in *rowInputs, c string, g *group, vs []float64) string {
	why := a.cellWhy[in.id][c]
	var void bool
	if why == "" && g != nil && len(vs) < len(g.usable) {
		why, void = a.missingWhy(in.m, g, len(vs), "cells")
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: len(vs), Planned: g.planned, Why: why, Gated: a.declaredGated(in.m, in.id) && !void})
	}
	if why == "" && in.bg != nil && len(in.base) < len(in.bg.usable) {
		why, void = a.missingWhy(in.m, in.bg, len(in.base), "baseline cells")
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: len(vs), Planned: g.planned, Why: why, Gated: a.declaredGated(in.m, in.id) && !void})
	}
	return why
}

// declaredGated reports whether a metric gates in configuration id by
// its declaration, the options or as id's primary, whatever its
// measured tier: a metric missing from the baseline has no spread to
// measure, and must not thereby stop gating (tps absent from the
// baseline's cells exited 0).
func (a *analyzer) declaredGated(m, id string) bool {
	def, _ := a.p.Metrics.Get(m)
	return slices.Contains(a.o.Gate, m) || slices.Contains(a.o.Primary, m) || slices.Contains(a.primary[id], m) || def.Direction != results.Descriptive && def.Tier != results.TierReport
}

// methodsDiffer refuses to compare a metric that depends on how it was
// measured (results.Metric.MeasuredBy) when the baseline's and the
// commit's cells in a configuration were not all measured by one method
// (shards or a resumption run by different abtest versions, say): it
// says why and adds the refusal to the report's incomplete list; ""
// when one method measured them all.
func (a *analyzer) methodsDiffer(in *rowInputs, c string, g *group, n int) string {
	by := in.def.MeasuredBy
	if by == "" {
		return ""
	}
	bm, cm := methodsOf(in.bg, in.m, by), methodsOf(g, in.m, by)
	if len(bm) == 0 || len(cm) == 0 || len(bm) == 1 && slices.Equal(bm, cm) {
		return ""
	}
	why := fmt.Sprintf("%s measured by %s in %s and by %s in %s: different %s methods are not compared", in.m, strings.Join(bm, " and "), a.r.Baseline, strings.Join(cm, " and "), c, by)
	a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: n, Planned: g.planned, Why: why, Gated: a.gatedIn(in.m, in.id)})
	return why
}

// methodsOf lists, sorted, the methods of a kind that measured a
// group's usable cells having the metric; "unrecorded" for cells that do
// not say.
func methodsOf(g *group, m string, by results.MeasuredBy) []string {
	if g == nil {
		return nil
	}
	if _, all := slices.BinarySearch(g.names, m); all {
		// Every usable cell has m: the methods of them all, found as
		// fillColumns read the cells, or here once per kind (for every
		// metric and commit, they were a tenth of Analyze at 10⁵
		// cells). Read them, never write them.
		out, ok := g.methods[by]
		if !ok {
			out = methods(g, "", by)
			if g.methods == nil {
				g.methods = map[results.MeasuredBy][]string{}
			}
			g.methods[by] = out
		}
		return out
	}
	return methods(g, m, by)
}

// methods is methodsOf of the cells that have m, or of all ("").
func methods(g *group, m string, by results.MeasuredBy) []string {
	var out []string
	for _, rec := range g.records() {
		if _, ok := rec.Metrics.Get(m); m != "" && !ok {
			continue
		}
		out = addMethod(out, rec.Method(by))
	}
	slices.Sort(out)
	return out
}

// judgeIncomplete gives an incomplete Stat its verdict, and the unpaired
// p-value of what values there are, for information.
func (a *analyzer) judgeIncomplete(st *Stat, in *rowInputs, vs []float64, why string) {
	st.Verdict, st.Note = results.Incomplete, why
	if len(vs) == 0 || len(in.base) == 0 {
		return
	}
	t := newTestMedian(in.def, a.minEffect[in.m][in.id], in.base, vs, false, in.bmed)
	t.measure(len(vs), a.o.Alpha)
	st.P, st.Method = t.p, "unpaired"
	if mp := minUP(len(in.base), len(vs)); mp >= a.o.Alpha {
		st.Note += fmt.Sprintf("; %d + %d repeats can never reach p < %v (smallest U-test p %.2g)", len(in.base), len(vs), a.o.Alpha, mp)
	}
}

// geoMean is the geometric mean of xs, NaN without values or with one
// that is not above 0.
func geoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		if !(x > 0) {
			return math.NaN()
		}
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}
