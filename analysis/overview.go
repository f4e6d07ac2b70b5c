package analysis

// Answer first (issue 42): a line per commit naming what changed, then
// one overview table — configurations × the metrics that matter, Δ with
// its interval and verdict, most significant first — before any detail.
// A metric with no signal (0 against 0, a constant) is "—" with its
// reason in a footnote, never a verdict.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// overviewRow is a commit's change in one configuration and metric.
type overviewRow struct {
	config, metric string
	base, cand     Stat
	why            string // no signal
}

// mattersMetric is a metric the overview always shows beside each
// configuration's own primary (Stat.Primary): the closed loop's
// primary, latency and CPU per transaction.
func mattersMetric(m string) bool {
	return m == results.MetricTPS || m == results.MetricLatencyAvg || m == results.MetricServerCPUPerTx || m == results.MetricInstructionsPerTx
}

// overviewRows are commit c's rows that matter, most significant first:
// called changes, report-only moves, then the rest of what matters.
func (r *Report) overviewRows(c string) []overviewRow {
	// At an offered rate TPS is the offer: not what matters there.
	openLoop := map[string]bool{}
	for _, cfg := range r.Plan.Configs {
		openLoop[cfg.ID()] = cfg.Open()
	}
	var out []overviewRow
	for _, row := range r.Rows {
		base, cand := r.pair(row, c)
		if base == nil || cand == nil || cand.N == 0 {
			continue
		}
		matters := cand.Primary || mattersMetric(row.Metric) && !(row.Metric == results.MetricTPS && openLoop[row.Config])
		if !matters && !called(cand.Verdict) && !excludesZero(*cand) {
			continue
		}
		out = append(out, overviewRow{row.Config, row.Metric, *base, *cand, noSignal(*base, *cand)})
	}
	rank := func(o overviewRow) int {
		switch {
		case o.why != "":
			return 4
		case o.cand.Verdict == results.Worse || o.cand.Verdict == results.Better:
			return 0
		case o.cand.Verdict == results.Higher || o.cand.Verdict == results.Lower || excludesZero(o.cand):
			return 1
		case o.cand.Verdict == results.Incomplete:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(out, func(a, b overviewRow) int {
		if x := cmp.Compare(rank(a), rank(b)); x != 0 {
			return x
		}
		return cmp.Compare(pOr1(a.cand.P), pOr1(b.cand.P))
	})
	return out
}

func pOr1(p float64) float64 {
	if isFinite(p) {
		return p
	}
	return 0 // exact: as significant as can be
}

// overviewBlocks are, per commit, its answer line and the overview
// table.
func (r *Report) overviewBlocks(brief bool) []Block {
	var s sect
	for _, c := range r.others() {
		rows := r.overviewRows(c)
		t := &Table{Head: []string{"configuration", "metric", r.Baseline, c, "Δ [95% CI]", "verdict"}}
		var notes noSignalMarks
		geo, disagree := false, false
		for _, o := range rows {
			// Beside Δ, the geometric means it rests on where it rests
			// on them (a paired log test: their ratio is Δ, nothing to
			// mark); else the medians (a median test, an unpaired row).
			cand, both := o.cand, restsOnGeomeans(o.cand)
			cand.MediansDisagree = cand.MediansDisagree && !both
			geo, disagree = geo || both, disagree || cand.MediansDisagree
			d, v := deltaCell(cand, deltaCI(cand, 1)), verdictCell(cand, shortVerdict(cand))
			if o.why != "" {
				d, v = txt("—"+notes.mark(o.why)), txt("—")
				d.Why = o.why
			}
			b, n := overviewValue(o.base, cand.BaseGeomean, cand.Geomean), overviewValue(cand, cand.Geomean, cand.BaseGeomean)
			t.Rows = append(t.Rows, []Cell{txt(r.shownConfig(o.config)), txt(o.metric), b, n, d, v})
		}
		if len(t.Rows) == 0 {
			continue
		}
		s.heading(3, fmt.Sprintf("Overview: %s vs %s", c, r.Baseline))
		if brief {
			s.add(byConfiguration(t)...)
		} else {
			s.add(t)
		}
		s.add(notes.footnotes()...)
		s.add(&Footnote{"* reported only, not gated; unknown < X: changes smaller than X could not have been detected; same ±X: within ±X."})
		if geo {
			s.add(&Footnote{GeomeanNote})
		}
		if disagree {
			s.add(&Footnote{DisagreeNote})
		}
	}
	return s
}

// restsOnGeomeans reports whether st's Δ is the ratio of its geometric
// means (to rounding): a paired log test's is; a median test's, or an
// unpaired row's, is not.
func restsOnGeomeans(st Stat) bool {
	if !isFinite(st.Geomean) || !isFinite(st.BaseGeomean) || st.BaseGeomean == 0 || !isFinite(st.DeltaPct) {
		return false
	}
	return math.Abs(100*(st.Geomean/st.BaseGeomean-1)-st.DeltaPct) < 0.005
}

// GeomeanNote says what the overview shows beside Δ.
const GeomeanNote = "Beside Δ: the geometric means of the values Δ rests on (the pairs' blocks), so their ratio is Δ; each commit's median is in the details."

// overviewValue is a commit's value beside Δ in the overview: the
// geometric mean geo of the values Δ rests on where the comparison has
// both (other, the other side's, finite), else its median.
func overviewValue(st Stat, geo, other float64) Cell {
	if !isFinite(geo) || !isFinite(other) {
		c := medianCell(st)
		c.Text = plain(textMedian(st))
		return c
	}
	c := txt(num(geo))
	c.Value, c.Lo, c.Hi = geo, math.NaN(), math.NaN()
	return c
}

// AnswerLines are one line per commit naming what changed: the called
// changes by metric and workload, then the run-level primary's answer.
func (r *Report) AnswerLines() []string {
	var out []string
	for _, c := range r.others() {
		out = append(out, r.AnswerLine(c))
	}
	return out
}

// AnswerLine is commit c's line of AnswerLines.
func (r *Report) AnswerLine(c string) string {
	var parts []string
	seen := map[string]bool{}
	for _, ch := range r.Changes {
		if ch.Commit != c || !(ch.Verdict == results.Better || ch.Verdict == results.Worse) {
			continue
		}
		wl := strings.SplitN(r.shownConfig(ch.Config), "/", 2)[0]
		key := ch.Metric + " " + wl
		if seen[key] {
			continue
		}
		seen[key] = true
		parts = append(parts, fmt.Sprintf("%s %s %s on %s", ch.Metric, pctShort(ch.DeltaPct), ch.Verdict, wl))
	}
	pooled := map[string]bool{}
	for _, g := range r.Geomeans {
		if g.Commit == c {
			parts = append(parts, g.metric())
			pooled[g.Metric] = true
		}
	}
	for _, m := range r.primaryMetrics(c) {
		if !pooled[m] && !seenMetric(seen, m) {
			parts = append(parts, r.primaryAnswer(c, m))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, r.nothingCalled(c))
	}
	return fmt.Sprintf("%s vs %s: %s", c, r.Baseline, strings.Join(parts, "; "))
}

// nothingCalled is commit c's answer when it names no change: "no
// change called", or, where cells are missing, that it could not
// compare (a run whose every cell failed called nothing because it
// measured nothing).
func (r *Report) nothingCalled(c string) string {
	n := 0
	for _, in := range r.Incomplete {
		if in.Commit == c && in.Metric == "" {
			n++
		}
	}
	if n == 0 {
		return "no change called"
	}
	return fmt.Sprintf("nothing compared: %s incomplete (failed cells)", text.Count(n, "configuration"))
}

// metric is the run-level answer in a few words: "tps −2.8 % worse",
// "tps: no change ≥ 4.9 % detectable (needs r ≥ 74 for ±2 %)".
func (g Geomean) metric() string {
	d := 100 * (g.Ratio - 1)
	switch g.Verdict {
	case results.Better, results.Worse:
		return fmt.Sprintf("%s %s %s (run level)", g.Metric, pctShort(d), g.Verdict)
	case results.Same:
		return fmt.Sprintf("%s: same within %s", g.Metric, barText(g.MinEffectPct, g.Bar))
	}
	s := fmt.Sprintf("%s: unknown, %s", g.Metric, pctShort(d))
	if isFinite(g.DetectablePct) && g.DetectablePct > 0 {
		s = fmt.Sprintf("%s: unknown, %s", g.Metric, cannotDetect(g.DetectablePct))
	}
	if g.NeedRepeats > 0 {
		s += fmt.Sprintf(" (needs r ≥ %d for %s", g.NeedRepeats, barText(g.MinEffectPct, g.Bar))
		if g.NeedMinutes >= 1 {
			s += fmt.Sprintf(", about %s of cells here", minutes(g.NeedMinutes))
		}
		s += ")"
	}
	return s
}

// minutes is a duration in minutes as read: "14 min", "2.5 h".
func minutes(m float64) string {
	if m < 120 {
		return fmt.Sprintf("%.0f min", m)
	}
	return fmt.Sprintf("%.1f h", m/60)
}

// pctShort is a change with one decimal: "−64.0%" reads as "-64.0%".
func pctShort(d float64) string {
	if !isFinite(d) {
		return pct(d)
	}
	return fmt.Sprintf("%+.1f%%", math.Round(d*10)/10)
}

// byConfiguration splits an overview table for 80 columns: a table per
// configuration, in the order the rows first name it.
func byConfiguration(t *Table) []Block {
	var order []string
	by := map[string]*Table{}
	for _, row := range t.Rows {
		id := row[0].Text.String()
		if by[id] == nil {
			order = append(order, id)
			by[id] = &Table{Head: []string{"", t.Head[4], t.Head[5]}}
		}
		by[id].Rows = append(by[id].Rows, []Cell{row[1], row[4], row[5]})
	}
	var out []Block
	for _, id := range order {
		out = append(out, &Paragraph{plain(id + ":")}, by[id])
	}
	return out
}

// primaryMetrics are commit c's primary metrics, in the rows' order.
func (r *Report) primaryMetrics(c string) []string {
	var out []string
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Commit == c && st.Primary && !slices.Contains(out, row.Metric) {
				out = append(out, row.Metric)
			}
		}
	}
	return out
}

// seenMetric reports whether a change of metric m was named already
// (seen's keys are "metric workload").
func seenMetric(seen map[string]bool, m string) bool {
	for k := range seen {
		if strings.HasPrefix(k, m+" ") {
			return true
		}
	}
	return false
}

// primaryAnswer is commit c's answer for primary metric m where no
// run-level test pooled it (one configuration, or a primary of its
// own): "latency_p99_ms: same within ±10%", "instructions_per_tx:
// unknown, could not detect < 0.4%", over its configurations.
func (r *Report) primaryAnswer(c, m string) string {
	var sts []Stat
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Commit == c && st.Primary && row.Metric == m {
				sts = append(sts, st)
			}
		}
	}
	in := ""
	if len(sts) > 1 {
		in = fmt.Sprintf(" in %d configurations", len(sts))
	}
	bar, mde, incomplete, unknown := 0.0, 0.0, 0, 0
	for _, st := range sts {
		bar = max(bar, st.MinEffectPct)
		switch st.Verdict {
		case results.Incomplete:
			incomplete++
		case results.Unknown:
			unknown++
			mde = max(mde, st.DetectablePct)
		}
	}
	switch {
	case incomplete > 0:
		return fmt.Sprintf("%s: incomplete%s (the run could not answer)", m, in)
	case unknown == 0:
		return fmt.Sprintf("%s: same within %s%s", m, barText(bar, r.Bar), in)
	case isFinite(mde) && mde > 0 && mde < maxShownPct:
		return fmt.Sprintf("%s: unknown%s, could not detect < %s", m, in, pctAbs(mde))
	}
	return fmt.Sprintf("%s: unknown%s, could detect no change of any size", m, in)
}
