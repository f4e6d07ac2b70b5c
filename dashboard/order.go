package dashboard

import (
	"cmp"
	"math"
	"slices"

	"github.com/pgabtest/abtest/analysis"
)

// primaries are the metrics a run answers by first: those of its
// run-level pooled tests (the primary's), then the analysis' default
// primaries (tps, instructions per transaction).
func (d *runData) primaries() []string {
	var out []string
	if d.report != nil {
		gs := slices.SortedStableFunc(slices.Values(d.report.Geomeans), func(a, b analysis.Geomean) int {
			return cmp.Or(cmp.Compare(a.Commit, b.Commit), cmp.Compare(a.Metric, b.Metric))
		})
		for _, g := range gs {
			if !slices.Contains(out, g.Metric) {
				out = append(out, g.Metric)
			}
		}
	}
	for _, m := range analysis.DefaultPrimary {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// tableRank is where a configuration page lists a metric: the primary
// first, then the called changes (gated ones first), the unknowns whose
// interval excludes 0, the other metrics that vary, and the constants
// (0 vs 0) last.
func tableRank(t metricTable, primaries []string) (rank, primary int, size float64) {
	primary = len(primaries)
	if i := slices.Index(primaries, t.Metric); i >= 0 {
		primary = i
	}
	rank = 4
	for _, v := range t.Verdicts {
		switch {
		case significant(v.Verdict.Verdict) && v.Gated:
			rank = min(rank, 1)
		case significant(v.Verdict.Verdict):
			rank = min(rank, 2)
		case v.Shown():
			rank = min(rank, 3)
		}
		if v.DeltaPct != nil {
			size = max(size, math.Abs(*v.DeltaPct))
		}
	}
	switch {
	case primary < len(primaries):
		rank = 0
	case t.Constant:
		rank = 5
	}
	return rank, primary, size
}

// orderTables sorts a configuration page's metrics by tableRank, within
// a rank the primaries in their order, then the bigger changes first,
// then by name.
func (d *runData) orderTables(tables []metricTable) {
	primaries := d.primaries()
	slices.SortStableFunc(tables, func(a, b metricTable) int {
		ra, pa, sa := tableRank(a, primaries)
		rb, pb, sb := tableRank(b, primaries)
		if c := cmp.Compare(ra, rb); c != 0 {
			return c
		}
		if c := cmp.Compare(pa, pb); c != 0 {
			return c
		}
		if ra >= 1 && ra <= 3 {
			if c := cmp.Compare(sb, sa); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Metric, b.Metric)
	})
}
