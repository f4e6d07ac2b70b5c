package analysis

// The report's answer: the summary of each commit and the changes
// called, as blocks.

import (
	"fmt"
	"math"

	"github.com/pgabtest/abtest/results"
)

// summaryBlocks are where the run could not answer, each commit's
// answer, the metrics not gated, the A/A note and the regressions.
func (r *Report) summaryBlocks(brief bool) []Block {
	var s sect
	s.heading(2, "Summary")
	var items []Item
	if n := len(r.Incomplete); n > 0 && !brief {
		it := Item{Text: Inline{strong(fmt.Sprintf("incomplete: %d", n)), {Text: " (the run could not answer there; this gates)"}}}
		it.Sub = r.incompleteItems(20, true)
		items = append(items, it)
	}
	for _, sm := range r.Summaries {
		items = append(items, r.commitItem(sm, brief))
	}
	if line := r.autoBarLine(); line != "" {
		items = append(items, Item{Text: plain(line)})
	}
	// A server difference that changes performance is part of any
	// answer between them (PG 15's checksums off against PG 18's on).
	if line := serverDiffLine(r.ServerDiffs, r.Commits); line != "" {
		items = append(items, Item{Text: plain(line)})
	}
	if brief {
		s.add(&List{items})
		items = nil
	}
	items = append(items, r.summaryNotes(brief, &s)...)
	if len(items) > 0 {
		s.add(&List{items})
	}
	return s
}

// incompleteItems list the first max incomplete answers.
func (r *Report) incompleteItems(most int, gatedMark bool) []Item {
	var out []Item
	for i, in := range r.Incomplete {
		if i == most {
			out = append(out, Item{Text: plain(fmt.Sprintf("… %d more", len(r.Incomplete)-most))})
			break
		}
		what := r.shownConfig(in.Config)
		if in.Metric != "" {
			what += " " + in.Metric
		}
		gated := ""
		if !in.Gated && gatedMark {
			gated = " (not gated)"
		}
		out = append(out, Item{Text: plain(fmt.Sprintf("%s %s: %s%s", in.Commit, what, in.Why, gated))})
	}
	return out
}

// commitItem is a commit's answer and what qualifies it.
func (r *Report) commitItem(sm Summary, brief bool) Item {
	var it Item
	head := fmt.Sprintf(" vs %s: ", r.Baseline)
	if brief {
		head = sm.Commit + head
	}
	it.Text = Inline{{Text: head}}
	if !brief {
		it.Text = Inline{strong(sm.Commit), {Text: head}}
	}
	if sm.NoChangePct > 0 {
		if brief {
			it.Text = append(it.Text, Span{Text: fmt.Sprintf("no change of %.3g%% or more in any gated metric; ", sm.NoChangePct)})
		} else {
			it.Text = append(it.Text, strong(fmt.Sprintf("no change ≥ %.3g%%", sm.NoChangePct)), Span{Text: " in any gated metric; "})
		}
	}
	same := fmt.Sprintf("%d same", sm.Same)
	switch n := r.sameWithoutSignal(sm.Commit); {
	case n > 0 && n == sm.Same:
		same += " (all with no signal: 0 against 0 or one constant)"
	case n > 0:
		same += fmt.Sprintf(" (%d of them with no signal: 0 against 0 or one constant)", n)
	}
	line := fmt.Sprintf("%d better, %d worse, %s, %d unknown, %d incomplete", sm.Better, sm.Worse, same, sm.Unknown, sm.Incomplete)
	if sm.Behind > 0 {
		line += fmt.Sprintf(" (and %d secondary tests not run: their configuration's primary was not called better or worse)", sm.Behind)
	}
	if sm.Higher+sm.Lower > 0 {
		line += fmt.Sprintf("; report-only: %d higher, %d lower", sm.Higher, sm.Lower)
	}
	it.Text = append(it.Text, Span{Text: line})
	sub := func(f string, a ...any) { it.Sub = append(it.Sub, Item{Text: plain(fmt.Sprintf(f, a...))}) }
	geomeans := func() {
		for _, g := range r.Geomeans {
			if g.Commit == sm.Commit {
				sub("%s", g.Line(r.Alpha))
			}
		}
	}
	if brief {
		geomeans()
	}
	switch {
	case sm.GatedUnknown > 0 && isFinite(sm.DetectablePct) && sm.DetectablePct >= maxShownPct:
		sub("unknown: this run could have detected no change of any size in the gated metrics")
	case sm.GatedUnknown > 0 && !math.IsInf(sm.DetectablePct, 0):
		if brief {
			sub("unknown: changes smaller than %s in the gated metrics could not have been detected", pctAbs(sm.DetectablePct))
		} else {
			sub("unknown: this run could not have detected changes smaller than %s in the gated metrics (at each test's level, 80%% power)", pctAbs(sm.DetectablePct))
		}
	}
	if sm.Unreachable > 0 {
		if brief {
			sub("%d gated tests have too few pairs to reach their level: more repeats are needed", sm.Unreachable)
		} else {
			sub("%d gated tests have too few pairs to ever reach their level: more repeats (or --until-decided) are needed for a verdict", sm.Unreachable)
		}
	}
	if !brief {
		sub("tests: %d gated tests at α = %v (the primaries first and the other gated metrics behind them in one family, event counts in their own), %d deterministic counters compared exactly, %d metrics judged as the one they are a function of", sm.Tests, r.Alpha, sm.Exact, sm.Mirrored)
	}
	if line := r.blocksLine(sm); line != "" {
		sub("%s", line)
	}
	if !brief {
		geomeans()
	}
	return it
}

// blocksLine says, under a sequential design, how many blocks a commit's
// gated verdicts took: what --until-decided spent to decide.
func (r *Report) blocksLine(sm Summary) string {
	if r.Sequential == nil || sm.Blocks == 0 {
		return ""
	}
	return fmt.Sprintf("until-decided: the gated verdicts took up to %d blocks per configuration (%d planned, at most %d)", sm.Blocks, r.Plan.Options.Repeats, r.Sequential.MaxRepeats)
}

// summaryNotes end the summary: the metrics not gated, the A/A note and
// the regressions (as items of the summary's list; brief: as their own
// lists, with where the run could not answer, added to s).
func (r *Report) summaryNotes(brief bool, s *sect) []Item {
	var items []Item
	ungated := 0
	for _, t := range r.Tiers {
		if !t.Gated {
			ungated++
		}
	}
	var regs []Item
	for _, c := range r.Regressions {
		note := ""
		if c.Note != "" {
			note = ": " + c.Note
		}
		regs = append(regs, Item{Text: plain(fmt.Sprintf("%s %s on %s: %s (%s)%s", c.Commit, c.Metric, r.shownConfig(c.Config), pct(c.DeltaPct), pIs(c.P), note))})
	}
	if brief {
		if len(regs) > 0 {
			s.add(&List{[]Item{{Text: plain(fmt.Sprintf("Regressions in gated metrics: %d", len(regs))), Sub: regs}}})
		}
		if n := len(r.Incomplete); n > 0 {
			s.add(&List{[]Item{{Text: plain(fmt.Sprintf("Incomplete: %d (the run could not answer there)", n)), Sub: r.incompleteItems(10, false)}}})
		}
		if r.AA != nil {
			s.text("A/A: " + r.AA.Note)
		}
		if ungated > 0 {
			s.add(&List{[]Item{{Text: plain(fmt.Sprintf("Not gated: %s, reported only (report.md's Metric tiers says which and why)", metricsN(ungated)))}}})
		}
		return nil
	}
	if ungated > 0 {
		items = append(items, Item{Text: Inline{{Text: fmt.Sprintf("not gated: %s, reported only (", metricsN(ungated))}, {Text: "Metric tiers", Link: "#metric-tiers"}, {Text: " says which and why)"}}})
	}
	if r.AA != nil {
		items = append(items, Item{Text: plain("A/A: " + r.AA.Note)})
	}
	if len(regs) > 0 {
		items = append(items, Item{Text: Inline{strong(fmt.Sprintf("regressions in gated metrics: %d", len(regs)))}, Sub: regs})
	}
	return items
}

// metricsN is "1 metric", "9 metrics".
func metricsN(n int) string {
	if n == 1 {
		return "1 metric"
	}
	return fmt.Sprintf("%d metrics", n)
}

// sameWithoutSignal counts commit c's gated rows called same that have
// no signal (0 against 0, one constant): the summary says how many of
// its same they are.
func (r *Report) sameWithoutSignal(c string) int {
	n := 0
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Commit == c && st.NoSignal != "" && st.Verdict == results.Same && st.Role() == results.RoleGated {
				n++
			}
		}
	}
	return n
}

// changeBlocks are the called changes the overview does not show (it
// shows every called change of a row with values, so this is rarely
// anything): a table, or (brief) a list, gated first, most significant
// first.
func (r *Report) changeBlocks(brief bool) []Block {
	var s sect
	shown := map[[3]string]bool{}
	for _, c := range r.others() {
		for _, o := range r.overviewRows(c) {
			shown[[3]string{c, o.config, o.metric}] = true
		}
	}
	var rest []Change
	for _, c := range r.Changes {
		if !shown[[3]string{c.Commit, c.Config, c.Metric}] {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	if brief {
		s.heading(2, "Other changes")
		var items []Item
		for i, c := range rest {
			if i == 15 {
				items = append(items, Item{Text: plain(fmt.Sprintf("... %d more", len(rest)-15))})
				break
			}
			gated := ""
			if !c.Gated {
				gated = ", not gated"
			}
			items = append(items, Item{Text: plain(fmt.Sprintf("%s %s on %s: %s (%s) %s%s", c.Commit, c.Metric, r.shownConfig(c.Config), pct(c.DeltaPct), pIs(c.P), c.Verdict, gated))})
		}
		s.add(&List{items})
		return s
	}
	s.text("Other changes (not in the overview):")
	t := &Table{Head: []string{"commit", "configuration", "metric", "Δ", "p", "verdict", "gated"}}
	for i, c := range rest {
		if i == 15 {
			t.Rows = append(t.Rows, cells("…", fmt.Sprintf("%d more", len(rest)-15), "", "", "", "", ""))
			break
		}
		d := txt(pct(c.DeltaPct))
		d.Value, d.Verdict, d.Unit = c.DeltaPct, c.Verdict, "%"
		t.Rows = append(t.Rows, []Cell{txt(c.Commit), txt(r.shownConfig(c.Config)), txt(c.Metric), d, txt(pnum(c.P)), txt(string(c.Verdict)), txt(yes(c.Gated))})
	}
	s.add(t)
	return s
}
