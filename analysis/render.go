package analysis

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// WriteMarkdown writes the report for humans (Doc's blocks as
// markdown): the answer, then why, then the tables, then how it was
// made.
func (r *Report) WriteMarkdown(w io.Writer) error {
	writeMarkdown(w, r.blocks(false))
	return nil
}

// WriteText writes the report as aligned plain text to paste into a
// mail (pgsql-hackers) or show on a terminal: the same sections as the
// markdown, briefer, lines within 80 columns where the names allow.
func (r *Report) WriteText(w io.Writer) error {
	writeText(w, r.blocks(true))
	return nil
}

// WriteTextSummary writes what the console shows at the end of a run: a
// line per commit naming what changed (AnswerLines), then the text
// report's Summary section.
func (r *Report) WriteTextSummary(w io.Writer) {
	for _, l := range r.AnswerLines() {
		wrap(w, "", "    ", l)
	}
	fmt.Fprintln(w)
	writeText(w, r.summaryBlocks(true))
}

// Doc is the report as blocks, as report.md has them: what the
// dashboard's run page reads.
func (r *Report) Doc() Doc { return Doc{r.blocks(false)} }

// blocks are the report's sections in order; brief is the text
// report's selection (a mail's length: per-configuration tables, no
// plots or tiers).
func (r *Report) blocks(brief bool) []Block {
	var s sect
	if brief {
		s.heading(1, "abtest: "+strings.Join(r.others(), ", ")+" vs "+r.Baseline)
	} else {
		s.heading(1, "abtest report")
	}
	var answers []Item
	for _, l := range r.AnswerLines() {
		answers = append(answers, Item{Text: plain(l)})
	}
	s.add(&List{answers})
	s.add(r.overviewBlocks(brief)...)
	s.add(r.summaryBlocks(brief)...)
	s.add(r.changeBlocks(brief)...)
	s.add(r.waitShiftBlocks()...)
	s.add(r.timeWentBlocks(brief)...)
	s.add(r.instructionBlocks(brief)...)
	s.add(r.sweepBlocks(brief)...)
	s.add(r.conditionBlocks(brief)...)
	if brief {
		s.add(r.configBlocks()...)
		s.add(r.legendBlocks()...)
	} else {
		for _, wl := range r.Plan.Options.Workloads {
			s.add(r.workloadBlocks(wl)...)
		}
	}
	s.add(r.howRanBlocks()...)
	s.add(r.provenanceBlocks(brief)...)
	if !brief {
		s.add(r.serverBlocks(r.servers)...)
		s.add(r.tierBlocks()...)
	}
	s.add(r.leftOutBlocks(brief)...)
	s.add(r.warningBlocks()...)
	if !brief {
		s.add(r.plotBlocks()...)
		if r.Trend != nil {
			s.add(r.Trend.blocks()...)
		}
	}
	return s
}

// others are the commits compared with the baseline.
func (r *Report) others() []string {
	var out []string
	for _, c := range r.Commits {
		if c != r.Baseline {
			out = append(out, c)
		}
	}
	return out
}

// provenanceBlocks say what ran where, how, and how it was judged.
func (r *Report) provenanceBlocks(brief bool) []Block {
	p := r.Plan
	o := p.Options
	var s sect
	if brief {
		s.heading(2, "Setup")
	} else {
		s.heading(2, "Provenance")
		s.add(r.provenanceTable())
	}
	var items []Item
	item := func(f string, a ...any) { items = append(items, Item{Text: plain(fmt.Sprintf(f, a...))}) }
	if brief {
		for _, c := range p.Commits {
			what := c.What()
			if c.Version != "" {
				what += ", " + shortVersion(c.Version)
			}
			item("%s: %s (%s build)", c.Label, what, text.OrDash(c.BuildType))
		}
	}
	h := p.Host
	host := fmt.Sprintf("host: %s, %s, %d CPUs, %d MB, kernel %s", text.OrDash(h.Hostname), text.OrDash(h.CPU), h.NProc, h.MemoryMB, text.OrDash(h.Kernel))
	var knobs []string
	for _, kv := range [][2]string{{"governor", h.Governor}, {"turbo", h.Turbo}, {"THP", h.THP}, {"huge pages", h.HugePages}} {
		if kv[1] != "" {
			knobs = append(knobs, kv[0]+" "+kv[1])
		}
	}
	if brief {
		host = fmt.Sprintf("host: %s, %d CPUs, %d MB, kernel %s", text.OrDash(h.CPU), h.NProc, h.MemoryMB, text.OrDash(h.Kernel))
	} else if len(knobs) > 0 {
		host += fmt.Sprintf(" (%s)", strings.Join(knobs, ", "))
	}
	item("%s", host)
	if r.Observer != nil {
		item("%s", r.Observer.Line())
	}
	var settings []string
	for _, st := range o.Settings {
		settings = append(settings, st.Name+"="+strings.Join(st.Values, ","))
	}
	if brief {
		item("pgbench: workloads %s, clients %s, server CPUs %s, settings %s; %d repeats of %.0f s after %.0f s warm-up, %s protocol, %s order; %d of %d cells recorded",
			strings.Join(o.Workloads, ","), ints(o.Clients), orAll(ints(o.CPUs)), text.OrDash(strings.Join(settings, " ")), o.Repeats, o.DurationS, o.WarmupS, o.Protocol, o.Order, len(r.records), r.PlannedCells)
		item("statistics: %s", r.method())
	} else {
		m := fmt.Sprintf("matrix: workloads %s; clients %s; server CPUs %s; settings %s; %d repeats of %.0f s after %.0f s warm-up; protocol %s", strings.Join(o.Workloads, ","), ints(o.Clients), orAll(ints(o.CPUs)), text.OrDash(strings.Join(settings, " ")), o.Repeats, o.DurationS, o.WarmupS, o.Protocol)
		if o.SleepMS > 0 {
			m += fmt.Sprintf(", think time %d ms", o.SleepMS)
		}
		item("%s", m)
		item("order: %s (seed %d), shard %s; %d of %d cells recorded", o.Order, o.Seed, p.Shard, len(r.records), r.PlannedCells)
		st := "statistics: " + r.method()
		if sq := r.Sequential; sq != nil {
			st += fmt.Sprintf(", α and the equivalence level spent over sequential looks every %d blocks up to %d repeats (Pocock-type spending, union bound)", sq.Step, sq.MaxRepeats)
		}
		item("%s", st)
		item("abtest %s; results: %s", text.OrDash(p.AbtestVersion), strings.Join(r.Dirs, ", "))
	}
	for _, f := range p.Doctor {
		if f.Status == results.FindingOK {
			continue
		}
		if brief {
			item("doctor: %s %s: %s (%s)", f.Status, f.Check, f.Value, f.Why)
		} else {
			items = append(items, Item{Text: Inline{{Text: "doctor: "}, strong(string(f.Status)), {Text: fmt.Sprintf(" %s: %s (%s; fix: %s)", f.Check, f.Value, f.Why, f.Fix)}}})
		}
	}
	s.add(&List{items})
	return s
}

// provenanceTable is a row per commit: what was built from what.
func (r *Report) provenanceTable() *Table {
	p := r.Plan
	t := &Table{Head: []string{"commit", "ref", "sha", "patches", "build", "fingerprint", "PostgreSQL"}}
	for _, c := range p.Commits {
		ref, sha := c.Ref, text.Short(c.SHA)
		if c.Install != "" {
			ref, sha = "install "+c.Install, "-"
		}
		var patches []string
		for _, pa := range c.Patches {
			patches = append(patches, fmt.Sprintf("%s (sha256 %s)", filepath.Base(pa.File), text.Short(pa.SHA256)))
		}
		mark := ""
		if c.Label == r.Baseline {
			mark = " (baseline)"
		}
		t.Rows = append(t.Rows, cells(c.Label+mark, ref, sha, text.OrDash(strings.Join(patches, ", ")), c.BuildType+" "+c.Build, text.OrDash(text.Short(c.Fingerprint)), text.OrDash(c.Version)))
	}
	return t
}

// cells are text cells.
func cells(ts ...string) []Cell {
	out := make([]Cell, len(ts))
	for i, t := range ts {
		out[i] = txt(t)
	}
	return out
}

// shownConfig is a configuration (or cell) id as the report shows it
// (results.Plan.ShownID).
func (r *Report) shownConfig(id string) string { return r.Plan.ShownID(id) }

// workloadBlocks show a workload's metrics in one table (a row per
// configuration and metric), then its cells' details.
func (r *Report) workloadBlocks(wl string) []Block {
	var s sect
	s.heading(2, "Workload "+wl)
	id := results.EscapeID(wl)
	t := &Table{Head: []string{"configuration", "metric"}}
	for _, c := range r.Commits {
		if c == r.Baseline {
			t.Head = append(t.Head, c)
		} else {
			t.Head = append(t.Head, c, "Δ", "p", "verdict")
		}
	}
	var all []Row
	for _, m := range r.tableMetrics() {
		all = append(all, r.rowsFor(id, m)...)
	}
	var notes noSignalMarks
	for _, row := range all {
		def, _ := r.Plan.Metrics.Get(row.Metric)
		line := []Cell{txt(strings.TrimPrefix(row.Config, id+"/")), txt(row.Metric + " (" + def.Unit + ")")}
		var base *Stat
		for i, st := range row.Stats {
			line = append(line, medianCell(st))
			if st.Commit == r.Baseline {
				base = &row.Stats[i]
				continue
			}
			if base != nil {
				if why := noSignal(*base, st); why != "" {
					d := txt("—" + notes.mark(why))
					d.Why = why
					line = append(line, d, txt("—"), txt("—"))
					continue
				}
			}
			line = append(line, deltaCell(st, deltaCI(st, 2)), txt(pval(st)), verdictCell(st, verdictText(st)))
		}
		t.Rows = append(t.Rows, line)
	}
	if len(t.Rows) > 0 {
		s.add(t)
	}
	s.add(notes.footnotes()...)
	if anyDisagree(all) {
		s.add(&Footnote{DisagreeNote})
	}
	s.add(r.cellDetailBlocks(wl)...)
	return s
}

// tableMetrics are the metrics of the per-workload tables: the built-in
// ones of results.TableMetrics, then those the workloads declare.
func (r *Report) tableMetrics() []string {
	out := slices.Clone(results.TableMetrics)
	for _, m := range r.Plan.Metrics {
		if _, builtin := results.Builtin.Get(m.Name); !builtin {
			out = append(out, m.Name)
		}
	}
	return out
}

// medianCell is a commit's median with its interval.
func medianCell(st Stat) Cell {
	c := txt(medianCI(st))
	c.Value, c.Lo, c.Hi = st.Median, st.Lo, st.Hi
	if st.N == 0 {
		c.Value = math.NaN()
	}
	return c
}

// deltaCell is a change as shown, with its number and interval.
func deltaCell(st Stat, shown string) Cell {
	c := txt(shown)
	c.Value, c.Lo, c.Hi, c.Verdict, c.Unit = st.DeltaPct, st.DeltaLo, st.DeltaHi, st.Verdict, "%"
	return c
}

// verdictCell is a verdict as shown.
func verdictCell(st Stat, shown string) Cell {
	c := txt(shown)
	c.Verdict = st.Verdict
	return c
}

// tierBlocks explain each metric's tier.
func (r *Report) tierBlocks() []Block {
	var s sect
	bar := "a metric's bar is its threshold, whatever the noise: where a configuration's interval is too wide for it, the verdict is unknown, with the repeats that would fit it"
	if r.Bar == BarAuto {
		bar = fmt.Sprintf("under --bar auto, measured noise raises a metric's bar in each configuration to max(threshold, %.2g × the baseline's robust CV there)", noiseK)
	}
	s.heading(2, "Metric tiers")
	s.text(fmt.Sprintf("Pooled over the configurations from %s's own repeats: deterministic counters are gated exactly; %s; only a metric too noisy for any verdict at this number of pairs, or a descriptive one, is reported and not gated.", r.Baseline, bar))
	t := &Table{Head: []string{"metric", "tier", "gated", "median spread", "threshold", "why"}}
	for _, x := range r.Tiers {
		t.Rows = append(t.Rows, cells(x.Metric, string(x.Tier), yes(x.Gated), pctAbs(x.SpreadPct), fmt.Sprintf("%.3g%%", x.ThresholdPct), x.Why))
	}
	s.add(t)
	return s
}

// leftOutBlocks list the saturated and failed cells, with the failures'
// log tails (not in brief).
func (r *Report) leftOutBlocks(brief bool) []Block {
	if len(r.Failed)+len(r.Saturated) == 0 {
		return nil
	}
	var items []Item
	for _, c := range r.Saturated {
		items = append(items, Item{Text: plain(r.shownConfig(c.Cell) + ": saturated (" + c.Error + ")")})
	}
	for _, c := range r.Failed {
		it := Item{Text: plain(fmt.Sprintf("%s: %s: %s", r.shownConfig(c.Cell), c.Status, c.Error))}
		if !brief {
			it.Code = c.Tail
		}
		items = append(items, it)
	}
	return []Block{&Heading{2, "Cells not in the statistics"}, &List{items}}
}

// warningBlocks list the warnings of the input and of the analysis.
func (r *Report) warningBlocks() []Block {
	if len(r.Warnings) == 0 {
		return nil
	}
	var items []Item
	for _, w := range r.Warnings {
		items = append(items, Item{Text: plain(w)})
	}
	return []Block{&Heading{2, "Warnings"}, &List{items}}
}

// plotBlocks show the plots, and say which were not drawn and why.
func (r *Report) plotBlocks() []Block {
	if len(r.Plots)+len(r.PlotNotes) == 0 {
		return nil
	}
	s := sect{&Heading{2, "Plots"}}
	for _, pl := range r.Plots {
		s.add(&Plot{strings.TrimSuffix(filepath.Base(pl), ".svg"), pl})
	}
	var items []Item
	for _, n := range r.PlotNotes {
		items = append(items, Item{Text: plain(n)})
	}
	if len(items) > 0 {
		s.add(&List{items})
	}
	return s
}

// cellDetailBlocks show pg_stat_statements, wait events and probe
// counters per commit for the workload: medians over the ok cells.
func (r *Report) cellDetailBlocks(wl string) []Block {
	by := r.cellAggs(wl)
	if len(by) == 0 {
		return nil
	}
	t := &Table{Head: []string{"commit", "entries", "hot", "cold", "deallocs", "db time", "top waits", "rows ins/upd/del per tx", "WAL records per tx"}}
	var notes noSignalMarks
	for _, c := range r.Commits {
		a := by[c]
		if a == nil {
			continue
		}
		dbt, waits := "-", text.OrDash(topWaits(a.waits, a.active))
		if a.total > 0 {
			dbt = fmt.Sprintf("%.1f%%", 100*float64(a.active)/float64(a.total))
		}
		if a.total > 0 && !shareShown(a.total) {
			dbt = "—" + notes.mark(fmt.Sprintf("a share of fewer than %d samples is not known to ±10 points", minShareSamples))
		}
		if a.active > 0 && !shareShown(a.active) {
			waits = fmt.Sprintf("—%s (%d active samples)", notes.mark(fmt.Sprintf("a share of fewer than %d samples is not known to ±10 points", minShareSamples)), a.active)
		}
		per := func(x float64) string {
			if a.tx == 0 {
				return "-"
			}
			return num(x / a.tx)
		}
		t.Rows = append(t.Rows, cells(c, med(a.entries), med(a.hot), med(a.cold), med(a.dealloc), dbt, waits, per(a.ins)+"/"+per(a.upd)+"/"+per(a.del), per(a.walRec)))
	}
	return append([]Block{&Heading{3, fmt.Sprintf("pg_stat_statements, wait events and probes (all cells of %s)", wl)}, t}, notes.footnotes()...)
}

// cellAgg sums a commit's ok cells of a workload.
type cellAgg struct {
	entries, hot, cold, dealloc []float64
	waits                       map[string]int
	active, total               int
	ins, upd, del, walRec, tx   float64
}

// cellAggs are the workload's cells summed per commit.
func (r *Report) cellAggs(wl string) map[string]*cellAgg {
	by := map[string]*cellAgg{}
	for _, rec := range r.records {
		if rec.Workload != wl || rec.Status != results.StatusOK {
			continue
		}
		a := by[rec.Commit]
		if a == nil {
			a = &cellAgg{waits: map[string]int{}}
			by[rec.Commit] = a
		}
		if rec.Final != nil {
			a.entries = append(a.entries, float64(rec.Final.Entries))
			a.hot = append(a.hot, float64(rec.Final.Hot))
			a.cold = append(a.cold, float64(rec.Final.Cold))
			a.dealloc = append(a.dealloc, float64(rec.Final.Deallocs))
		}
		if rec.Waits != nil {
			for k, v := range rec.Waits.ByEvent {
				a.waits[k] += v
			}
			a.active += rec.Waits.Active
			a.total += rec.Waits.Active + rec.Waits.Idle
		}
		if rec.Probe != nil {
			a.tx += rec.Metrics.Value(results.MetricTPS) * rec.DurationS
			a.ins += float64(rec.Probe.Tables.Ins)
			a.upd += float64(rec.Probe.Tables.Upd)
			a.del += float64(rec.Probe.Tables.Del)
			if rec.Probe.WAL != nil {
				a.walRec += float64(rec.Probe.WAL.Records)
			}
		}
	}
	return by
}

// topWaits is the three largest wait events' shares of the active
// samples, and how many samples they rest on (a share of few samples is
// not a finding).
func topWaits(waits map[string]int, active int) string {
	type kv struct {
		k string
		v int
	}
	var ws []kv
	for k, v := range waits {
		ws = append(ws, kv{k, v})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].v > ws[j].v || ws[i].v == ws[j].v && ws[i].k < ws[j].k })
	var top []string
	for i, x := range ws {
		if i == 3 {
			break
		}
		top = append(top, fmt.Sprintf("%s %.0f%%", x.k, 100*float64(x.v)/float64(max(active, 1))))
	}
	if len(top) == 0 {
		return ""
	}
	return strings.Join(top, ", ") + fmt.Sprintf(", of %d active samples", active)
}

// rowsFor are metric's rows in the configurations whose id begins with
// the workload id wl (results.EscapeID of its name).
func (r *Report) rowsFor(wl, metric string) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Metric == metric && strings.HasPrefix(row.Config, wl+"/") {
			out = append(out, row)
		}
	}
	return out
}

func medianCI(st Stat) string {
	if st.N == 0 {
		return "-"
	}
	if !isFinite(st.Lo) || !isFinite(st.Hi) || st.Median == 0 {
		return fmt.Sprintf("%s (n=%d)", num(st.Median), st.N)
	}
	half := 100 * math.Max(st.Hi-st.Median, st.Median-st.Lo) / math.Abs(st.Median)
	return fmt.Sprintf("%s ±%.1f%%", num(st.Median), half)
}

func pval(st Stat) string {
	if st.N == 0 {
		return "-"
	}
	return pnum(st.P)
}

func pnum(p float64) string {
	switch {
	case !isFinite(p):
		return "n/a"
	case p < 0.0001:
		return "< 0.0001"
	}
	return fmt.Sprintf("%.2g", p)
}

// pIs says a p-value in a sentence: "p = 0.015", "p < 0.0001", or
// "exact" for a comparison without one.
func pIs(p float64) string {
	switch {
	case !isFinite(p):
		return "exact"
	case p < 0.0001:
		return "p < 0.0001"
	}
	return "p = " + pnum(p)
}

func isFinite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

// deltaCI writes the change and, when there is one, its 95 % interval
// with prec decimals (none for prec < 0: the text tables, whose
// intervals are in the markdown and the JSON); from a baseline of 0, the
// absolute difference; a change whose sign contradicts the medians
// beside it is marked with DisagreeMark (explained under the table,
// DisagreeNote).
func deltaCI(st Stat, prec int) string {
	if st.N == 0 {
		return "-"
	}
	if math.IsNaN(st.DeltaPct) && st.DeltaAbs != 0 && isFinite(st.DeltaAbs) {
		if prec < 0 {
			return signed(st.DeltaAbs) + " abs"
		}
		return signed(st.DeltaAbs) + " (absolute, from 0)"
	}
	s := pct(st.DeltaPct)
	if st.MediansDisagree {
		s += DisagreeMark
	}
	if prec >= 0 && isFinite(st.DeltaLo) && isFinite(st.DeltaHi) {
		s += fmt.Sprintf(" [%+.*f, %+.*f]", prec, st.DeltaLo, prec, st.DeltaHi)
	}
	return s
}

// DisagreeMark marks a Δ whose sign contradicts the medians shown beside
// it (MediansDisagree), and DisagreeNote says why under the table: in
// every format, the dashboard's included.
const (
	DisagreeMark = "†"
	DisagreeNote = "† Δ is the paired estimate (the geometric mean of the per-pair ratios), which the verdict judges; the medians beside it are each commit's own, and with pairs that scatter their ratio differs from Δ (here by more than a quarter of the bar, or in sign)."
)

// anyDisagree reports whether a row's Δ carries DisagreeMark.
func anyDisagree(rows []Row) bool {
	for _, row := range rows {
		for _, st := range row.Stats {
			if st.MediansDisagree {
				return true
			}
		}
	}
	return false
}

// barRule says where the bars came from.
func (r *Report) barRule() string {
	if r.Bar == BarAuto {
		return fmt.Sprintf("--bar auto: max(its threshold, %.2g × the baseline's spread in the configuration)", noiseK)
	}
	return "its threshold, never widened by noise"
}

// verdictText is a stat's verdict with what qualifies it.
func verdictText(st Stat) string {
	v := string(st.Verdict)
	switch st.Verdict {
	case results.Unknown:
		if st.Behind {
			v += " (not tested: the primary was not called a change)"
		} else if excludesZero(st) {
			v = "moved: its interval excludes 0"
		} else if isFinite(st.DetectablePct) {
			v += " (" + cannotDetect(st.DetectablePct) + ")"
		}
	case results.Same:
		v += " (±" + pctAbs(st.MinEffectPct) + ")"
	case results.Incomplete:
		v += fmt.Sprintf(" (n=%d)", st.N)
	}
	if st.Blocks > 0 {
		v += fmt.Sprintf(", after %d blocks", st.Blocks)
	}
	if st.Gated && st.Verdict != results.VerdictBaseline {
		return v
	}
	return v + ", not gated"
}

// num writes a value with three significant digits (whole numbers from
// 1000 on), never in exponent notation: 16460, 61.9, 0.0000335.
func num(x float64) string {
	a := math.Abs(x)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", x)
	case !isFinite(x):
		return "n/a"
	}
	scale := math.Pow(10, float64(2-int(math.Floor(math.Log10(a)))))
	return strconv.FormatFloat(math.Round(x*scale)/scale, 'f', -1, 64)
}

// signed is num with its sign.
func signed(x float64) string {
	if x > 0 {
		return "+" + num(x)
	}
	return num(x)
}

// pct writes a change in percent; a change from 0 has no size in
// percent and says so (never ∞).
func pct(d float64) string {
	switch {
	case math.IsNaN(d):
		return "n/a"
	case math.IsInf(d, 0):
		return "from 0"
	}
	return fmt.Sprintf("%+.2f%%", d)
}

func med(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return num(Median(xs))
}

func ints(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ",")
}

func orAll(s string) string {
	if s == "" {
		return "all (not pinned)"
	}
	return s
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// maxShownPct is the largest percentage a verdict says: a detectable
// change beyond it (two repeats of a spread metric gave 10^150 %) is
// "any size".
const maxShownPct = 1000

// pctAbs writes a size in percent, whole from 100 % on (never in
// exponent notation); "any size" when it has none.
func pctAbs(x float64) string {
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x) || x >= maxShownPct:
		return "any size"
	case x >= 100:
		return fmt.Sprintf("%.0f%%", x)
	}
	return fmt.Sprintf("%.3g%%", x)
}

// cannotDetect says what a test's smallest detectable change mde lets
// it claim: "could not detect < 12.2%", or, when it has no size (beyond
// maxShownPct, or none), that it could detect no change of any size
// ("could not detect < any size" read as nonsense).
func cannotDetect(mde float64) string {
	if !isFinite(mde) || mde >= maxShownPct {
		return "could detect no change of any size"
	}
	return "could not detect < " + pctAbs(mde)
}

// method says how the verdicts were reached, for the report's setup.
func (r *Report) method() string {
	return fmt.Sprintf("median with 95%% confidence interval per commit; against %s, the two cells of each interleaved block are a pair: "+
		"paired t test of the per-pair log ratios, the change their geometric mean with its 95%% interval (same is decided on the %.0f%% one: "+
		"two one-sided tests at %v); Mann–Whitney U when blocks are incomplete; event counts by the rate of their totals (quasi-Poisson: scaled by the cells' dispersion). "+
		"Per commit, one family at α = %v (family-wise): each configuration has a primary metric that fits it (a closed loop tps, "+
		"an open loop at a fixed offered rate the primary its workload declares, else latency_p99_ms; instruction cells instructions per transaction; "+
		"--primary overrides), tested in each configuration and, pooled over the configurations that share it, at once (the run-level answer); "+
		"the other gated metrics only behind their configuration's primary; "+
		"gated event counts (failed transactions, pgss_deallocs) in a family of their own at α, taking none of the primary's; "+
		"report-only metrics say higher or lower, in a family of their own. better/worse: significant and beyond the metric's bar (%s); "+
		"same: the interval lies within ±bar; unknown: neither", r.Baseline, 100*(1-2*EquivalenceAlpha(r.Alpha)), EquivalenceAlpha(r.Alpha), r.Alpha, r.barRule())
}
