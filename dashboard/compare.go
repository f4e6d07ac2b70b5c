package dashboard

// The compare page: a run's baseline against one of its commits, the
// answer first (counts, the run-level geometric means, the gate, the
// regressions), then the changes sorted by significance and size, the
// rest behind a toggle; each row links to its configuration's page.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// runData is what the pages of one run are made of.
type runData struct {
	run    *store.Run
	cells  []store.Cell
	values map[string]map[string]float64
	// dirs are the shards' directories by shard.
	dirs map[string]string
	// site is the site's directory; served: the site is written to be
	// served, and links the results files beneath FilesPrefix.
	site   string
	served bool
	// report is the run judged now (history.Judge, the statistics of
	// this version): the index's and the pages' answer, gate and
	// regressions, the overview and report, every row (verdicts) and
	// its marks (stats); judgeErr says why there is none.
	report   *analysis.Report
	judgeErr error
	verdicts []Verdict
	stats    map[statKey]*analysis.Stat
}

// statKey names a commit's Stat in a configuration and metric.
type statKey struct{ commit, config, metric string }

// judge judges a run from the store: history.Judge, which a test
// replaces to count the judgements of a site.
var judge = history.Judge

func loadRun(ctx context.Context, s *store.Store, r *store.Run, site string, served bool) (*runData, error) {
	d := &runData{run: r, dirs: map[string]string{}, site: site, served: served}
	var err error
	if d.cells, err = s.Cells(ctx, r.ID); err != nil {
		return nil, err
	}
	if d.values, err = s.CellMetrics(ctx, r.ID); err != nil {
		return nil, err
	}
	for _, sh := range r.Shards {
		d.dirs[sh.Shard] = sh.Dir
	}
	return d, d.judge(ctx, s)
}

// judge reads the run's report model: the run judged from the store
// under the store's options, once for all its pages and its index row.
// A run the analysis refuses has none: the pages say why instead.
func (d *runData) judge(ctx context.Context, s *store.Store) error {
	rep, err := judge(ctx, s, d.run.ID, analysis.Options{})
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage {
			return err
		}
		d.judgeErr = err
		return nil
	}
	d.report, d.stats, d.verdicts = rep, map[statKey]*analysis.Stat{}, verdicts(rep)
	for _, row := range rep.Rows {
		for i := range row.Stats {
			st := &row.Stats[i]
			d.stats[statKey{st.Commit, row.Config, row.Metric}] = st
		}
	}
	return nil
}

// gate is the run's gate status and its one-line reason: the report's
// (Report.Gate), failed with why when there is no report.
func (d *runData) gate() (results.GateStatus, string) {
	if d.report == nil {
		return results.GateFailed, "not analysable from the store: " + text.OneLine(d.judgeErr.Error())
	}
	g := d.report.Gate()
	if g == nil {
		return analysis.GateStatus(g), ""
	}
	return analysis.GateStatus(g), text.OneLine(g.Error())
}

// answerLines are each compared commit's answer in one line, the
// report's (Report.AnswerLines): the index and the run page say the
// same words.
func (d *runData) answerLines() map[string]string {
	out := map[string]string{}
	if d.report == nil {
		for _, c := range compared(d.run) {
			out[c] = c + " vs " + d.run.Baseline + ": nothing compared: no report"
		}
		return out
	}
	for _, c := range d.report.Commits {
		if c != d.report.Baseline {
			out[c] = d.report.AnswerLine(c)
		}
	}
	return out
}

// Verdict is one comparison of a run as the pages show it: a commit
// against the baseline in one configuration and metric, from the
// report's Stat (nil where a number is not finite or has no meaning).
type Verdict struct {
	Commit         string
	Config         string
	Metric         string
	Verdict        results.Verdict
	N              int
	BaselineMedian *float64
	Median         *float64
	Lo, Hi         *float64
	DeltaPct, P    *float64
	// Gated: the row gated the run (a gated change); Role says how the
	// row counts in its commit's answer.
	Gated bool
	Role  results.Role
	Note  string
	// DeltaLo and DeltaHi bound DeltaPct at 95 %; DetectablePct is the
	// smallest change the run could have detected (unknown verdicts).
	DeltaLo, DeltaHi, DetectablePct *float64
}

// verdicts are rep's rows, one per commit but the baseline, by
// configuration, metric and commit.
func verdicts(rep *analysis.Report) []Verdict {
	gated := map[[3]string]bool{}
	for _, c := range rep.Changes {
		gated[[3]string{c.Commit, c.Config, c.Metric}] = c.Gated
	}
	var out []Verdict
	for _, row := range rep.Rows {
		var base *analysis.Stat
		for i := range row.Stats {
			if row.Stats[i].Commit == rep.Baseline {
				base = &row.Stats[i]
			}
		}
		for _, s := range row.Stats {
			if s.Commit == rep.Baseline {
				continue
			}
			v := Verdict{Commit: s.Commit, Config: row.Config, Metric: row.Metric, Verdict: s.Verdict, N: s.N,
				Gated: gated[[3]string{s.Commit, row.Config, row.Metric}], Note: s.Note, Role: s.Role()}
			if base != nil && base.N > 0 {
				v.BaselineMedian = analysis.Finite(base.Median)
			}
			if s.N > 0 {
				v.Median, v.Lo, v.Hi = analysis.Finite(s.Median), analysis.Finite(s.Lo), analysis.Finite(s.Hi)
			}
			if base != nil && base.N > 0 && s.N > 0 {
				v.DeltaPct, v.P = analysis.Finite(s.DeltaPct), analysis.Finite(s.P)
				v.DeltaLo, v.DeltaHi = analysis.Finite(s.DeltaLo), analysis.Finite(s.DeltaHi)
				if s.DetectablePct > 0 {
					v.DetectablePct = analysis.Finite(s.DetectablePct)
				}
			}
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return cmp.Or(cmp.Compare(a.Config, b.Config), cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Commit, b.Commit))
	})
	return out
}

// slug names a page: readable, and unique through a hash of the exact
// parts (two names could sanitise alike).
func slug(parts ...string) string {
	h := fnv.New32a()
	io.WriteString(h, strings.Join(parts, "\x00"))
	var clean []string
	for _, p := range parts {
		clean = append(clean, unsafe.ReplaceAllString(p, "_"))
	}
	return fmt.Sprintf("%s-%06x", strings.Join(clean, "--"), h.Sum32()&0xffffff)
}

// ComparePage is the page comparing commit to the run's baseline,
// relative to the site; RunPage is that of the run's first commit after
// the baseline.
func ComparePage(r *store.Run, commit string) string {
	if others := compared(r); len(others) == 0 || others[0] == commit {
		return RunPage(r.ID)
	}
	return filepath.Join("runs", r.ID+"--vs-"+slug(commit)+".html")
}

// ConfigPage is the page of one configuration of a run, relative to the
// site.
func ConfigPage(run, config string) string {
	return filepath.Join("runs", run, slug(config)+".html")
}

// compared are the commits a run compares against its baseline, in plan
// order.
func compared(r *store.Run) []string {
	var out []string
	for _, c := range r.Commits {
		if c.Label != r.Baseline {
			out = append(out, c.Label)
		}
	}
	return out
}

// link is a file of a result directory as a page shows it: a link
// relative to the page, or, when none can be made, its path as text.
type link struct {
	Name string
	Href string
	Path string
	Note string
}

// relLink is target as a URL relative to the directory from.
func relLink(from, target string) string {
	rel, err := filepath.Rel(from, target)
	if err != nil {
		return ""
	}
	return (&url.URL{Path: filepath.ToSlash(rel)}).String()
}

// href links the file at path of a results directory from the page
// directory from: relative to the page on disk (it resolves while the
// site stays beside the results), beneath FilesPrefix when served; ""
// when served and path is in none of the run's shard directories.
func (d *runData) href(from, path string) string {
	if !d.served {
		return relLink(from, path)
	}
	if p := servedPath(d.run, path); p != "" {
		return relLink(from, filepath.Join(d.site, filepath.FromSlash(p)))
	}
	return ""
}

// notServed says why a file has no link on a served site.
const notServed = "outside the run's results directory: not served"

// fileLink links the file at path from the page directory from when it
// exists, else names it with why not.
func (d *runData) fileLink(from, name, path, missing string) link {
	l := link{Name: name, Path: path}
	if _, err := os.Stat(path); err != nil {
		l.Note = missing
		return l
	}
	if l.Href = d.href(from, path); l.Href == "" {
		l.Note = notServed
	}
	return l
}

// reports are the report.md and report.json of each shard directory.
func (d *runData) reports(from string) []link {
	var out []link
	for _, sh := range d.run.Shards {
		if _, err := os.Stat(sh.Dir); err != nil {
			out = append(out, link{Name: "results", Path: sh.Dir, Note: "not on this host"})
			continue
		}
		for _, f := range []string{"report.md", "report.json"} {
			out = append(out, d.fileLink(from, f, filepath.Join(sh.Dir, f), "not written yet: abtest analyze "+sh.Dir+" writes it"))
		}
	}
	return out
}

// diffs are the diff profiles (perf) and instruction diff profiles of
// commit that the shards' report.json name (abtest analyze writes them
// beside it).
func (d *runData) diffs(from, commit string) (perf, instr []link) {
	for _, sh := range d.run.Shards {
		data, err := os.ReadFile(filepath.Join(sh.Dir, "report.json"))
		if err != nil {
			continue
		}
		var rep struct {
			TimeWent     []analysis.TimeWent  `json:"time_went"`
			Instructions []analysis.InstrWent `json:"instructions"`
		}
		if json.Unmarshal(data, &rep) != nil {
			continue
		}
		for _, tw := range rep.TimeWent {
			if tw.Commit == commit && tw.Diff != "" {
				perf = append(perf, d.fileLink(from, tw.Config, filepath.Join(sh.Dir, tw.Diff), "missing"))
			}
		}
		for _, iw := range rep.Instructions {
			if iw.Commit == commit && iw.DiffProfile != "" {
				l := d.fileLink(from, iw.Config, filepath.Join(sh.Dir, iw.DiffProfile), "missing")
				l.Name += " (" + pct(iw.DiffPct) + " instructions/tx)"
				instr = append(instr, l)
			}
		}
	}
	return perf, instr
}

// vrow is a verdict as the compare and configuration pages show it,
// marked as the report model marks its Stat.
type vrow struct {
	Verdict
	Unit       string
	ConfigPage string
	Trend      string
	// NoSignal says why the row has nothing to judge (Stat.NoSignal): it
	// shows "—" and this, never a verdict or a Δ.
	NoSignal string
	// Disagree: the report marks the row's Δ (Stat.MediansDisagree)
	// against the medians beside it, with DisagreeMark.
	Disagree bool
}

// Detect says, for an unknown verdict, the smallest change the run could
// have detected, or, when its interval excludes 0, that it moved: a
// smallest detectable change beside a change seen reads as a
// contradiction.
func (r vrow) Detect() string {
	switch {
	case r.NoSignal != "" || r.Verdict.Verdict != results.Unknown:
		return ""
	case r.Excludes0():
		return "its 95 % interval excludes 0; not called"
	case r.DetectablePct == nil:
		return ""
	}
	return fmt.Sprintf("could not detect < %s %%", human(*r.DetectablePct))
}

// Excludes0: the row's 95 % interval of Δ lies on one side of 0.
func (r vrow) Excludes0() bool {
	return r.DeltaLo != nil && r.DeltaHi != nil && (*r.DeltaLo > 0 || *r.DeltaHi < 0)
}

// Shown: the row is listed among the changes, never folded: a called
// change, or an unknown one whose interval excludes 0 (a report-only
// latency +44 % [+16, +80] is not "without a significant change").
func (r vrow) Shown() bool {
	if r.NoSignal != "" {
		return false
	}
	return significant(r.Verdict.Verdict) || (r.Verdict.Verdict == results.Unknown && r.Excludes0())
}

// anyDisagree: a table of rows needs DisagreeNote under it.
func anyDisagree(rows []vrow) bool {
	for _, r := range rows {
		if r.Disagree {
			return true
		}
	}
	return false
}

// significant: the run called a change (or could not answer) here.
func significant(v results.Verdict) bool {
	return v != results.Same && v != results.Unknown
}

// bySignificance orders rows as the compare page lists them: the
// called changes first, gated first, then by the size of the change.
func bySignificance(a, b vrow) int {
	if ca, cb := significant(a.Verdict.Verdict), significant(b.Verdict.Verdict); ca != cb {
		if ca {
			return -1
		}
		return 1
	}
	if a.Gated != b.Gated {
		if a.Gated {
			return -1
		}
		return 1
	}
	size := func(v vrow) float64 {
		if v.DeltaPct == nil {
			return 0
		}
		return math.Abs(*v.DeltaPct)
	}
	if c := cmp.Compare(size(b), size(a)); c != 0 {
		return c
	}
	return cmp.Compare(a.Config+a.Metric, b.Config+b.Metric)
}

// count is how many verdicts of a kind a commit has.
type count struct {
	Verdict results.Verdict
	N       int
}

// verdictOrder is the order the table's rows are counted in.
var verdictOrder = []results.Verdict{results.Worse, results.Better, results.Higher, results.Lower, results.Incomplete, results.Unknown, results.Same}

// noSignal is how a table's counts name its rows with no signal.
const noSignal results.Verdict = "with no signal"

// tableCounts counts a table's rows as it shows them: those with no
// signal apart, whatever verdict the analysis kept for them.
func tableCounts(rows []vrow) []count {
	n := map[results.Verdict]int{}
	for _, r := range rows {
		if r.NoSignal != "" {
			n[noSignal]++
		} else {
			n[r.Verdict.Verdict]++
		}
	}
	return ordered(n, append(verdictOrder[:len(verdictOrder):len(verdictOrder)], noSignal))
}

func ordered(n map[results.Verdict]int, order []results.Verdict) []count {
	var out []count
	for _, v := range order {
		if n[v] > 0 {
			out = append(out, count{v, n[v]})
		}
	}
	return out
}

// answer is a commit's answer as the report says it: its line
// (Report.AnswerLines), and its summary's counts by each row's role
// (analysis.Summary): the headline (Counts), the secondary tests not run
// (Behind), and the report-only higher and lower apart. None: the
// report has no summary of the commit.
type answer struct {
	Counts, ReportOnly []count
	Behind             int
	None               bool
	Line               string
}

// answer is commit's answer in the run's report.
func (d *runData) answer(commit string) answer {
	a := answer{None: true, Line: d.answerLines()[commit]}
	if d.report == nil {
		return a
	}
	for _, sm := range d.report.Summaries {
		if sm.Commit != commit {
			continue
		}
		a.None = false
		a.Counts = ordered(map[results.Verdict]int{results.Worse: sm.Worse, results.Better: sm.Better, results.Incomplete: sm.Incomplete,
			results.Unknown: sm.Unknown, results.Same: sm.Same}, []results.Verdict{results.Worse, results.Better, results.Incomplete, results.Unknown, results.Same})
		a.ReportOnly = ordered(map[results.Verdict]int{results.Higher: sm.Higher, results.Lower: sm.Lower}, []results.Verdict{results.Higher, results.Lower})
		a.Behind = sm.Behind
	}
	return a
}

// geomeanLine says a run-level pooled test in words.
func geomeanLine(g analysis.Geomean) string {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !finite(g.Ratio) || !finite(g.Lo) || !finite(g.Hi) {
		return fmt.Sprintf("%s geometric mean over %d configurations: %s (no finite interval)", g.Metric, g.Configs, g.Verdict)
	}
	s := fmt.Sprintf("%s geometric mean ×%.4f (%s, 95 %% CI %s … %s) over %d configurations: %s",
		g.Metric, g.Ratio, pct(100*(g.Ratio-1)), pct(100*(g.Lo-1)), pct(100*(g.Hi-1)), g.Configs, g.Verdict)
	switch {
	case g.Verdict == results.Unknown && g.DetectablePct > 0 && finite(g.DetectablePct):
		s += fmt.Sprintf(" (could not detect < %.2f %%)", g.DetectablePct)
	case g.Verdict == results.Same && finite(g.MinEffectPct):
		s += fmt.Sprintf(" (within ±%.2f %%)", g.MinEffectPct)
	}
	return s
}
