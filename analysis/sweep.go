package analysis

// Sweeps (seed 000): the configurations that differ only in their
// offered rate and pgbench variables form a series; each is a point,
// reported per commit in the seed's shape — offered and committed per
// second, latency percentiles, saturation and probes per operation —
// saturated points included, marked, never dropped.
//
// An operation is what the user counts: where the workload's file says
// how many one transaction carries (-- abtest:ops-per-tx :batch), rates
// are in operations a second and the per-transaction probes are divided
// by the point's count (a batch of 10 updating 10 rows is 1 update per
// operation), with the per-transaction figure beside it; elsewhere an
// operation is a transaction.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// Sweep is one series of points.
type Sweep struct {
	// Series is the id of the configuration without rate and variables.
	Series string `json:"series"`
	// OpsPerTx is what its workload declares an operation to be
	// (-- abtest:ops-per-tx, ":batch" or a number); empty: a
	// transaction.
	OpsPerTx string       `json:"ops_per_tx,omitempty"`
	Points   []SweepPoint `json:"points"`
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
	// OfferedTPS is the rate pgbench was offered, in transactions a
	// second (0: a closed loop); OfferedOps the point's rate in the
	// workload's operations a second, OpsPerTx the operations one of its
	// transactions carries (1 where the workload declares none).
	OfferedTPS float64 `json:"offered_tps"`
	OfferedOps float64 `json:"offered_ops"`
	OpsPerTx   float64 `json:"ops_per_tx"`
	// Cells and Saturated count the commit's ok cells and the saturated
	// ones among them.
	Cells     int `json:"cells"`
	Saturated int `json:"saturated"`
	// Medians of the point's metrics as recorded, per transaction
	// (committed/s is tps): PerOp divides by OpsPerTx.
	Medians map[string]float64 `json:"medians"`
}

// sweepColumns are a point table's columns after point, commit and
// offered/s: a heading and its metric (committed/s is tps), in seed
// 000's order; a column no point has is left out. The per-transaction
// ones (perTx) are shown per operation.
var sweepColumns = []metricColumn{
	{"committed/s", results.MetricTPS, perRate}, {"p50 ms", results.MetricLatencyP50, perNone}, {"p95 ms", results.MetricLatencyP95, perNone}, {"p99 ms", results.MetricLatencyP99, perNone},
	{"backlog s", results.MetricBacklog, perNone}, {"ins/op", results.MetricTupInsPerTx, perTx}, {"upd/op", results.MetricTupUpdPerTx, perTx},
	{"WAL rec/op", results.MetricWALRecordsPerTx, perTx}, {"WAL B/op", results.MetricWALBytesPerTx, perTx}, {"FPI/op", results.MetricWALFPIPerTx, perTx},
	{"HOT %", results.MetricHOTUpdatePct, perNone}, {"dead/op", results.MetricDeadTupPerTx, perTx}, {"autovacuums", results.MetricAutovacuumRuns, perNone},
	{"index +B", results.MetricIndexGrowth, perNone}, {"oldest xmin age", results.MetricOldestXminAge, perNone},
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
			series[id] = &Sweep{Series: id, OpsPerTx: p.Options.Declares[rec.Workload].OpsPerTx}
			order = append(order, id)
		}
		k := key{rec.Config.ID(), rec.Commit}
		if byPoint[k] == nil {
			o := &p.Options
			series[id].Points = append(series[id].Points, SweepPoint{Config: k.config, Point: rec.Config.Point(), Vars: rec.Config.VarsLabel(), Commit: rec.Commit,
				OfferedTPS: o.TxRate(rec.Config), OfferedOps: o.OpsRate(rec.Config), OpsPerTx: o.OpsPerTx(rec.Config)})
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
			return cmp.Or(strings.Compare(a.Vars, b.Vars), cmp.Compare(a.OfferedOps, b.OfferedOps), commitOrder(p, a.Commit, b.Commit))
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

// sweepBlocks are a point table per series; brief: offered and
// committed per second, p99 latency and saturation within 80 columns.
func (r *Report) sweepBlocks(brief bool) []Block {
	var s sect
	for _, sw := range r.Sweeps {
		if brief {
			s.add(sw.briefBlocks(r.shownConfig(sw.Series))...)
			continue
		}
		s.heading(2, "Sweep: "+r.shownConfig(sw.Series))
		s.text(fmt.Sprintf("One row per point and commit: medians over its cells, %s. A saturated point could not keep its offered rate (its backlog passed the bound, or it committed clearly less than offered); it is reported, not judged. dead/op is the median of the cells no autovacuum ran in (a vacuum in the window removes dead tuples: – where it ran in every cell).", sw.perOpSays()))
		var cols []int
		for i, col := range sweepColumns {
			if slices.ContainsFunc(sw.Points, func(pt SweepPoint) bool { _, ok := pt.Medians[col.metric]; return ok }) {
				cols = append(cols, i)
			}
		}
		t := &Table{Head: []string{"point", "commit", sw.rateHead("offered")}, Right: []bool{false, false, true}}
		for _, i := range cols {
			head := sweepColumns[i].head
			if sweepColumns[i].per == perRate {
				head = sw.rateHead("committed")
			}
			t.Head, t.Right = append(t.Head, head), append(t.Right, true)
		}
		t.Head = append(t.Head, "saturated")
		for _, pt := range sw.Points {
			line := cells(pt.Point, pt.Commit, pt.offered())
			for _, i := range cols {
				line = append(line, txt(pt.cellOf(sweepColumns[i])))
			}
			sat := txt("no")
			if pt.Saturated > 0 {
				sat.Text = Inline{strong("yes"), {Text: fmt.Sprintf(" (%d of %d)", pt.Saturated, pt.Cells)}}
			}
			t.Rows = append(t.Rows, append(line, sat))
		}
		s.add(t)
	}
	return s
}

// briefBlocks are the sweep's points in 80 columns.
func (s Sweep) briefBlocks(name string) []Block {
	out := sect{&Heading{2, "Sweep " + name}}
	if s.OpsPerTx != "" {
		out.text(fmt.Sprintf("Rates in operations a second (-- abtest:ops-per-tx %s).", s.OpsPerTx))
	}
	t := &Table{Head: []string{"point", "commit", "offered/s", "committed/s", "p99 ms", "saturated"}, Right: []bool{false, false, true, true, true}}
	for _, pt := range s.Points {
		offered, sat := "closed", "no"
		if pt.OfferedOps > 0 {
			offered = results.FormatRate(pt.OfferedOps)
		}
		if pt.Saturated > 0 {
			sat = fmt.Sprintf("YES %d/%d", pt.Saturated, pt.Cells)
		}
		committed := "–"
		if v, ok := pt.Medians[results.MetricTPS]; ok {
			committed = num(v * pt.opsPerTx())
		}
		t.Rows = append(t.Rows, cells(pt.Point, pt.Commit, offered, committed, pt.cellOf(metricColumn{metric: results.MetricLatencyP99}), sat))
	}
	out.add(t)
	return out
}

// perOpSays says what "/op" means in s's table.
func (s Sweep) perOpSays() string {
	if s.OpsPerTx == "" {
		return "per operation (transaction) where it says /op"
	}
	return fmt.Sprintf("rates in operations a second and /op per operation, as the workload counts them (-- abtest:ops-per-tx %s: each transaction carries that many); where a transaction carries more than one, the rate in transactions and the figure per transaction follow in brackets", s.OpsPerTx)
}

// rateHead is the heading of s's offered or committed rate.
func (s Sweep) rateHead(what string) string {
	if s.OpsPerTx == "" {
		return what + "/s"
	}
	return what + " ops/s"
}

// rateAxis names the offered rate on a plot's axis.
func (s Sweep) rateAxis() string {
	if s.OpsPerTx == "" {
		return "offered transactions/s"
	}
	return "offered operations/s (-- abtest:ops-per-tx " + s.OpsPerTx + ")"
}

// offered is the point's offered rate, in operations and, where they
// differ, in transactions.
func (pt SweepPoint) offered() string {
	if pt.OfferedOps <= 0 {
		return "closed"
	}
	return pt.twoWays(pt.OfferedOps, pt.OfferedTPS, " tx")
}

// twoWays is perOp, and perTx in brackets (with unit) where a
// transaction carries other than one operation.
func (pt SweepPoint) twoWays(perOp, perTx float64, unit string) string {
	if pt.OpsPerTx == 1 || pt.OpsPerTx == 0 || num(perOp) == num(perTx) {
		return num(perOp) // 0 is 0 either way
	}
	return fmt.Sprintf("%s (%s%s)", num(perOp), num(perTx), unit)
}

// cellOf is the point's median of column c, per operation where the
// metric counts per transaction, or a dash.
func (pt SweepPoint) cellOf(c metricColumn) string {
	v, ok := pt.Medians[c.metric]
	switch {
	case !ok:
		return "–"
	case c.per == perRate:
		return pt.twoWays(v*pt.opsPerTx(), v, " tx")
	case c.per == perTx:
		return pt.twoWays(v/pt.opsPerTx(), v, "/tx")
	}
	return num(v)
}

// PerOp is the point's median of a per-transaction metric per
// operation (the metric as recorded where a transaction is one).
func (pt SweepPoint) PerOp(metric string) (float64, bool) {
	v, ok := pt.Medians[metric]
	return v / pt.opsPerTx(), ok
}

// opsPerTx is OpsPerTx, 1 in a report of an earlier version.
func (pt SweepPoint) opsPerTx() float64 {
	if pt.OpsPerTx > 0 {
		return pt.OpsPerTx
	}
	return 1
}
