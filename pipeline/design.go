package pipeline

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/doctor"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// hostDesign is what the noise of this host's newest runs (under the
// directory that holds dir; up to designRuns of them that measured
// plan's configurations, pooled: analysis.PoolComponents) asks of
// plan: the cell length and repeats that answer the run-level question
// at the primary's bar soonest (analysis.DesignFor), the runs it was
// measured in, and how many of plan's configurations they measured.
// ok is false when they measured none of them.
type hostDesign struct {
	analysis.RunDesign
	run     string
	matched int
	bar     float64
	// df is the fewest degrees of freedom of a matched configuration's
	// paired spread: what the design's noise estimate rests on.
	df int
}

func designFor(plan *results.Plan, dir string, o analysis.Options) (hostDesign, bool) {
	runs, err := doctor.NewestRuns(filepath.Dir(dir), designRuns+1)
	if err != nil {
		return hostDesign{}, false
	}
	var ids []string
	for _, c := range plan.Configs {
		ids = append(ids, c.ID())
	}
	var measured [][]analysis.Components
	var names []string
	for _, run := range runs {
		if filepath.Clean(run) == filepath.Clean(dir) || len(measured) == designRuns {
			continue
		}
		if comps := runNoise(run, ids); len(comps) > 0 {
			measured = append(measured, comps)
			names = append(names, filepath.Base(run))
		}
	}
	if len(measured) == 0 {
		return hostDesign{}, false
	}
	comps := analysis.PoolComponents(measured)
	df := math.MaxInt
	for _, c := range comps {
		df = min(df, c.Paired.DF)
	}
	name := names[0]
	if len(names) > 1 {
		name += fmt.Sprintf(" and %s before it", text.Count(len(names)-1, "run"))
	}
	bar := 2.0
	if def, ok := plan.Metrics.Get(results.MetricTPS); ok {
		bar = def.ThresholdPct
	}
	if th, ok := o.Thresholds[results.MetricTPS]; ok {
		bar = th
	}
	alpha := o.Alpha
	if alpha == 0 {
		alpha = 0.01
	}
	overhead := plan.Options.WarmupS + matrix.Overhead.Seconds()
	d, ok := analysis.DesignFor(comps, bar, alpha, overhead, len(plan.Commits))
	return hostDesign{RunDesign: d, run: name, matched: len(comps), bar: bar, df: df}, ok
}

// designRuns is how many of this host's newest runs a design pools.
const designRuns = 5

// runNoise is the variance components of the configurations ids that
// the run in dir measured; none when it does not read.
func runNoise(dir string, ids []string) []analysis.Components {
	p, err := results.ReadPlan(dir)
	if err != nil {
		return nil
	}
	recs, _, err := results.ReadRecordsNoProgress(dir) // NoiseOf reads the TPS spread kept in place of the reports
	if err != nil {
		return nil
	}
	var comps []analysis.Components
	for _, c := range analysis.NoiseOf(p, recs) {
		if slices.Contains(ids, c.Config) {
			comps = append(comps, c)
		}
	}
	return comps
}

// designLine says what this host's noise asks of plan beside the plan's
// own cell length and repeats; "" when no earlier run measured any of
// plan's configurations, and the chosen design when Prepare chose it.
func designLine(plan *results.Plan, dir string, o analysis.Options) string {
	if plan.Options.Design != "" {
		return "design: " + plan.Options.Design
	}
	d, ok := designFor(plan, dir, o)
	if !ok {
		return ""
	}
	line := fmt.Sprintf("design: this host's noise (run %s, %s of this plan) answers ±%g%% soonest with %gs cells × r %d, about %.0f min of cells; this plan: %gs × r %d",
		d.run, text.Count(d.matched, "configuration"), d.bar, d.Seconds, d.Repeats, d.Minutes, plan.Options.DurationS, plan.Options.Repeats)
	// Why a run without -d and -r does not take it (designed).
	switch {
	case d.df < designMinDF:
		line += fmt.Sprintf(" (from fewer than %d blocks: not chosen without -d and -r)", designMinDF+1)
	case d.Minutes > designMaxMinutes:
		line += fmt.Sprintf(" (over %g min: not chosen without -d and -r)", designMaxMinutes)
	}
	return line
}

// Bounds of a design Prepare chooses on its own: outside them the
// design is only printed and the defaults stay.
const (
	designMinSeconds = 2 // one second has no within-cell spread to measure
	designMaxRepeats = 500
	// designMinDF: a spread from fewer blocks than 6 is too uncertain
	// to size a run by (its 95 % interval spans more than 2×).
	designMinDF = 5
)

// designMaxMinutes bounds the cells' time of a chosen design (a var for
// the test: the recorded demo run's noise asks for 106 min).
var designMaxMinutes = 60.0

// designed is plan with the cell length and repeats this host's noise
// asks for, when the user gave neither (matrix.Request.Designable) and
// the design is safe to choose: the newest runs of this host measured
// every configuration of plan, in at least 6 blocks each, with tps as
// their primary, and the design stays within the bounds above. With
// --until-decided the design's repeats are the planned ones (the one
// look that answers 9 runs in 10), and the looks after them are
// --until-decided's (up to --max-repeats, twice the design's by
// default) for the configurations still undecided. Otherwise plan
// itself.
func designed(ctx context.Context, deps *matrix.Deps, req matrix.Request, plan *results.Plan, dir string) (*results.Plan, error) {
	o := plan.Options
	if !req.Designable || o.InstructionsOnly || slices.ContainsFunc(o.Rates, func(r float64) bool { return r > 0 }) {
		return plan, nil
	}
	d, ok := designFor(plan, dir, analysis.Options{})
	if !ok || d.matched != len(plan.Configs) || d.df < designMinDF || d.Minutes > designMaxMinutes || d.Repeats > designMaxRepeats {
		return plan, nil
	}
	req.Duration = time.Duration(math.Max(d.Seconds, designMinSeconds)) * time.Second
	req.Repeats = max(d.Repeats, 3)
	if m := req.Adaptive.MaxRepeats; req.Adaptive.UntilDecided && m > 0 {
		req.Repeats = min(req.Repeats, m) // the user's bound holds
	}
	p, err := matrix.Prepare(ctx, deps, req)
	if err != nil {
		return nil, err
	}
	more := ""
	if p.Options.UntilDecided {
		more = fmt.Sprintf(", then blocks of the undecided up to r %d", p.Options.MaxRepeats)
	}
	p.Options.Design = fmt.Sprintf("%gs cells × r %d%s, chosen from this host's noise (run %s) to answer ±%g%% in about %.0f min of cells (-d and -r not given; give either to choose your own)",
		p.Options.DurationS, p.Options.Repeats, more, d.run, d.bar, d.Minutes)
	return p, nil
}
