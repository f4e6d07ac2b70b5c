package analysis

// Conditions (matrix --condition): each configuration held under a
// condition beside the same configuration without one, per commit —
// what the condition reached (the xmin age the holder's snapshot got to,
// the WAL an idle slot retained, the checkpoints forced, the rows the
// updater wrote) and what it did to the probes that explain it, and to
// the workload's own measure: its declared primary, else the first
// metric it declares, else pgbench's p99 latency (of ticker.sql's
// INSERT, seed 002 showed, which says nothing of its delivery). Rates
// and probes per operation count the workload's operations where its
// file declares them, as the sweep's table does.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// UnderCondition is one commit's configuration under a condition.
type UnderCondition struct {
	Condition string `json:"condition"`
	Config    string `json:"config"`
	// Without is the same configuration without a condition, when the
	// plan has it.
	Without string `json:"without,omitempty"`
	Commit  string `json:"commit"`
	Cells   int    `json:"cells"`
	// Metric is the workload's own measure in the table (in Medians);
	// OpsPerTx the operations one transaction carries (1 without a
	// declaration): the per-transaction medians are divided by it.
	Metric   string  `json:"metric"`
	OpsPerTx float64 `json:"ops_per_tx"`
	// Reached are the medians of what the condition reached
	// (results.Record.ConditionFacts).
	Reached map[string]float64 `json:"reached"`
	// Medians and WithoutMedians are conditionMetrics' medians under the
	// condition and without it.
	Medians        map[string]float64 `json:"medians"`
	WithoutMedians map[string]float64 `json:"without_medians,omitempty"`
}

// conditionMetrics are the probes a condition shows in, beside it; the
// workload's own measure (UnderCondition.Metric) comes after the rate.
var conditionMetrics = []metricColumn{
	{"committed/s", results.MetricTPS, perRate}, {"oldest xmin age", results.MetricOldestXminAge, perNone},
	{"dead tuples +", results.MetricDeadTupGrowth, perNone}, {"dead/op", results.MetricDeadTupPerTx, perTx}, {"HOT %", results.MetricHOTUpdatePct, perNone},
	{"WAL B/op", results.MetricWALBytesPerTx, perTx},
}

// perKind says how a column's metric goes with the workload's
// operations.
type perKind int

const (
	perNone perKind = iota
	// perTx is a count per transaction: divided by the operations one
	// transaction carries, it is per operation.
	perTx
	// perRate is transactions a second: multiplied by them, operations.
	perRate
)

// underConditions summarises the ok cells of every configuration with a
// condition, and of the same configuration without one.
func underConditions(p *results.Plan, recs []results.Record) []UnderCondition {
	if len(p.Options.Conditions) == 0 {
		return nil
	}
	type key struct{ config, commit string }
	cells := map[key][]*results.Record{}
	var order []key
	for i := range recs {
		rec := &recs[i]
		if rec.Status != results.StatusOK {
			continue
		}
		k := key{rec.Config.ID(), rec.Commit}
		if cells[k] == nil && rec.Condition != "" {
			order = append(order, k)
		}
		cells[k] = append(cells[k], rec)
	}
	var out []UnderCondition
	for _, k := range order {
		first := cells[k][0]
		without := first.Config
		without.Condition = ""
		metric := workloadMetric(p, first.Workload, cells[k])
		cols := append(slices.Clone(conditionMetrics), metricColumn{metric: metric})
		u := UnderCondition{Condition: first.Condition, Config: k.config, Commit: k.commit, Cells: len(cells[k]),
			Metric: metric, OpsPerTx: p.Options.OpsPerTx(first.Config),
			Reached: factMedians(cells[k]), Medians: medians(cells[k], cols)}
		if w := cells[key{without.ID(), k.commit}]; len(w) > 0 {
			u.Without, u.WithoutMedians = without.ID(), medians(w, cols)
		}
		out = append(out, u)
	}
	return out
}

// medians are the cells' medians of the columns' metrics (a void value
// left out; a metric no cell has, absent).
func medians(cells []*results.Record, columns []metricColumn) map[string]float64 {
	out := map[string]float64{}
	for _, c := range columns {
		var vs []float64
		for _, rec := range cells {
			if slices.Contains(unvacuumed, c.metric) && rec.Metrics.Value(results.MetricAutovacuumRuns) > 0 {
				continue
			}
			if v, ok := rec.Metrics.Get(c.metric); ok && rec.Void[c.metric] == "" {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			out[c.metric] = Median(vs)
		}
	}
	return out
}

// workloadMetric is what a workload measures of itself: the primary
// its file declares, else the first metric of the plan's definitions
// not abtest's own that its cells have, else pgbench's p99 latency.
func workloadMetric(p *results.Plan, workload string, cells []*results.Record) string {
	if m := p.Options.Declares[workload].Primary; m != "" {
		return m
	}
	for _, m := range p.Metrics {
		if _, builtin := results.Builtin.Get(m.Name); builtin {
			continue
		}
		if slices.ContainsFunc(cells, func(rec *results.Record) bool { _, ok := rec.Metrics.Get(m.Name); return ok }) {
			return m.Name
		}
	}
	return results.MetricLatencyP99
}

// metricColumn is a column of a table: its heading, the metric it shows
// and how that goes with the workload's operations.
type metricColumn struct {
	head, metric string
	per          perKind
}

// unvacuumed are the metrics a table takes from the cells no autovacuum
// ran in: the dead tuples' growth is the dead tuples a window made only
// where nothing removed any (a heartbeat cell whose window an
// autovacuum ran in showed −16 dead tuples a ping, the others exactly 1).
var unvacuumed = []string{results.MetricDeadTupPerTx, results.MetricDeadTupGrowth}

// factMedians are the medians of what the condition reached.
func factMedians(cells []*results.Record) map[string]float64 {
	by := map[string][]float64{}
	for _, rec := range cells {
		for k, v := range rec.ConditionFacts {
			by[k] = append(by[k], v)
		}
	}
	out := map[string]float64{}
	for k, vs := range by {
		out[k] = Median(vs)
	}
	return out
}

// conditionBlocks are the conditions' table; brief: each configuration
// under its condition in 80 columns, what the condition reached and the
// probes beside the same configuration without it.
func (r *Report) conditionBlocks(brief bool) []Block {
	if len(r.Conditions) == 0 {
		return nil
	}
	if brief {
		var items []Item
		for _, u := range r.Conditions {
			var probes []string
			for _, c := range append([]metricColumn{conditionMetrics[0], {head: measureName(u.Metric), metric: u.Metric}}, conditionMetrics[1:]...) {
				if v := u.pair(c); v != "–" {
					probes = append(probes, c.head+" "+strings.ReplaceAll(v, "→", "->"))
				}
			}
			items = append(items, Item{Text: plain(fmt.Sprintf("%s, %s, %s:", u.Condition, u.Commit, r.shownConfig(u.Config))),
				Sub: []Item{{Text: plain("reached: " + strings.Join(u.reached(), ", "))}, {Text: plain(strings.Join(probes, "; "))}}})
		}
		return []Block{&Heading{2, "Under conditions (without -> under)"}, &List{items}}
	}
	intro := Inline{{Text: "Each configuration under its condition, beside the same configuration without one (without → under), medians over the commit's cells. "},
		{Text: "reached", Em: true}, {Text: " is what the condition held by the end of the window; "}, {Text: "its measure", Em: true},
		{Text: " the workload's own (its declared primary, else a metric it declares, else pgbench's p99 latency). committed/s and /op count the workload's operations where its file declares them (-- abtest:ops-per-tx), the figure per transaction in brackets where a transaction carries more than one; transactions otherwise. Dead tuples are the medians of the cells no autovacuum ran in."}}
	t := &Table{Head: []string{"condition", "configuration", "commit", "reached", conditionMetrics[0].head, "its measure"}, Right: []bool{false, false, false, false, true, true}}
	for _, c := range conditionMetrics[1:] {
		t.Head, t.Right = append(t.Head, c.head), append(t.Right, true)
	}
	for _, u := range r.Conditions {
		line := cells(u.Condition, r.shownConfig(u.Config), u.Commit, strings.Join(u.reached(), ", "), u.pair(conditionMetrics[0]), measureName(u.Metric)+" "+u.pair(metricColumn{metric: u.Metric}))
		for _, c := range conditionMetrics[1:] {
			line = append(line, txt(u.pair(c)))
		}
		t.Rows = append(t.Rows, line)
	}
	return []Block{&Heading{2, "Under conditions"}, &Paragraph{intro}, t}
}

// measureName names a workload's measure in a cell.
func measureName(m string) string {
	if m == results.MetricLatencyP99 {
		return "p99 ms"
	}
	return m
}

// reached says what the condition reached, by name.
func (u UnderCondition) reached() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(u.Reached)) {
		out = append(out, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), num(u.Reached[k])))
	}
	return out
}

// pair is "without → under" of column c, per operation where it counts
// per transaction (and per transaction in brackets where they differ),
// or what there is of it.
func (u UnderCondition) pair(c metricColumn) string {
	under, ok := u.Medians[c.metric]
	if !ok {
		return "–"
	}
	ops := u.OpsPerTx
	if ops <= 0 {
		ops = 1 // a report of an earlier version
	}
	scale := map[perKind]float64{perNone: 1, perTx: 1 / ops, perRate: ops}[c.per]
	two := func(f func(float64) string) string {
		if before, ok := u.WithoutMedians[c.metric]; ok {
			return f(before) + " → " + f(under)
		}
		return f(under)
	}
	out := two(func(v float64) string { return num(v * scale) })
	if scale != 1 {
		unit := map[perKind]string{perTx: "/tx", perRate: " tx/s"}[c.per]
		out += " (" + two(num) + unit + ")"
	}
	return out
}
