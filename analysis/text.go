package analysis

import (
	"fmt"
	"io"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// textWidth is the width prose is wrapped to: a mail to pgsql-hackers
// is read at 80 columns.
const textWidth = 76

// configBlocks are the text report's tables: per workload, commit and
// configuration against the baseline in benchstat's shape, the metrics
// as rows, each commit's median, the change and the verdict, within 80
// columns.
func (r *Report) configBlocks() []Block {
	var s sect
	for _, wl := range r.Plan.Options.Workloads {
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
		for _, c := range r.others() {
			for _, id := range configs {
				t := &Table{Head: []string{"", r.Baseline, c, "Δ", "verdict"}}
				var notes noSignalMarks
				for _, row := range byConfig[id] {
					base, cand := r.pair(row, c)
					if base == nil || cand == nil {
						continue
					}
					d, v := deltaCell(*cand, deltaCI(*cand, -1)), verdictCell(*cand, shortVerdict(*cand))
					if why := noSignal(*base, *cand); why != "" {
						d, v = txt("—"+notes.mark(why)), txt("— no signal")
						d.Why = why
					}
					t.Rows = append(t.Rows, []Cell{txt(row.Metric), medianCell(*base), medianCell(*cand), d, v})
					t.Rows[len(t.Rows)-1][1].Text = plain(textMedian(*base))
					t.Rows[len(t.Rows)-1][2].Text = plain(textMedian(*cand))
				}
				s.add(&Heading{3, fmt.Sprintf("%s: %s vs %s", r.shownConfig(id), c, r.Baseline)}, t)
				s.add(notes.footnotes()...)
			}
		}
	}
	return s
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

// shortVerdict is a verdict in a few characters: "unknown <63%"
// ("unknown, no size" where it could detect no change of any size),
// "same ±5%", "worse"; "*" marks one not gated.
func shortVerdict(st Stat) string {
	v := string(st.Verdict)
	switch st.Verdict {
	case results.Unknown:
		if st.Behind {
			v = "untested"
		} else if excludesZero(st) {
			v = "moved"
		} else if isFinite(st.DetectablePct) && st.DetectablePct < maxShownPct {
			v += " <" + pctAbs(st.DetectablePct)
		} else if isFinite(st.DetectablePct) {
			v += ", no size" // it could detect no change of any size
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

// legendBlocks explain the marks of the text tables.
func (r *Report) legendBlocks() []Block {
	s := sect{&Paragraph{plain("Medians of each commit's repeats; Δ and the verdict compare with " + r.Baseline + " (unknown <X: changes smaller than X could not have been detected; same ±X: within ±X; untested: a secondary metric, tested only where the configuration's primary (tps in a closed loop; in an open loop the workload's declared primary, else latency_p99_ms) was called better or worse). * reported only, not gated.")}}
	if anyDisagree(r.Rows) {
		s.add(&Footnote{DisagreeNote})
	}
	return s
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
