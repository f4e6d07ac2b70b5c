package analysis

// Conditions (matrix --condition): each configuration held under a
// condition beside the same configuration without one, per commit —
// what the condition reached (the xmin age the holder's snapshot got to,
// the WAL an idle slot retained, the checkpoints forced, the rows the
// updater wrote) and what it did to the probes that explain it.

import (
	"fmt"
	"io"
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
	// Reached are the medians of what the condition reached
	// (results.Record.ConditionFacts).
	Reached map[string]float64 `json:"reached"`
	// Medians and WithoutMedians are conditionMetrics' medians under the
	// condition and without it.
	Medians        map[string]float64 `json:"medians"`
	WithoutMedians map[string]float64 `json:"without_medians,omitempty"`
}

// conditionMetrics are the probes a condition shows in, beside it.
var conditionMetrics = []metricColumn{
	{"TPS", results.MetricTPS}, {"p99 ms", results.MetricLatencyP99}, {"oldest xmin age", results.MetricOldestXminAge},
	{"dead tuples +", results.MetricDeadTupGrowth}, {"dead/op", results.MetricDeadTupPerTx}, {"HOT %", results.MetricHOTUpdatePct},
	{"WAL B/op", results.MetricWALBytesPerTx},
}

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
		u := UnderCondition{Condition: first.Condition, Config: k.config, Commit: k.commit, Cells: len(cells[k]),
			Reached: factMedians(cells[k]), Medians: medians(cells[k], conditionMetrics)}
		if w := cells[key{without.ID(), k.commit}]; len(w) > 0 {
			u.Without, u.WithoutMedians = without.ID(), medians(w, conditionMetrics)
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
			if v, ok := rec.Metrics.Get(c.metric); ok && rec.Void[c.metric] == "" {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			out[c.metric] = median(vs)
		}
	}
	return out
}

// metricColumn is a column of a table: its heading and the metric it shows.
type metricColumn struct{ head, metric string }

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
		out[k] = median(vs)
	}
	return out
}

// writeConditions writes the conditions' table (markdown).
func (r *Report) writeConditions(w io.Writer) {
	if len(r.Conditions) == 0 {
		return
	}
	fmt.Fprintf(w, "## Under conditions\n\n")
	fmt.Fprintf(w, "Each configuration under its condition, beside the same configuration without one (without → under), medians over the commit's cells. *reached* is what the condition held by the end of the window.\n\n")
	fmt.Fprintf(w, "| condition | configuration | commit | reached |")
	for _, c := range conditionMetrics {
		fmt.Fprintf(w, " %s |", c.head)
	}
	fmt.Fprintf(w, "\n|---|---|---|---|%s\n", strings.Repeat("--:|", len(conditionMetrics)))
	for _, u := range r.Conditions {
		var reached []string
		for _, k := range slices.Sorted(maps.Keys(u.Reached)) {
			reached = append(reached, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), num(u.Reached[k])))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |", u.Condition, mdCell(r.shownConfig(u.Config)), u.Commit, strings.Join(reached, ", "))
		for _, c := range conditionMetrics {
			fmt.Fprintf(w, " %s |", u.pair(c.metric))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// writeConditionsText writes, in 80 columns, each configuration under
// its condition: what the condition reached and the probes beside the
// same configuration without it.
func (r *Report) writeConditionsText(w io.Writer) {
	if len(r.Conditions) == 0 {
		return
	}
	fmt.Fprintf(w, "Under conditions (without -> under)\n\n")
	for _, u := range r.Conditions {
		wrap(w, "  ", "    ", fmt.Sprintf("%s, %s, %s:", u.Condition, u.Commit, r.shownConfig(u.Config)))
		var reached []string
		for _, k := range slices.Sorted(maps.Keys(u.Reached)) {
			reached = append(reached, fmt.Sprintf("%s %s", strings.ReplaceAll(k, "_", " "), num(u.Reached[k])))
		}
		wrap(w, "    ", "      ", "reached: "+strings.Join(reached, ", "))
		var probes []string
		for _, c := range conditionMetrics {
			if v := u.pair(c.metric); v != "–" {
				probes = append(probes, c.head+" "+strings.ReplaceAll(v, "→", "->"))
			}
		}
		wrap(w, "    ", "      ", strings.Join(probes, "; "))
	}
	fmt.Fprintln(w)
}

// pair is "without → under" for metric m, or what there is of it.
func (u UnderCondition) pair(m string) string {
	under, ok := u.Medians[m]
	if !ok {
		return "–"
	}
	if before, ok := u.WithoutMedians[m]; ok {
		return num(before) + " → " + num(under)
	}
	return num(under)
}
