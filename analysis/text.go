package analysis

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// textWidth is the width prose is wrapped to: a mail to pgsql-hackers
// is read at 80 columns.
const textWidth = 76

// WriteText writes the report as aligned plain text to paste into a
// mail (pgsql-hackers) or show on a terminal: no markdown, lines within
// 80 columns where the names allow. The answer comes first (per commit:
// verdict counts, the TPS geometric mean, regressions, where the run
// could not answer), then per workload and metric one table per commit
// against the baseline (medians ± their 95 % interval, the change with
// its interval, the verdict), then how the numbers were obtained.
func (r *Report) WriteText(w io.Writer) error {
	var others []string
	for _, c := range r.Commits {
		if c != r.Baseline {
			others = append(others, c)
		}
	}
	title := fmt.Sprintf("abtest: %s vs %s", strings.Join(others, ", "), r.Baseline)
	fmt.Fprintf(w, "%s\n%s\n\n", title, strings.Repeat("=", len([]rune(title))))
	r.WriteTextSummary(w)
	r.writeTextChanges(w)
	r.writeWaitShiftsText(w)
	r.writeTimeWentText(w)
	r.writeInstrText(w)
	r.writeSweepsText(w)
	r.writeConditionsText(w)
	for _, wl := range r.Plan.Options.Workloads {
		for _, c := range others {
			r.writeTextWorkload(w, wl, c)
		}
	}
	r.writeTextLegend(w)
	r.writeTextSetup(w)
	r.writeTextLeftOut(w)
	return nil
}

// writeTextChanges lists the called changes, gated first, most
// significant first.
func (r *Report) writeTextChanges(w io.Writer) {
	if len(r.Changes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nBiggest changes\n\n")
	for i, c := range r.Changes {
		if i == 15 {
			fmt.Fprintf(w, "  ... %d more\n", len(r.Changes)-15)
			break
		}
		gated := ""
		if !c.Gated {
			gated = ", not gated"
		}
		wrap(w, "  ", "    ", fmt.Sprintf("%s %s on %s: %s (%s) %s%s", c.Commit, c.Metric, r.shownConfig(c.Config), pct(c.DeltaPct), pIs(c.P), c.Verdict, gated))
	}
}

// WriteTextSummary writes the text report's Summary section (what the
// console shows at the end of a run): each commit's answer, then the
// regressions, where the run could not answer, the A/A note and the
// metrics not gated.
func (r *Report) WriteTextSummary(w io.Writer) {
	r.writeTextSummary(w)
	r.writeTextSummaryNotes(w)
}

// writeTextSummary is each commit's answer.
func (r *Report) writeTextSummary(w io.Writer) {
	fmt.Fprintf(w, "Summary\n\n")
	for _, sm := range r.Summaries {
		line := fmt.Sprintf("%s vs %s: ", sm.Commit, r.Baseline)
		if sm.NoChangePct > 0 {
			line += fmt.Sprintf("no change of %.3g%% or more in any gated metric; ", sm.NoChangePct)
		}
		line += fmt.Sprintf("%d better, %d worse, %d same, %d unknown, %d incomplete", sm.Better, sm.Worse, sm.Same, sm.Unknown, sm.Incomplete)
		if sm.Behind > 0 {
			line += fmt.Sprintf(" (and %d secondary tests not run: their configuration's primary was not called better or worse)", sm.Behind)
		}
		if sm.Higher+sm.Lower > 0 {
			line += fmt.Sprintf("; report-only: %d higher, %d lower", sm.Higher, sm.Lower)
		}
		wrap(w, "  ", "    ", line)
		for _, g := range r.Geomeans {
			if g.Commit != sm.Commit {
				continue
			}
			wrap(w, "    ", "      ", g.Line(r.Alpha))
		}
		if sm.GatedUnknown > 0 && !math.IsInf(sm.DetectablePct, 0) {
			wrap(w, "    ", "      ", fmt.Sprintf("unknown: changes smaller than %s in the gated metrics could not have been detected", pctAbs(sm.DetectablePct)))
		}
		if sm.Unreachable > 0 {
			wrap(w, "    ", "      ", fmt.Sprintf("%d gated tests have too few pairs to reach their level: more repeats are needed", sm.Unreachable))
		}
		if line := r.blocksLine(sm); line != "" {
			wrap(w, "    ", "      ", line)
		}
	}
	if line := r.autoBarLine(); line != "" {
		wrap(w, "  ", "    ", line)
	}
}

// writeTextSummaryNotes ends the summary: regressions, where the run
// could not answer, the A/A note, the metrics not gated.
func (r *Report) writeTextSummaryNotes(w io.Writer) {
	if len(r.Regressions) > 0 {
		fmt.Fprintf(w, "\n  Regressions in gated metrics: %d\n", len(r.Regressions))
		for _, c := range r.Regressions {
			note := ""
			if c.Note != "" {
				note = ": " + c.Note
			}
			wrap(w, "    ", "      ", fmt.Sprintf("%s %s on %s: %s (%s)%s", c.Commit, c.Metric, r.shownConfig(c.Config), pct(c.DeltaPct), pIs(c.P), note))
		}
	}
	if n := len(r.Incomplete); n > 0 {
		fmt.Fprintf(w, "\n  Incomplete: %d (the run could not answer there)\n", n)
		for i, in := range r.Incomplete {
			if i == 10 {
				fmt.Fprintf(w, "    ... %d more\n", n-10)
				break
			}
			what := r.shownConfig(in.Config)
			if in.Metric != "" {
				what += " " + in.Metric
			}
			wrap(w, "    ", "      ", fmt.Sprintf("%s %s: %s", in.Commit, what, in.Why))
		}
	}
	if r.AA != nil {
		fmt.Fprintln(w)
		wrap(w, "  ", "  ", "A/A: "+r.AA.Note)
	}
	var ungated []string
	for _, t := range r.Tiers {
		if !t.Gated {
			ungated = append(ungated, t.Metric)
		}
	}
	if len(ungated) > 0 {
		fmt.Fprintln(w)
		wrap(w, "  ", "    ", "Not gated (reported only): "+strings.Join(ungated, ", "))
	}
}

// writeTextWorkload is a workload against the baseline in benchstat's
// shape: a table per configuration with the metrics as rows, each
// commit's median, the change and the verdict, within 80 columns.
func (r *Report) writeTextWorkload(w io.Writer, wl, c string) {
	var configs []string
	byConfig := map[string][]Row{}
	for _, m := range r.tableMetrics() {
		for _, row := range r.rowsFor(results.EscapeID(wl), m) {
			if byConfig[row.Config] == nil {
				configs = append(configs, row.Config)
			}
			byConfig[row.Config] = append(byConfig[row.Config], row)
		}
	}
	if len(configs) == 0 {
		return
	}
	for _, id := range configs {
		fmt.Fprintf(w, "\n%s: %s vs %s\n\n", r.shownConfig(id), c, r.Baseline)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  \t%s\t%s\tΔ\tverdict\n", r.Baseline, c)
		for _, row := range byConfig[id] {
			base, cand := r.pair(row, c)
			if base == nil || cand == nil {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", row.Metric, textMedian(*base), textMedian(*cand), textDelta(*cand), shortVerdict(*cand))
		}
		tw.Flush()
	}
}

// pair is a row's baseline and commit c.
func (r *Report) pair(row Row, c string) (base, cand *Stat) {
	for k := range row.Stats {
		switch row.Stats[k].Commit {
		case r.Baseline:
			base = &row.Stats[k]
		case c:
			cand = &row.Stats[k]
		}
	}
	return base, cand
}

// textMedian is a median for the text tables; its interval is in the
// markdown and the JSON.
func textMedian(st Stat) string {
	if st.N == 0 {
		return "-"
	}
	return num(st.Median)
}

// textDelta is the change, marked when it contradicts the medians.
func textDelta(st Stat) string {
	if st.N == 0 {
		return "-"
	}
	if math.IsNaN(st.DeltaPct) && st.DeltaAbs != 0 && isFinite(st.DeltaAbs) {
		return signed(st.DeltaAbs) + " abs"
	}
	s := pct(st.DeltaPct)
	if st.MediansDisagree {
		s += DisagreeMark
	}
	return s
}

// shortVerdict is a verdict in a few characters: "unknown <63%",
// "same ±5%", "worse"; "*" marks one not gated.
func shortVerdict(st Stat) string {
	v := string(st.Verdict)
	switch st.Verdict {
	case results.Unknown:
		if st.Behind {
			v = "untested"
		} else if isFinite(st.DetectablePct) {
			v += " <" + pctAbs(st.DetectablePct)
		}
	case results.Same:
		v += " ±" + pctAbs(st.MinEffectPct)
	case results.Incomplete:
		v += fmt.Sprintf(" n=%d", st.N)
	}
	if st.Blocks > 0 {
		v += fmt.Sprintf(", after %d blocks", st.Blocks)
	}
	if !st.Gated {
		v += "*"
	}
	return v
}

// writeTextLegend explains the marks of the tables.
func (r *Report) writeTextLegend(w io.Writer) {
	fmt.Fprintln(w)
	wrap(w, "  ", "  ", "Medians of each commit's repeats; Δ and the verdict compare with "+r.Baseline+" (unknown <X: changes smaller than X could not have been detected; same ±X: within ±X; untested: a secondary metric, tested only where the configuration's primary (tps in a closed loop; in an open loop the workload's declared primary, else latency_p99_ms) was called better or worse). * reported only, not gated.")
	for _, row := range r.Rows {
		if anyDisagree([]Row{row}) {
			wrap(w, "  ", "  ", DisagreeNote)
			break
		}
	}
}

// writeTextSetup says what ran where, and how it was judged.
func (r *Report) writeTextSetup(w io.Writer) {
	p := r.Plan
	o := p.Options
	fmt.Fprintf(w, "\nHow this ran\n\n")
	for _, l := range r.howRan().lines() {
		wrap(w, "  ", "    ", text.OneLine(l))
	}
	fmt.Fprintf(w, "\nSetup\n\n")
	for _, c := range p.Commits {
		what := c.Ref + " " + text.Short(c.SHA)
		if c.Install != "" {
			what = "install " + c.Install
		}
		for _, pa := range c.Patches {
			what += " + " + filepath.Base(pa.File)
		}
		if c.Version != "" {
			what += ", " + strings.Replace(c.Version, "postgres (PostgreSQL) ", "PostgreSQL ", 1)
		}
		wrap(w, "  ", "    ", fmt.Sprintf("%s: %s (%s build)", c.Label, what, text.OrDash(c.BuildType)))
	}
	h := p.Host
	wrap(w, "  ", "    ", fmt.Sprintf("host: %s, %d CPUs, %d MB, kernel %s", text.OrDash(h.CPU), h.NProc, h.MemoryMB, text.OrDash(h.Kernel)))
	if r.Observer != nil {
		wrap(w, "  ", "    ", r.Observer.Line())
	}
	var settings []string
	for _, s := range o.Settings {
		settings = append(settings, s.Name+"="+strings.Join(s.Values, ","))
	}
	wrap(w, "  ", "    ", fmt.Sprintf("pgbench: workloads %s, clients %s, server CPUs %s, settings %s; %d repeats of %.0f s after %.0f s warm-up, %s protocol, %s order; %d of %d cells recorded",
		strings.Join(o.Workloads, ","), ints(o.Clients), orAll(ints(o.CPUs)), text.OrDash(strings.Join(settings, " ")), o.Repeats, o.DurationS, o.WarmupS, o.Protocol, o.Order, len(r.records), r.PlannedCells))
	wrap(w, "  ", "    ", "statistics: "+r.method())
	for _, f := range p.Doctor {
		if f.Status != results.FindingOK {
			wrap(w, "  ", "    ", fmt.Sprintf("doctor: %s %s: %s (%s)", f.Status, f.Check, f.Value, f.Why))
		}
	}
}

// writeTextLeftOut lists the cells not in the statistics, and the
// warnings.
func (r *Report) writeTextLeftOut(w io.Writer) {
	if len(r.Failed)+len(r.Saturated) > 0 {
		fmt.Fprintf(w, "\nCells not in the statistics\n\n")
		for _, c := range r.Saturated {
			wrap(w, "  ", "    ", r.shownConfig(c.Cell)+": saturated ("+c.Error+")")
		}
		for _, c := range r.Failed {
			wrap(w, "  ", "    ", fmt.Sprintf("%s: %s: %s", r.shownConfig(c.Cell), c.Status, c.Error))
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "\nWarnings\n\n")
		for _, s := range r.Warnings {
			wrap(w, "  ", "    ", s)
		}
	}
}

// wrap writes s wrapped at textWidth, the first line indented by first,
// the others by rest. A word longer than the line stays whole.
func wrap(w io.Writer, first, rest, s string) {
	line := first
	empty := true
	for _, word := range strings.Fields(s) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > textWidth {
			fmt.Fprintln(w, line)
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}
