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
	for _, wl := range r.Plan.Options.Workloads {
		for _, m := range results.Summary {
			if rows := r.rowsFor(wl, m); len(rows) > 0 {
				r.writeTextTables(w, wl, m, rows, others)
			}
		}
	}
	r.writeTextSetup(w)
	r.writeInstrText(w)
	r.writeTimeWentText(w)
	r.writeTextLeftOut(w)
	return nil
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
			line += fmt.Sprintf(" (and %d secondary tests not run: their primary did not change)", sm.Behind)
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
			wrap(w, "    ", "      ", fmt.Sprintf("%s %s on %s: %s (p=%s)%s", c.Commit, c.Metric, c.Config, pct(c.DeltaPct), pnum(c.P), note))
		}
	}
	if n := len(r.Incomplete); n > 0 {
		fmt.Fprintf(w, "\n  Incomplete: %d (the run could not answer there)\n", n)
		for i, in := range r.Incomplete {
			if i == 10 {
				fmt.Fprintf(w, "    ... %d more\n", n-10)
				break
			}
			what := in.Config
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

// writeTextTables is a workload's metric: under a heading, a table per
// commit other than the baseline.
func (r *Report) writeTextTables(w io.Writer, wl, m string, rows []Row, others []string) {
	labels, common := configLabels(wl, rows)
	def, _ := r.Plan.Metrics.Get(m)
	head := fmt.Sprintf("%s: %s (%s)", wl, m, def.Unit)
	if common != "" {
		head += ", " + common
	}
	fmt.Fprintf(w, "\n%s\n\n", head)
	for _, c := range others {
		r.writeTextTable(w, rows, labels, c)
		if len(others) > 1 {
			fmt.Fprintln(w)
		}
	}
}

// writeTextTable is a commit against the baseline, a line per row:
// medians ± their intervals, the change with its interval, the verdict.
func (r *Report) writeTextTable(w io.Writer, rows []Row, labels []string, c string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  \t%s\t%s\tchange [95%% CI]\tverdict\n", r.Baseline, c)
	for i, row := range rows {
		var base, cand *Stat
		for k := range row.Stats {
			switch row.Stats[k].Commit {
			case r.Baseline:
				base = &row.Stats[k]
			case c:
				cand = &row.Stats[k]
			}
		}
		if base == nil || cand == nil {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", labels[i], medianCI(*base), medianCI(*cand), deltaCI(*cand, 1), verdictText(*cand))
	}
	tw.Flush()
}

// writeTextSetup says what ran where, and how it was judged.
func (r *Report) writeTextSetup(w io.Writer) {
	p := r.Plan
	o := p.Options
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
			wrap(w, "  ", "    ", c.Cell+": saturated (the server did not keep the rate)")
		}
		for _, c := range r.Failed {
			wrap(w, "  ", "    ", fmt.Sprintf("%s: %s: %s", c.Cell, c.Status, c.Error))
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "\nWarnings\n\n")
		for _, s := range r.Warnings {
			wrap(w, "  ", "    ", s)
		}
	}
}

// configLabels names a workload's rows by what differs between them
// (c2, c8 when only the clients do) and returns what they share
// (cpuall, pgss.max=1000) for the heading.
func configLabels(wl string, rows []Row) (labels []string, common string) {
	parts := make([][]string, len(rows))
	for i, row := range rows {
		parts[i] = strings.Split(strings.TrimPrefix(row.Config, wl+"/"), "/")
	}
	same := map[int]bool{}
	for j := range parts[0] {
		same[j] = true
		for _, ps := range parts[1:] {
			if j >= len(ps) || ps[j] != parts[0][j] {
				same[j] = false
			}
		}
	}
	var shared []string
	for j, s := range parts[0] {
		if same[j] {
			shared = append(shared, s)
		}
	}
	for _, ps := range parts {
		var own []string
		for j, s := range ps {
			if !same[j] {
				own = append(own, s)
			}
		}
		if len(own) == 0 {
			own = ps[:1]
		}
		labels = append(labels, strings.Join(own, " "))
	}
	return labels, strings.Join(shared, " ")
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
