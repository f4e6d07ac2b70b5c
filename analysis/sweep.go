package analysis

// Sweeps (seed 000): the configurations that differ only in their
// offered rate and pgbench variables form a series; each is a point,
// reported per commit in the seed's shape — offered and committed per
// second, latency percentiles, saturation and probes per operation —
// saturated points included, marked, never dropped.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// Sweep is one series of points.
type Sweep struct {
	// Series is the id of the configuration without rate and variables.
	Series string       `json:"series"`
	Points []SweepPoint `json:"points"`
}

// SweepPoint is one commit at one point: medians over its ok cells,
// saturated ones included.
type SweepPoint struct {
	Config string `json:"config"`
	Point  string `json:"point"`
	// Vars names the point's variables (results.Config.VarsLabel): the
	// points of one line of a plot.
	Vars   string `json:"vars,omitempty"`
	Commit string `json:"commit"`
	// OfferedTPS is the point's offered rate (0: a closed loop).
	OfferedTPS float64 `json:"offered_tps"`
	// Cells and Saturated count the commit's ok cells and the saturated
	// ones among them.
	Cells     int `json:"cells"`
	Saturated int `json:"saturated"`
	// Medians of the point's metrics (committed/s is tps).
	Medians map[string]float64 `json:"medians"`
}

// sweepColumns are a point table's columns after point, commit and
// offered/s: a heading and its metric (committed/s is tps), in seed
// 000's order; a column no point has is left out.
var sweepColumns = []metricColumn{
	{"committed/s", results.MetricTPS}, {"p50 ms", results.MetricLatencyP50}, {"p95 ms", results.MetricLatencyP95}, {"p99 ms", results.MetricLatencyP99},
	{"backlog s", results.MetricBacklog}, {"ins/op", results.MetricTupInsPerTx}, {"upd/op", results.MetricTupUpdPerTx},
	{"WAL rec/op", results.MetricWALRecordsPerTx}, {"WAL B/op", results.MetricWALBytesPerTx}, {"FPI/op", results.MetricWALFPIPerTx},
	{"HOT %", results.MetricHOTUpdatePct}, {"dead/op", results.MetricDeadTupPerTx}, {"autovacuums", results.MetricAutovacuumRuns},
	{"index +B", results.MetricIndexGrowth}, {"oldest xmin age", results.MetricOldestXminAge},
}

// sweeps finds the plan's series of points and summarises each point.
// A plan without rates or variables has none.
func sweeps(p *results.Plan, recs []results.Record) []Sweep {
	if len(p.Options.Rates) == 0 && len(p.Options.Vars) == 0 {
		return nil
	}
	type key struct{ config, commit string }
	byPoint := map[key][]*results.Record{}
	series := map[string]*Sweep{}
	var order []string
	for i := range recs {
		rec := &recs[i]
		if rec.Status != results.StatusOK || rec.Instructions {
			continue
		}
		id := rec.Config.Series().ID()
		if series[id] == nil {
			series[id] = &Sweep{Series: id}
			order = append(order, id)
		}
		k := key{rec.Config.ID(), rec.Commit}
		if byPoint[k] == nil {
			series[id].Points = append(series[id].Points, SweepPoint{Config: k.config, Point: rec.Config.Point(), Vars: rec.Config.VarsLabel(), Commit: rec.Commit, OfferedTPS: rec.Rate})
		}
		byPoint[k] = append(byPoint[k], rec)
	}
	var out []Sweep
	for _, id := range order {
		s := series[id]
		for i := range s.Points {
			pt := &s.Points[i]
			cells := byPoint[key{pt.Config, pt.Commit}]
			pt.Cells, pt.Medians = len(cells), medians(cells, sweepColumns)
			for _, rec := range cells {
				if rec.Saturated {
					pt.Saturated++
				}
			}
		}
		slices.SortStableFunc(s.Points, func(a, b SweepPoint) int {
			return cmp.Or(strings.Compare(a.Vars, b.Vars), cmp.Compare(a.OfferedTPS, b.OfferedTPS), commitOrder(p, a.Commit, b.Commit))
		})
		out = append(out, *s)
	}
	return out
}

func commitOrder(p *results.Plan, a, b string) int {
	ia := slices.IndexFunc(p.Commits, func(c results.Commit) bool { return c.Label == a })
	ib := slices.IndexFunc(p.Commits, func(c results.Commit) bool { return c.Label == b })
	return cmp.Compare(ia, ib)
}

// writeSweeps writes a point table per series (markdown).
func (r *Report) writeSweeps(w io.Writer) {
	for _, s := range r.Sweeps {
		fmt.Fprintf(w, "## Sweep: %s\n\n", mdCell(r.shownConfig(s.Series)))
		fmt.Fprintf(w, "One row per point and commit: medians over its cells, per operation (transaction) where it says /op. A saturated point could not keep its offered rate (its backlog passed the bound, or it committed clearly less than offered); it is reported, not judged.\n\n")
		var cols []int
		for i, col := range sweepColumns {
			if slices.ContainsFunc(s.Points, func(pt SweepPoint) bool { _, ok := pt.Medians[col.metric]; return ok }) {
				cols = append(cols, i)
			}
		}
		fmt.Fprintf(w, "| point | commit | offered/s |")
		for _, i := range cols {
			fmt.Fprintf(w, " %s |", sweepColumns[i].head)
		}
		fmt.Fprintf(w, " saturated |\n|---|---|--:|%s---|\n", strings.Repeat("--:|", len(cols)))
		for _, pt := range s.Points {
			offered := "closed"
			if pt.OfferedTPS > 0 {
				offered = results.FormatRate(pt.OfferedTPS)
			}
			fmt.Fprintf(w, "| %s | %s | %s |", pt.Point, pt.Commit, offered)
			for _, i := range cols {
				fmt.Fprintf(w, " %s |", pt.cell(sweepColumns[i].metric))
			}
			sat := "no"
			if pt.Saturated > 0 {
				sat = fmt.Sprintf("**yes** (%d of %d)", pt.Saturated, pt.Cells)
			}
			fmt.Fprintf(w, " %s |\n", sat)
		}
		fmt.Fprintln(w)
	}
}

// writeSweepsText writes each sweep's points in 80 columns: offered and
// committed per second, p99 latency and saturation.
func (r *Report) writeSweepsText(w io.Writer) {
	for _, s := range r.Sweeps {
		fmt.Fprintf(w, "Sweep %s\n\n", r.shownConfig(s.Series))
		fmt.Fprintf(w, "  %-22s %-10s %10s %11s %9s  %s\n", "point", "commit", "offered/s", "committed/s", "p99 ms", "saturated")
		for _, pt := range s.Points {
			offered, sat := "closed", "no"
			if pt.OfferedTPS > 0 {
				offered = results.FormatRate(pt.OfferedTPS)
			}
			if pt.Saturated > 0 {
				sat = fmt.Sprintf("YES %d/%d", pt.Saturated, pt.Cells)
			}
			fmt.Fprintf(w, "  %-22.22s %-10.10s %10s %11s %9s  %s\n", pt.Point, pt.Commit, offered, pt.cell(results.MetricTPS), pt.cell(results.MetricLatencyP99), sat)
		}
		fmt.Fprintln(w)
	}
}

// cell is a point's median of m, or a dash.
func (pt SweepPoint) cell(m string) string {
	v, ok := pt.Medians[m]
	if !ok {
		return "–"
	}
	return num(v)
}
