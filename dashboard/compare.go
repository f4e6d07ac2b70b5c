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
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// runData is what the pages of one run are made of.
type runData struct {
	run      *store.Run
	verdicts []store.Verdict
	cells    []store.Cell
	values   map[string]map[string]float64
	geomeans []store.Geomean
	// dirs are the shards' directories by shard.
	dirs map[string]string
	// site is the site's directory; served: the site is written to be
	// served, and links the results files beneath FilesPrefix.
	site   string
	served bool
	// report is the run judged now (history.Judge, the statistics of
	// this version): the page's answer, overview and report, and each
	// row's marks (stats); judgeErr says why there is none.
	report   *analysis.Report
	judgeErr error
	stats    map[statKey]*analysis.Stat
}

// statKey names a commit's Stat in a configuration and metric.
type statKey struct{ commit, config, metric string }

func loadRun(ctx context.Context, s *store.Store, r *store.Run, site string, served bool) (*runData, error) {
	d := &runData{run: r, dirs: map[string]string{}, site: site, served: served}
	var err error
	if d.verdicts, err = history.Verdicts(ctx, s, r.ID); err != nil {
		return nil, err
	}
	if d.cells, err = s.Cells(ctx, r.ID); err != nil {
		return nil, err
	}
	if d.values, err = s.CellMetrics(ctx, r.ID); err != nil {
		return nil, err
	}
	if d.geomeans, err = history.Geomeans(ctx, s, r.ID); err != nil {
		return nil, err
	}
	for _, sh := range r.Shards {
		d.dirs[sh.Shard] = sh.Dir
	}
	return d, d.judge(ctx, s)
}

// judge reads the run's report model: the run judged from the store
// under the store's options (those its cached rows were judged under).
// A run the analysis refuses (its every cell failed) has none: the page
// says why instead.
func (d *runData) judge(ctx context.Context, s *store.Store) error {
	rep, err := history.Judge(ctx, s, d.run.ID, analysis.Options{})
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage {
			return err
		}
		d.judgeErr = err
		return nil
	}
	d.report, d.stats = rep, map[statKey]*analysis.Stat{}
	for _, row := range rep.Rows {
		for i := range row.Stats {
			st := &row.Stats[i]
			d.stats[statKey{st.Commit, row.Config, row.Metric}] = st
		}
	}
	return nil
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
	store.Verdict
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

// counts counts every row, whatever its role: what a table lists.
func counts(rows []vrow) []count {
	n := map[results.Verdict]int{}
	for _, r := range rows {
		n[r.Verdict.Verdict]++
	}
	return ordered(n, verdictOrder)
}

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

// answer is a commit's answer as the report's summary line says it,
// counted by each row's role through analysis.Summary.Count: the
// headline (Counts), the secondary tests not run (Behind), and the
// report-only higher and lower apart. Rows stored without a role (before
// schema 5) cannot be told apart: Roleless, and every row is counted.
type answer struct {
	Counts, ReportOnly []count
	Behind             int
	Roleless, None     bool
	// Stored: the counts are the report's, as the store kept them
	// (Line names what changed); else counted from the stored rows.
	Stored bool
	Line   string
}

// storedAnswer is the answer the store kept of a commit: the report's
// summary counts.
func storedAnswer(a store.Answer) answer {
	head, ro := a.Counts()
	out := answer{Behind: a.Behind, Stored: true, Line: a.Line}
	for _, c := range head {
		out.Counts = append(out.Counts, count{c.Verdict, c.N})
	}
	for _, c := range ro {
		out.ReportOnly = append(out.ReportOnly, count{c.Verdict, c.N})
	}
	return out
}

func answerOf(rows []vrow) answer {
	var sm analysis.Summary
	for _, r := range rows {
		if r.Role == "" {
			return answer{Counts: counts(rows), Roleless: true}
		}
		sm.Count(r.Role, r.Verdict.Verdict)
	}
	return answer{
		Counts: ordered(map[results.Verdict]int{results.Worse: sm.Worse, results.Better: sm.Better, results.Incomplete: sm.Incomplete,
			results.Unknown: sm.Unknown, results.Same: sm.Same}, []results.Verdict{results.Worse, results.Better, results.Incomplete, results.Unknown, results.Same}),
		ReportOnly: ordered(map[results.Verdict]int{results.Higher: sm.Higher, results.Lower: sm.Lower}, []results.Verdict{results.Higher, results.Lower}),
		Behind:     sm.Behind,
		None:       len(rows) == 0,
	}
}

// geomeanLine says a run-level pooled test in words.
func geomeanLine(g store.Geomean) string {
	if g.Ratio == nil || g.Lo == nil || g.Hi == nil {
		return fmt.Sprintf("%s geometric mean over %d configurations: %s (no finite interval)", g.Metric, g.Configs, g.Verdict)
	}
	s := fmt.Sprintf("%s geometric mean ×%.4f (%s, 95 %% CI %s … %s) over %d configurations: %s",
		g.Metric, *g.Ratio, pct(100*(*g.Ratio-1)), pct(100*(*g.Lo-1)), pct(100*(*g.Hi-1)), g.Configs, g.Verdict)
	switch {
	case g.Verdict == results.Unknown && g.DetectablePct != nil:
		s += fmt.Sprintf(" (could not detect < %.2f %%)", *g.DetectablePct)
	case g.Verdict == results.Same && g.MinEffectPct != nil:
		s += fmt.Sprintf(" (within ±%.2f %%)", *g.MinEffectPct)
	}
	return s
}
