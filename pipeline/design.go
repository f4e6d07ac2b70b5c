package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/doctor"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// designLine says what the noise of this host's newest run (under the
// directory that holds dir) asks of plan: the cell length and repeats
// that bring the run-level interval within the primary's bar soonest
// (analysis.DesignFor), beside the plan's own. "" when no earlier run
// measured any of plan's configurations.
func designLine(plan *results.Plan, dir string, o analysis.Options) string {
	last, err := doctor.NewestRun(filepath.Dir(dir))
	if err != nil || last == "" || filepath.Clean(last) == filepath.Clean(dir) {
		return ""
	}
	p, err := results.ReadPlan(last)
	if err != nil {
		return ""
	}
	recs, _, err := results.ReadRecords(last)
	if err != nil {
		return ""
	}
	var ids []string
	for _, c := range plan.Configs {
		ids = append(ids, c.ID())
	}
	var comps []analysis.Components
	for _, c := range analysis.NoiseOf(p, recs) {
		if slices.Contains(ids, c.Config) {
			comps = append(comps, c)
		}
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
	if !ok {
		return ""
	}
	return fmt.Sprintf("design: this host's noise (run %s, %s of this plan) answers ±%g%% soonest with %gs cells × r %d, about %.0f min of cells; this plan: %gs × r %d",
		filepath.Base(last), text.Count(len(comps), "configuration"), bar, d.Seconds, d.Repeats, d.Minutes, plan.Options.DurationS, plan.Options.Repeats)
}
