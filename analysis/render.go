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

// WriteMarkdown writes the report for humans: provenance, summary,
// per-workload tables, tiers, cells that failed, warnings, plots.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "# abtest report\n\n")
	// The answer, then why, then the tables, then how it was made.
	r.writeSummary(w)
	r.writeSummaryNotes(w)
	r.writeChanges(w)
	r.writeWaitShifts(w)
	r.writeTimeWent(w)
	r.writeInstructions(w)
	r.writeSweeps(w)
	r.writeConditions(w)
	for _, wl := range r.Plan.Options.Workloads {
		r.writeWorkload(w, wl)
	}
	fmt.Fprintln(w)
	r.writeHowRan(w)
	r.writeProvenance(w)
	r.writeServers(w, r.servers)
	r.writeTiers(w)
	r.writeLeftOut(w)
	r.writeWarnings(w)
	r.writePlotList(w)
	if r.Trend != nil {
		r.Trend.writeMarkdown(w)
	}
	return nil
}

// writeProvenance says what ran where, how, and how it was judged.
func (r *Report) writeProvenance(w io.Writer) {
	p := r.Plan
	o := p.Options
	fmt.Fprintf(w, "## Provenance\n\n")
	fmt.Fprintf(w, "| commit | ref | sha | patches | build | fingerprint | PostgreSQL |\n|---|---|---|---|---|---|---|\n")
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
		fmt.Fprintf(w, "| %s%s | %s | %s | %s | %s %s | %s | %s |\n", c.Label, mark, ref, sha, text.OrDash(strings.Join(patches, ", ")), c.BuildType, c.Build, text.OrDash(text.Short(c.Fingerprint)), text.OrDash(c.Version))
	}
	h := p.Host
	fmt.Fprintf(w, "\n- host: %s, %s, %d CPUs, %d MB, kernel %s", text.OrDash(h.Hostname), text.OrDash(h.CPU), h.NProc, h.MemoryMB, text.OrDash(h.Kernel))
	var knobs []string
	for _, kv := range [][2]string{{"governor", h.Governor}, {"turbo", h.Turbo}, {"THP", h.THP}, {"huge pages", h.HugePages}} {
		if kv[1] != "" {
			knobs = append(knobs, kv[0]+" "+kv[1])
		}
	}
	if len(knobs) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(knobs, ", "))
	}
	fmt.Fprintln(w)
	if r.Observer != nil {
		fmt.Fprintf(w, "- %s\n", r.Observer.Line())
	}
	var settings []string
	for _, s := range o.Settings {
		settings = append(settings, s.Name+"="+strings.Join(s.Values, ","))
	}
	fmt.Fprintf(w, "- matrix: workloads %s; clients %s; server CPUs %s; settings %s; %d repeats of %.0f s after %.0f s warm-up; protocol %s", strings.Join(o.Workloads, ","), ints(o.Clients), orAll(ints(o.CPUs)), text.OrDash(strings.Join(settings, " ")), o.Repeats, o.DurationS, o.WarmupS, o.Protocol)
	if o.SleepMS > 0 {
		fmt.Fprintf(w, ", think time %d ms", o.SleepMS)
	}
	fmt.Fprintf(w, "\n- order: %s (seed %d), shard %s; %d of %d cells recorded\n", o.Order, o.Seed, p.Shard, len(r.records), r.PlannedCells)
	fmt.Fprintf(w, "- statistics: %s", r.method())
	if sq := r.Sequential; sq != nil {
		fmt.Fprintf(w, ", spent over sequential looks every %d blocks up to %d repeats (Pocock-type spending, union bound)", sq.Step, sq.MaxRepeats)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "- abtest %s; results: %s\n", text.OrDash(p.AbtestVersion), strings.Join(r.Dirs, ", "))
	for _, f := range p.Doctor {
		if f.Status != results.FindingOK {
			fmt.Fprintf(w, "- doctor: **%s** %s: %s (%s; fix: %s)\n", f.Status, f.Check, f.Value, f.Why, f.Fix)
		}
	}
	fmt.Fprintln(w)
}

// writeSummary lists where the run could not answer, then each commit's
// answer.
func (r *Report) writeSummary(w io.Writer) {
	fmt.Fprintf(w, "## Summary\n\n")
	if n := len(r.Incomplete); n > 0 {
		fmt.Fprintf(w, "- **incomplete: %d** (the run could not answer there; this gates)\n", n)
		for i, in := range r.Incomplete {
			if i == 20 {
				fmt.Fprintf(w, "  - … %d more\n", n-20)
				break
			}
			what := mdCell(r.shownConfig(in.Config))
			if in.Metric != "" {
				what += " " + in.Metric
			}
			gated := ""
			if !in.Gated {
				gated = " (not gated)"
			}
			fmt.Fprintf(w, "  - %s %s: %s%s\n", in.Commit, what, in.Why, gated)
		}
	}
	for _, sm := range r.Summaries {
		line := fmt.Sprintf("- **%s** vs %s: ", sm.Commit, r.Baseline)
		if sm.NoChangePct > 0 {
			line += fmt.Sprintf("**no change ≥ %.3g%%** in any gated metric; ", sm.NoChangePct)
		}
		line += fmt.Sprintf("%d better, %d worse, %d same, %d unknown, %d incomplete", sm.Better, sm.Worse, sm.Same, sm.Unknown, sm.Incomplete)
		if sm.Behind > 0 {
			line += fmt.Sprintf(" (and %d secondary tests not run: their configuration's primary was not called better or worse)", sm.Behind)
		}
		if sm.Higher+sm.Lower > 0 {
			line += fmt.Sprintf("; report-only: %d higher, %d lower", sm.Higher, sm.Lower)
		}
		fmt.Fprintln(w, line)
		if sm.GatedUnknown > 0 && !math.IsInf(sm.DetectablePct, 0) {
			fmt.Fprintf(w, "  - unknown: this run could not have detected changes smaller than %s in the gated metrics (at each test's level, 80%% power)\n", pctAbs(sm.DetectablePct))
		}
		if sm.Unreachable > 0 {
			fmt.Fprintf(w, "  - %d gated tests have too few pairs to ever reach their level: more repeats (or --until-decided) are needed for a verdict\n", sm.Unreachable)
		}
		fmt.Fprintf(w, "  - tests: %d gated tests at α = %v (the primaries first and the other gated metrics behind them in one family, event counts in their own), %d deterministic counters compared exactly, %d metrics judged as the one they are a function of\n", sm.Tests, r.Alpha, sm.Exact, sm.Mirrored)
		if line := r.blocksLine(sm); line != "" {
			fmt.Fprintf(w, "  - %s\n", line)
		}
		for _, g := range r.Geomeans {
			if g.Commit != sm.Commit {
				continue
			}
			fmt.Fprintf(w, "  - %s\n", g.Line(r.Alpha))
		}
	}
	if line := r.autoBarLine(); line != "" {
		fmt.Fprintf(w, "- %s\n", line)
	}
}

// blocksLine says, under a sequential design, how many blocks a commit's
// gated verdicts took: what --until-decided spent to decide.
func (r *Report) blocksLine(sm Summary) string {
	if r.Sequential == nil || sm.Blocks == 0 {
		return ""
	}
	return fmt.Sprintf("until-decided: the gated verdicts took up to %d blocks per configuration (%d planned, at most %d)", sm.Blocks, r.Plan.Options.Repeats, r.Sequential.MaxRepeats)
}

// writeSummaryNotes ends the summary: the metrics not gated, the A/A
// note and the regressions.
func (r *Report) writeSummaryNotes(w io.Writer) {
	var ungated []string
	for _, t := range r.Tiers {
		if !t.Gated {
			ungated = append(ungated, fmt.Sprintf("%s (%s)", t.Metric, t.Why))
		}
	}
	if len(ungated) > 0 {
		fmt.Fprintf(w, "- not gated: %s\n", strings.Join(ungated, "; "))
	}
	if r.AA != nil {
		fmt.Fprintf(w, "- A/A: %s\n", r.AA.Note)
	}
	if len(r.Regressions) > 0 {
		fmt.Fprintf(w, "- **regressions in gated metrics: %d**\n", len(r.Regressions))
		for _, c := range r.Regressions {
			note := ""
			if c.Note != "" {
				note = ": " + c.Note
			}
			fmt.Fprintf(w, "  - %s %s on %s: %s (%s)%s\n", c.Commit, c.Metric, mdCell(r.shownConfig(c.Config)), pct(c.DeltaPct), pIs(c.P), note)
		}
	}
}

// shownConfig is a configuration (or cell) id as the report shows it: its
// workload named as a reader knows it (shownWorkload), the rest as is.
func (r *Report) shownConfig(id string) string {
	for _, wl := range r.Plan.Options.Workloads {
		if e := results.EscapeID(wl); id == e || strings.HasPrefix(id, e+"/") {
			return r.shownWorkload(wl) + id[len(e):]
		}
	}
	return id
}

// shownWorkload is a workload's name decoded: a workload file's base
// name (file:/work/x/ticker.sql is ticker.sql), or its path when
// another workload file of the run has the same base name.
func (r *Report) shownWorkload(wl string) string {
	path, ok := strings.CutPrefix(wl, "file:")
	if !ok {
		return wl
	}
	base := filepath.Base(path)
	for _, o := range r.Plan.Options.Workloads {
		if op, ok := strings.CutPrefix(o, "file:"); ok && o != wl && filepath.Base(op) == base {
			return path
		}
	}
	return base
}

// writeChanges is the table of the biggest called changes.
func (r *Report) writeChanges(w io.Writer) {
	if len(r.Changes) > 0 {
		fmt.Fprintf(w, "\nBiggest changes:\n\n| commit | configuration | metric | Δ | p | verdict | gated |\n|---|---|---|---|---|---|---|\n")
		for i, c := range r.Changes {
			if i == 15 {
				fmt.Fprintf(w, "| … | %d more | | | | | |\n", len(r.Changes)-15)
				break
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(c.Commit), mdCell(r.shownConfig(c.Config)), c.Metric, pct(c.DeltaPct), pnum(c.P), c.Verdict, yes(c.Gated))
		}
	} else {
		fmt.Fprintf(w, "\nNo change was called.\n")
	}
}

// writeWorkload shows a workload's main metrics as tables by
// configuration, then its cells' details.
func (r *Report) writeWorkload(w io.Writer, wl string) {
	fmt.Fprintf(w, "\n## Workload %s\n\n", mdCell(wl))
	id := results.EscapeID(wl)
	for _, m := range r.tableMetrics() {
		if rows := r.rowsFor(id, m); len(rows) > 0 {
			r.writeMetricTable(w, id, m, rows)
		}
	}
	r.writeCellDetails(w, wl)
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

// writeMetricTable is a metric's table in a workload (wl its id, as
// configuration ids begin): a line per configuration, each commit's
// median and, against the baseline, its change and verdict.
func (r *Report) writeMetricTable(w io.Writer, wl, m string, rows []Row) {
	def, _ := r.Plan.Metrics.Get(m)
	fmt.Fprintf(w, "### %s (%s)\n\n", m, def.Unit)
	fmt.Fprintf(w, "| configuration |")
	for _, c := range r.Commits {
		if c == r.Baseline {
			fmt.Fprintf(w, " %s |", c)
		} else {
			fmt.Fprintf(w, " %s | Δ | p | verdict |", c)
		}
	}
	fmt.Fprintf(w, "\n|---|")
	for _, c := range r.Commits {
		if c == r.Baseline {
			fmt.Fprintf(w, "---|")
		} else {
			fmt.Fprintf(w, "---|---|---|---|")
		}
	}
	fmt.Fprintln(w)
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |", strings.TrimPrefix(row.Config, wl+"/"))
		for _, st := range row.Stats {
			fmt.Fprintf(w, " %s |", medianCI(st))
			if st.Commit != r.Baseline {
				fmt.Fprintf(w, " %s | %s | %s |", deltaCI(st, 2), pval(st), verdictText(st))
			}
		}
		fmt.Fprintln(w)
	}
	if anyDisagree(rows) {
		fmt.Fprintf(w, "\n%s\n", DisagreeNote)
	}
	fmt.Fprintln(w)
}

// writeTiers explains each metric's tier.
func (r *Report) writeTiers(w io.Writer) {
	bar := "a metric's bar is its threshold, whatever the noise: where a configuration's interval is too wide for it, the verdict is unknown, with the repeats that would fit it"
	if r.Bar == BarAuto {
		bar = fmt.Sprintf("under --bar auto, measured noise raises a metric's bar in each configuration to max(threshold, %.2g × the baseline's robust CV there)", noiseK)
	}
	fmt.Fprintf(w, "\n## Metric tiers\n\nPooled over the configurations from %s's own repeats: deterministic counters are gated exactly; %s; only a metric too noisy for any verdict at this number of pairs, or a descriptive one, is reported and not gated.\n\n| metric | tier | gated | median spread | threshold | why |\n|---|---|---|---|---|---|\n", r.Baseline, bar)
	for _, t := range r.Tiers {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3g%% | %s |\n", t.Metric, t.Tier, yes(t.Gated), pctAbs(t.SpreadPct), t.ThresholdPct, t.Why)
	}
}

// writeLeftOut lists the saturated and failed cells, with the failures'
// log tails.
func (r *Report) writeLeftOut(w io.Writer) {
	if len(r.Failed)+len(r.Saturated) > 0 {
		fmt.Fprintf(w, "\n## Cells not in the statistics\n\n")
		for _, c := range r.Saturated {
			fmt.Fprintf(w, "- %s: saturated (%s)\n", mdCell(r.shownConfig(c.Cell)), c.Error)
		}
		for _, c := range r.Failed {
			fmt.Fprintf(w, "- %s: %s: %s\n", mdCell(r.shownConfig(c.Cell)), c.Status, c.Error)
			if len(c.Tail) > 0 {
				fmt.Fprintf(w, "\n  ```\n")
				for _, l := range c.Tail {
					fmt.Fprintf(w, "  %s\n", l)
				}
				fmt.Fprintf(w, "  ```\n")
			}
		}
	}
}

// writeWarnings lists the warnings of the input and of the analysis.
func (r *Report) writeWarnings(w io.Writer) {
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "\n## Warnings\n\n")
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "- %s\n", s)
		}
	}
}

// writePlotList shows the plots, and says which were not drawn and why.
func (r *Report) writePlotList(w io.Writer) {
	if len(r.Plots)+len(r.PlotNotes) > 0 {
		fmt.Fprintf(w, "\n## Plots\n\n")
		for _, pl := range r.Plots {
			fmt.Fprintf(w, "![%s](%s)\n\n", strings.TrimSuffix(filepath.Base(pl), ".svg"), pl)
		}
		for _, n := range r.PlotNotes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// writeCellDetails shows pg_stat_statements, wait events and probe
// counters per commit for the workload: medians over the ok cells.
func (r *Report) writeCellDetails(w io.Writer, wl string) {
	type agg struct {
		entries, hot, cold, dealloc []float64
		waits                       map[string]int
		active, total               int
		ins, upd, del, walRec, tx   float64
	}
	by := map[string]*agg{}
	for _, rec := range r.records {
		if rec.Workload != wl || rec.Status != results.StatusOK {
			continue
		}
		a := by[rec.Commit]
		if a == nil {
			a = &agg{waits: map[string]int{}}
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
			tx := rec.Metrics.Value(results.MetricTPS) * rec.DurationS
			a.tx += tx
			a.ins += float64(rec.Probe.Tables.Ins)
			a.upd += float64(rec.Probe.Tables.Upd)
			a.del += float64(rec.Probe.Tables.Del)
			if rec.Probe.WAL != nil {
				a.walRec += float64(rec.Probe.WAL.Records)
			}
		}
	}
	if len(by) == 0 {
		return
	}
	fmt.Fprintf(w, "### pg_stat_statements, wait events and probes (all cells of %s)\n\n| commit | entries | hot | cold | deallocs | db time | top waits | rows ins/upd/del per tx | WAL records per tx |\n|---|---|---|---|---|---|---|---|---|\n", wl)
	for _, c := range r.Commits {
		a := by[c]
		if a == nil {
			continue
		}
		dbt := "-"
		if a.total > 0 {
			dbt = fmt.Sprintf("%.1f%%", 100*float64(a.active)/float64(a.total))
		}
		top := topWaits(a.waits, a.active)
		per := func(x float64) string {
			if a.tx == 0 {
				return "-"
			}
			return num(x / a.tx)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s/%s/%s | %s |\n", c, med(a.entries), med(a.hot), med(a.cold), med(a.dealloc), dbt, text.OrDash(top), per(a.ins), per(a.upd), per(a.del), per(a.walRec))
	}
	fmt.Fprintln(w)
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
// with prec decimals; from a baseline of 0, the absolute difference; a
// change whose sign contradicts the medians beside it is marked with
// DisagreeMark (explained under the table, DisagreeNote).
func deltaCI(st Stat, prec int) string {
	if st.N == 0 {
		return "-"
	}
	if math.IsNaN(st.DeltaPct) && st.DeltaAbs != 0 && isFinite(st.DeltaAbs) {
		return signed(st.DeltaAbs) + " (absolute, from 0)"
	}
	s := pct(st.DeltaPct)
	if st.MediansDisagree {
		s += DisagreeMark
	}
	if isFinite(st.DeltaLo) && isFinite(st.DeltaHi) {
		s += fmt.Sprintf(" [%+.*f, %+.*f]", prec, st.DeltaLo, prec, st.DeltaHi)
	}
	return s
}

// DisagreeMark marks a Δ whose sign contradicts the medians shown beside
// it (MediansDisagree), and DisagreeNote says why under the table: in
// every format, the dashboard's included.
const (
	DisagreeMark = "†"
	DisagreeNote = "† Δ is the paired estimate (the geometric mean of the per-pair ratios), which the verdict judges; the medians beside it are each commit's own, and with pairs that scatter they can point the other way."
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
		} else if isFinite(st.DetectablePct) {
			v += " (could not detect < " + pctAbs(st.DetectablePct) + ")"
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
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return num(median(s))
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

// method says how the verdicts were reached, for the report's setup.
func (r *Report) method() string {
	return fmt.Sprintf("median with 95%% confidence interval per commit; against %s, the two cells of each interleaved block are a pair: "+
		"paired t test of the per-pair log ratios, the change their geometric mean with its 95%% interval (same is decided on the %.0f%% one: "+
		"two one-sided tests at α); Mann–Whitney U when blocks are incomplete; event counts by the rate of their totals (quasi-Poisson: scaled by the cells' dispersion). "+
		"Per commit, one family at α = %v (family-wise): each configuration has a primary metric that fits it (a closed loop tps, "+
		"an open loop at a fixed offered rate the primary its workload declares, else latency_p99_ms; instruction cells instructions per transaction; "+
		"--primary overrides), tested in each configuration and, pooled over the configurations that share it, at once (the run-level answer); "+
		"the other gated metrics only behind their configuration's primary; "+
		"gated event counts (failed transactions, pgss_deallocs) in a family of their own at α, taking none of the primary's; "+
		"report-only metrics say higher or lower, in a family of their own. better/worse: significant and beyond the metric's bar (%s); "+
		"same: the interval lies within ±bar; unknown: neither", r.Baseline, 100*(1-2*r.Alpha), r.Alpha, r.barRule())
}
