// Package analysis turns result directories into verdicts: per
// configuration and metric, the median of every commit with a
// distribution-free confidence interval (golang.org/x/perf/benchmath,
// what benchstat uses) and the change against the baseline.
//
// Verdicts (results.Verdict), per commit × configuration × metric:
// better/worse when significant and beyond the metric's minimum effect;
// same when the change's 90 % interval (EquivalenceAlpha) lies within
// ±that effect;
// unknown otherwise, with the smallest change this run could have
// detected; incomplete when fewer repeats than planned are usable
// (failed, saturated, absent, metric missing or not a measurement),
// which gates (Report.Gate). When the interleaved blocks are complete,
// the two cells of a block are a pair: a paired t test of the per-pair
// log ratios, the change their geometric mean; otherwise the unpaired
// U-test is shown. Per commit, one family at α (issue 21): each primary
// metric (Options.Primary; tps, instructions_per_tx) is tested over all
// configurations at once (the run-level answer, Report.Geomeans) and in
// each, and the other gated metrics only behind their configuration's
// primary (a graph of Bretz et al., hierarchy); a sequential design
// (Options.Sequential) spends α over its looks. Counters within their
// band are compared, event counts tested by their rates, report-only
// and descriptive metrics say higher/lower in a family of their own.
// Tiers come from the declarations (seed 001); measured noise never
// switches a gate off, and never widens the bar (issue 40): same means
// the equivalence interval lies within ±the user's threshold (Options.Bar), and
// an interval too wide for it is unknown, which gates as the run not
// answering, with the repeats it would need.
//
// It reads only result files (plan.json, cells.jsonl), so results copied
// from another host, shards, and resumed runs all analyse the same way.
package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// Options shape the analysis.
type Options struct {
	// Baseline is the commit label compared against; empty means the
	// plan's first commit.
	Baseline string
	// Alpha is the family-wise significance level per commit, over all
	// its gated tests and every look; zero means 0.01.
	Alpha float64
	// Thresholds override metrics' minimum effects, in percent.
	Thresholds map[string]float64
	// Metrics limits the metrics analysed; empty means every metric the
	// cells carry.
	Metrics []string
	// Gate names metrics to gate although they are descriptive or
	// declared report-only (--gate).
	Gate []string
	// Primary names the primary metrics (--primary): each configuration's
	// gate asks first whether they changed, and the other gated metrics
	// are tested behind them. Empty means DefaultPrimary: tps for timed
	// cells, instructions_per_tx for instruction cells.
	Primary []string
	// Sequential, when Step > 0, judges the run as a sequential design
	// (--until-decided): a look at the plan's repeats, then one every
	// Step blocks up to MaxRepeats, with α spent across the looks.
	Sequential Sequential
	// Bar is where each metric's bar comes from: its threshold (the
	// default), or, under BarAuto (--bar auto), a bar the baseline's
	// noise may widen, said on the run-level line.
	Bar Bar
}

// DefaultPrimary is the primary metric of a configuration when
// Options.Primary names none: the first of these its cells have.
var DefaultPrimary = []string{results.MetricTPS, results.MetricInstructionsPerTx}

// Sequential is the adaptive design of --until-decided. The matrix runs
// the planned repeats, calls Analyze with the same Sequential after each
// batch, and gives Step more blocks to each configuration of
// Report.Undecided() until that is empty or the budget is spent.
type Sequential struct {
	// Step is the number of blocks each extra look adds.
	Step int `json:"step"`
	// MaxRepeats is the most repeats a configuration may reach.
	MaxRepeats int `json:"max_repeats"`
}

// Analyze computes the report.
func Analyze(in *Input, o Options) (*Report, error) {
	a, err := newAnalyzer(in, o)
	if err != nil {
		return nil, err
	}
	a.run()
	return a.r, nil
}

// run is the analysis after newAnalyzer.
func (a *analyzer) run() {
	a.groupCells()
	a.dropCells()
	a.fillAllColumns()
	a.chooseMetrics()
	a.choosePrimary()
	a.findIncomplete()
	a.measureTiers()
	a.planTests()
	for _, c := range a.r.Commits {
		a.decideCommit(c)
	}
	a.noise()
	a.finish()
	a.r.boundDeltas()
	a.r.markNoSignal()
}

// analyzer carries Analyze's state from one step to the next.
type analyzer struct {
	in *Input
	o  Options
	p  *results.Plan
	r  *Report
	d  design

	configs []string
	cfgs    map[string]results.Config    // by ID
	groups  map[string]map[string]*group // config → commit
	present map[string]bool              // metrics with a valid value in some usable cell
	// positive: metrics whose values must be > 0 (results.Metric.Positive)
	positive map[string]bool
	// invalid counts, per metric, the usable cells whose value was not
	// a measurement (null, zero where impossible, non-finite).
	invalid map[string]int
	// voidable: metrics whose value can be void (results.Metric.Validity);
	// void counts, per metric and reason, the usable cells where it was.
	voidable map[string]results.Metric
	voidList []results.Metric // voidable's, in the plan's order, once each
	void     map[string]map[string]int
	// primary: the primary metric(s) of each configuration;
	// primaryOnly: metrics that gate only where they are the primary
	// (declared report-only, gated as an open loop's primary).
	primary     map[string][]string
	primaryOnly map[string]bool
	cellWhy     map[string]map[string]string // config → commit → why

	tiers     map[string]Tier
	minEffect map[string]map[string]float64 // metric → config → percent
	// aroundZero: metric → config where the baseline varied around a
	// median of 0 (an infinite spread): no bar, reported, not gated.
	aroundZero map[string]map[string]bool

	rowIdx    map[[2]string]int // config, metric → index in r.Rows
	byCommit  map[string][]*cellTest
	undecided map[string]bool // configs
	pools     []*test         // the commit being decided's pooled tests
}

// dropCells lets the plan's cells go once they are grouped: nothing
// after reads them, and at 10⁵ cells they are 18 MB live through the
// analysis, where the heap peaks (unless the caller keeps its Input;
// the abtest command does not).
func (a *analyzer) dropCells() {
	p := *a.p
	p.Cells = nil
	in := *a.in
	in.Plan = &p
	a.p, a.in = &p, &in
}

// newAnalyzer checks the options against the plan and starts the report.
func newAnalyzer(in *Input, o Options) (*analyzer, error) {
	p := in.Plan
	if o.Alpha == 0 {
		o.Alpha = 0.01
	}
	if err := CheckAlpha(o.Alpha); err != nil {
		return nil, err
	}
	plan := *p
	plan.Cells = nil
	r := &Report{Plan: &plan, PlannedCells: len(p.Cells), Dirs: in.Dirs, Alpha: o.Alpha, Bar: o.Bar, Warnings: append([]string(nil), in.Warnings...), records: in.Records}
	r.Commits = p.Labels()
	r.Observer = observerCost(in.Records)
	r.Baseline = o.Baseline
	if r.Baseline == "" {
		r.Baseline = p.Baseline
	}
	if !slices.Contains(r.Commits, r.Baseline) {
		return nil, exitcode.BadInputf("--baseline %q: the plan's commits are %s", r.Baseline, strings.Join(r.Commits, ", "))
	}
	for name, pct := range o.Thresholds {
		if _, ok := p.Metrics.Get(name); !ok {
			return nil, exitcode.BadInputf("--threshold %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
		if err := checkThreshold(pct); err != nil {
			return nil, exitcode.BadInputf("--threshold %s=%w", name, err)
		}
	}
	if err := CheckMetrics(p, o); err != nil {
		return nil, err
	}
	if o.Bar != BarThreshold && o.Bar != BarAuto {
		return nil, exitcode.BadInputf("--bar %d: want threshold or auto", int(o.Bar))
	}
	a := &analyzer{in: in, o: o, p: p, r: r, d: design{alpha: o.Alpha, r0: p.Options.Repeats}, undecided: map[string]bool{}}
	if err := a.sequentialDesign(); err != nil {
		return nil, err
	}
	return a, nil
}

// CheckMetrics refuses a --gate or --primary metric the plan does not
// define, and a descriptive --primary (it has no better or worse): the
// one rule, for Analyze and for a run before anything starts.
func CheckMetrics(p *results.Plan, o Options) error {
	for _, name := range o.Gate {
		if _, ok := p.Metrics.Get(name); !ok {
			return exitcode.BadInputf("--gate %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
	}
	for _, name := range o.Primary {
		def, ok := p.Metrics.Get(name)
		if !ok {
			return exitcode.BadInputf("--primary %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
		if def.Direction == results.Descriptive {
			return exitcode.BadInputf("--primary %s: a descriptive metric has no better or worse; choose one with a direction", name)
		}
	}
	return nil
}

// sequentialDesign sets the design of --until-decided, from the options
// or, when they have none, from the plan.
func (a *analyzer) sequentialDesign() error {
	p := a.p
	if a.o.Sequential == (Sequential{}) && p.Options.UntilDecided {
		// The plan says how the run looked: UntilStep extra blocks per
		// look (1 before it was recorded), so a re-analysis spends α as
		// the run did.
		a.o.Sequential = Sequential{Step: max(1, p.Options.UntilStep), MaxRepeats: p.Options.MaxRepeats}
		if a.o.Sequential.MaxRepeats == 0 {
			a.o.Sequential.MaxRepeats = 2 * p.Options.Repeats
		}
	}
	if s := a.o.Sequential; s.Step != 0 || s.MaxRepeats != 0 {
		if s.Step < 1 || s.MaxRepeats < p.Options.Repeats || p.Options.Repeats < 1 {
			return exitcode.BadInputf("--until-decided: step %d, max repeats %d: want a step ≥ 1 and max repeats ≥ the plan's %d", s.Step, s.MaxRepeats, p.Options.Repeats)
		}
		a.d.step, a.d.limit = s.Step, s.MaxRepeats
		a.r.Sequential = &s
	}
	return nil
}

// chooseMetrics keeps the plan's metrics that some cell has and the
// options ask for, in the plan's order.
func (a *analyzer) chooseMetrics() {
	for _, m := range a.p.Metrics {
		if a.present[m.Name] && (len(a.o.Metrics) == 0 || slices.Contains(a.o.Metrics, m.Name)) {
			a.r.Metrics = append(a.r.Metrics, m.Name)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(a.invalid)) {
		why := "null, non-finite or 0"
		if !a.positive[m] {
			why = "null or non-finite"
		}
		a.r.Warnings = append(a.r.Warnings, fmt.Sprintf("%s was %s in %d usable cell(s): not a measurement, counted as missing", m, why, a.invalid[m]))
	}
	a.r.Warnings = append(a.r.Warnings, a.voidWarnings()...)
}

// findIncomplete notes each commit × configuration whose cells are fewer
// than planned, and the saturation where the baseline held the rate.
func (a *analyzer) findIncomplete() {
	r := a.r
	a.cellWhy = map[string]map[string]string{}
	// In a sweep a point may saturate: it is reported in its table and
	// left out of the statistics, not counted as a run that could not
	// answer, unless the plan says no point may saturate.
	o := a.p.Options
	// A closed loop has no offered rate to fall behind: a cell marked
	// saturated there is an invalid cell, like a failed one, and its
	// configuration could not answer (exit 3), never a regression (it
	// exited 1 with "rate n/a": issue 40).
	excused := func(g *group, open bool) bool {
		return open && len(o.Rates) > 0 && !o.MustNotSaturate && g.onlySaturated()
	}
	for _, id := range a.configs {
		open := a.cfgs[id].Open()
		base := a.groups[id][r.Baseline]
		for _, c := range r.Commits {
			g := a.groups[id][c]
			if g == nil {
				g = &group{usable: map[int]*results.Record{}}
			}
			why := groupWhy(g)
			if excused(g, open) {
				why = ""
			}
			if c != r.Baseline && why == "" && base != nil && !excused(base, open) {
				if bw := groupWhy(base); bw != "" {
					why = "baseline " + bw
				}
			}
			if open && c != r.Baseline && base != nil && g.saturated > base.saturated {
				a.saturationRate(c, id, g, base)
			}
			if why == "" {
				continue
			}
			if !open && (g.saturated > 0 || base != nil && base.saturated > 0) {
				why += "; a closed loop (no -R) has no rate to fall behind: a cell marked saturated there is invalid"
			}
			if a.cellWhy[id] == nil {
				a.cellWhy[id] = map[string]string{}
			}
			a.cellWhy[id][c] = why
			r.Incomplete = append(r.Incomplete, Incomplete{Commit: c, Config: id, Usable: len(g.usable), Planned: g.planned, Why: why, Gated: true})
		}
	}
}

// saturationRate compares how often commit c saturated in configuration
// id with how often the baseline did, as a rate (Fisher's exact test of
// saturated cells out of planned ones): a regression only when the
// difference is beyond chance at the run's α shared by the
// configurations. One cell of three that stalled for a few seconds
// (issue 40: an A/A sweep exited 1 on "saturated in 1 of 3 cells") is
// said in a warning, not called a change.
func (a *analyzer) saturationRate(c, id string, g, base *group) {
	r := a.r
	p := fisherTwoSided(int64(base.saturated), int64(max(base.planned, 1)), int64(g.saturated), int64(max(g.planned, 1)))
	what := fmt.Sprintf("saturated in %d of %d cells where %s did in %d of %d (Fisher p %.2g)", g.saturated, g.planned, r.Baseline, base.saturated, base.planned, p)
	if p < a.o.Alpha/float64(max(len(a.configs), 1)) {
		r.Regressions = append(r.Regressions, Change{Commit: c, Config: id, Metric: "rate", DeltaPct: math.NaN(), P: p, Verdict: results.Worse, Gated: true, Note: what})
		return
	}
	r.Warnings = append(r.Warnings, fmt.Sprintf("%s %s: %s: within chance at this number of cells, not called a change", c, id, what))
}

// measureTiers gives each metric its tier, pooled over the
// configurations' baseline repeats, and its bar in each configuration:
// the threshold (--threshold, or the metric's own), which noise never
// widens unless the user asks for it (BarAuto). A bar the noise widened
// to ±9–14 % on a noisy VM called a real −5 % same and exited 0 in
// 38–47 % of resampled runs (issue 40); at the user's bar such an
// interval is unknown, and the run says what would answer it.
func (a *analyzer) measureTiers() {
	p, r, o := a.p, a.r, a.o
	a.tiers = map[string]Tier{}
	a.minEffect = map[string]map[string]float64{}
	a.aroundZero = map[string]map[string]bool{}
	a.primaryOnly = map[string]bool{}
	for _, m := range r.Metrics {
		def, _ := p.Metrics.Get(m)
		th := a.threshold(m)
		var spreads []float64
		a.minEffect[m] = map[string]float64{}
		a.aroundZero[m] = map[string]bool{}
		for _, id := range a.configs {
			a.minEffect[m][id] = th
			if len(a.values(a.groups[id][r.Baseline], m)) < 2 {
				continue
			}
			s := a.column(a.groups[id][r.Baseline], m).spread
			spreads = append(spreads, s)
			a.aroundZero[m][id] = math.IsInf(s, 1)
			if o.Bar == BarAuto {
				a.minEffect[m][id] = math.Max(th, noiseK*s)
			}
		}
		forced := slices.Contains(o.Gate, m) || slices.Contains(o.Primary, m)
		t := measureTier(def, forced, th, spreads, o.Bar)
		if n := a.primaryIn(m); n > 0 && !t.Gated && !forced {
			// A primary always gates where it is one (latency_p99_ms
			// is declared report-only): judged there as a forced
			// metric is, reported in the other configurations.
			why := t.Why
			t = measureTier(def, true, th, spreads, o.Bar)
			t.Why = fmt.Sprintf("gated as the primary of %d configuration(s), reported in the others (%s); %s", n, why, t.Why)
			a.primaryOnly[m] = true
		}
		if t.Tier == results.TierExact {
			// A counter's bar is its threshold: a varying baseline is
			// weighed by its range (measureRange) in the commit's
			// family (one failed transaction in a
			// baseline cell made failed_tx's noise bar infinite, and 5 000
			// failures a cell passed).
			for id := range a.minEffect[m] {
				a.minEffect[m][id] = th
			}
		}
		a.tiers[m] = t
		r.Tiers = append(r.Tiers, t)
	}
}

// threshold is a metric's threshold in percent: --threshold's, or its
// declaration's.
func (a *analyzer) threshold(m string) float64 {
	if v, ok := a.o.Thresholds[m]; ok {
		return v
	}
	def, _ := a.p.Metrics.Get(m)
	return def.ThresholdPct
}

// measureTier decides a metric's tier from the baseline's repeats in
// every configuration, pooled by the median of the configurations'
// spreads: one noisy configuration (churn's 10.9 %) no longer decides for
// all, and a median over many configurations holds still from run to
// run where the maximum flipped.
func measureTier(def results.Metric, forced bool, th float64, spreads []float64, bar Bar) Tier {
	t := Tier{Metric: def.Name, ThresholdPct: th, Gated: true}
	finite := spreads[:0:0]
	for _, s := range spreads {
		if !math.IsInf(s, 0) {
			finite = append(finite, s)
		}
	}
	if len(finite) > 0 {
		t.SpreadPct = Median(finite)
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
	case len(finite) == 0:
		t.Tier, t.Gated = results.TierReport, false
		t.Why = fmt.Sprintf("too noisy for any verdict: the baseline varied around a median of 0 in every one of %d configurations", len(spreads))
	default:
		// Noise costs power (and, under --bar auto, raises the bar); it
		// never switches the gate off: a cutoff on the measured spread
		// flipped latency_p95's tier in 10 of 30 runs of one design. A
		// configuration where the baseline varies around 0 is reported,
		// not gated, there (planStat), and does not decide the tier.
		t.Tier = results.TierBand
		t.Why = fmt.Sprintf("median spread %s over %d configurations; the bar is ±%.3g%%: where the interval does not fit it, unknown", pctAbs(t.SpreadPct), len(finite), th)
		if bar == BarAuto {
			t.Why = fmt.Sprintf("median spread %s over %d configurations; the bar in each is max(%.3g%%, %.2g × its spread) (--bar auto)", pctAbs(t.SpreadPct), len(finite), th, noiseK)
		}
		if n := len(spreads) - len(finite); n > 0 {
			t.Why += fmt.Sprintf("; reported, not gated, in the %d where the baseline varied around 0", n)
		}
	}
	return t
}

// finish lists the undecided configurations, orders the incomplete and
// the changes, and adds the geometric means, the A/A note and the
// profiles.
func (a *analyzer) finish() {
	r := a.r
	for _, id := range a.configs {
		if a.undecided[id] {
			r.undecided = append(r.undecided, id)
		}
	}
	sort.SliceStable(r.Incomplete, func(i, j int) bool { return r.Incomplete[i].Commit < r.Incomplete[j].Commit })
	sort.SliceStable(r.Changes, func(i, j int) bool { return changeFirst(r.Changes[i], r.Changes[j]) })
	r.aa()
	r.WaitShifts = r.waitShifts()
	r.Sweeps = sweeps(a.p, a.in.Records)
	r.Conditions = underConditions(a.p, a.in.Records)
	r.servers, r.ServerDiffs = a.in.Servers, serverDiffs(r.Commits, a.in.Servers)
	r.Warnings = append(r.Warnings, serverWarnings(r.ServerDiffs, r.Commits)...)
	if a.p.Options.Perf {
		r.profiles(r.Baseline)
	}
	r.instructions()
}

// changeFirst orders the called changes as a reader asks for them: the
// gated first, then the most significant (an exact comparison, with no
// p, as certain), then the largest.
func changeFirst(a, b Change) bool {
	if a.Gated != b.Gated {
		return a.Gated
	}
	pa, pb := a.P, b.P
	if math.IsNaN(pa) {
		pa = 0
	}
	if math.IsNaN(pb) {
		pb = 0
	}
	if pa != pb {
		return pa < pb
	}
	return math.Abs(a.DeltaPct) > math.Abs(b.DeltaPct)
}

// spreadSorted is a robust coefficient of variation in percent: the median
// absolute deviation scaled to a standard deviation, over the median; the
// relative range for fewer than 4 values; of values sorted (s), *dev a
// buffer for the deviations.
func spreadSorted(s []float64, dev *[]float64) float64 {
	med := Median(s)
	if med == 0 {
		if s[0] == s[len(s)-1] {
			return 0
		}
		return math.Inf(1)
	}
	if len(s) < 4 {
		return 100 * (s[len(s)-1] - s[0]) / math.Abs(med)
	}
	d := (*dev)[:0]
	for _, v := range s {
		d = append(d, math.Abs(v-med))
	}
	*dev = d
	sort.Float64s(d)
	mad := Median(d)
	if mad == 0 && s[0] != s[len(s)-1] {
		return 100 * (s[len(s)-1] - s[0]) / math.Abs(med) / 4
	}
	return 100 * 1.4826 * mad / math.Abs(med)
}

// Median is the median of s, in any order, NaN for none: unsorted
// values are sorted in a copy (the conditions' tables once showed the
// middle cell in record order as a median: issue 40). Sorted input costs
// one pass to check. The console's summaries use it too: one median.
func Median(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if !slices.IsSorted(s) {
		s = slices.Sorted(slices.Values(s))
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
