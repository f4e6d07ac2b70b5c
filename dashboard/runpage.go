package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// unit is metric's unit as the run defines it (the built-in catalogue
// for a plan that carries none).
func (d *runData) unit(metric string) string {
	if m, ok := d.run.Metrics.Get(metric); ok {
		return m.Unit
	}
	if m, ok := results.Builtin.Get(metric); ok {
		return m.Unit
	}
	return ""
}

// writeRun writes a run's compare pages (one per commit against the
// baseline) and configuration pages, and returns its row of the index,
// which links its first compare page: the run is judged once for both.
func writeRun(ctx context.Context, s *store.Store, site string, o Options, r *store.Run, trends []Trend) (indexRun, error) {
	d, err := loadRun(ctx, s, r, site, o.Served)
	if err != nil {
		return indexRun{}, err
	}
	trendOf := map[store.SeriesKey]string{}
	for _, t := range trends {
		trendOf[t.Key] = t.Page
	}
	commits := compared(r)
	if len(commits) == 0 {
		commits = []string{""}
	}
	for _, c := range commits {
		if err := d.writeCompare(site, o, c, trendOf); err != nil {
			return indexRun{}, err
		}
	}
	// Each configuration's cells and verdicts, grouped once: a run of
	// 10⁵ cells has thousands of configurations.
	cells := map[string][]store.Cell{}
	for _, c := range d.cells {
		cells[c.Config] = append(cells[c.Config], c)
	}
	verdicts := map[string][]Verdict{}
	for _, v := range d.verdicts {
		verdicts[v.Config] = append(verdicts[v.Config], v)
	}
	for _, cfg := range d.configs() {
		if err := d.writeConfig(site, o, cfg, cells[cfg], verdicts[cfg], trendOf); err != nil {
			return indexRun{}, err
		}
	}
	return d.indexRow(), nil
}

// configs are the run's configurations, by id.
func (d *runData) configs() []string {
	seen := map[string]bool{}
	var out, rest []string
	for _, c := range d.cells {
		if !seen[c.Config] {
			seen[c.Config] = true
			out = append(out, c.Config)
		}
	}
	for _, v := range d.verdicts {
		if !seen[v.Config] {
			seen[v.Config] = true
			rest = append(rest, v.Config)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// configLabels are the configurations' names in the run page's list,
// with the saturated cells of those that have any (a sweep's points that
// could not keep their offered rate: reported, not judged).
func (d *runData) configLabels() map[string]string {
	n, sat := map[string]int{}, map[string]int{}
	for _, c := range d.cells {
		n[c.Config]++
		if c.Saturated {
			sat[c.Config]++
		}
	}
	out := map[string]string{}
	for cfg, k := range sat {
		out[cfg] = fmt.Sprintf("%s (saturated in %d of %d cells)", cfg, k, n[cfg])
	}
	return out
}

// rows are the verdicts vs (of commit, unless commit is "") as rows
// linked from a page in the site directory from (relative to the site).
func (d *runData) rows(vs []Verdict, commit, from string, trendOf map[store.SeriesKey]string) []vrow {
	var out []vrow
	for _, v := range vs {
		if commit != "" && v.Commit != commit {
			continue
		}
		r := vrow{Verdict: v, Unit: d.unit(v.Metric), ConfigPage: relLink(from, ConfigPage(d.run.ID, v.Config))}
		if st := d.stats[statKey{v.Commit, v.Config, v.Metric}]; st != nil {
			r.NoSignal, r.Disagree = st.NoSignal, st.MediansDisagree
		}
		if t, ok := trendOf[store.SeriesKey{Metric: v.Metric, Config: v.Config}]; ok {
			r.Trend = relLink(from, t)
		}
		out = append(out, r)
	}
	return out
}

// pairLink is a compare page of the run in the switcher.
type pairLink struct {
	Label, Href string
	Current     bool
}

func (d *runData) writeCompare(site string, o Options, commit string, trendOf map[store.SeriesKey]string) error {
	page := ComparePage(d.run, commit)
	from := filepath.Dir(page)
	var pairs []pairLink
	for _, c := range compared(d.run) {
		pairs = append(pairs, pairLink{Label: c, Href: relLink(from, ComparePage(d.run, c)), Current: c == commit})
	}
	rows := d.rows(d.verdicts, commit, from, trendOf)
	slices.SortStableFunc(rows, bySignificance)
	var changes, quiet, regressions []vrow
	for _, r := range rows {
		if r.Shown() {
			changes = append(changes, r)
		} else {
			quiet = append(quiet, r)
		}
		if r.Gated && r.Verdict.Verdict == results.Worse {
			regressions = append(regressions, r)
		}
	}
	var geomeans []string
	if d.report != nil {
		for _, g := range d.report.Geomeans {
			if g.Commit == commit {
				geomeans = append(geomeans, geomeanLine(g))
			}
		}
	}
	pageDir := filepath.Join(site, from)
	perf, instr := d.diffs(pageDir, commit)
	var configs []pairLink
	labels := d.configLabels()
	for _, c := range d.configs() {
		configs = append(configs, pairLink{Label: cmp.Or(labels[c], c), Href: relLink(from, ConfigPage(d.run.ID, c))})
	}
	gate, detail := d.gate()
	return render(filepath.Join(site, page), "run.html", map[string]any{
		"Title": o.Title, "Root": "..", "Run": d.run, "Name": d.run.Name(), "Commit": commit, "Pairs": pairs,
		"Answer": d.answer(commit), "Gate": gate, "GateDetail": detail, "Geomeans": geomeans, "Regressions": regressions, "Changes": changes, "Quiet": quiet,
		"QuietCounts": tableCounts(quiet), "Reports": d.reports(pageDir), "Perf": perf, "Instr": instr, "Configs": configs,
		"Model": d.model(from, commit), "Failed": d.failures(),
	})
}

// model is what a compare page shows of the report model: its
// overview and the rest of the report, as blocks for the page in the
// site directory from; or why the run has no report.
type model struct {
	Overview, Rest []docBlock
	Error          string
}

func (d *runData) model(from, commit string) model {
	if d.report == nil {
		if d.judgeErr != nil {
			return model{Error: d.judgeErr.Error()}
		}
		return model{}
	}
	overview, rest := reportParts(d.report.Doc(), commit, d.report.Baseline)
	w := d.docWriter(from)
	return model{Overview: w.blocks(overview), Rest: w.blocks(rest)}
}

// failure is one way a run's cells failed: the error, how many cells
// it ended and the first of them.
type failure struct {
	Error  string
	Cells  int
	Commit string
	Config string
	Repeat int
}

// maxFailures is how many distinct errors a run page lists.
const maxFailures = 5

// failures are the distinct errors of the run's failed cells, the most
// frequent first.
func (d *runData) failures() []failure {
	var out []failure
	at := map[string]int{}
	for _, c := range d.cells {
		if c.Status == results.StatusOK {
			continue
		}
		e := cmp.Or(c.Error, "failed (no error recorded)")
		if i, ok := at[e]; ok {
			out[i].Cells++
			continue
		}
		at[e] = len(out)
		out = append(out, failure{Error: e, Cells: 1, Commit: c.Commit, Config: c.Config, Repeat: c.Repeat})
	}
	slices.SortStableFunc(out, func(a, b failure) int { return cmp.Compare(b.Cells, a.Cells) })
	return out[:min(len(out), maxFailures)]
}

// repeatRow is one repeat of a configuration: a value per commit.
type repeatRow struct {
	Repeat int
	Values []string
}

// metricTable is one metric of a configuration page: the repeats of
// every commit, their medians and the verdicts.
type metricTable struct {
	Metric, Unit string
	Repeats      []repeatRow
	Verdicts     []vrow
	// Constant: every repeat of every commit has the same value, Value
	// (0 tuples deleted): nothing to read, listed last and without its
	// table of repeats.
	Constant bool
	Value    string
}

// cellFiles is a cell's artefacts as a configuration page links them.
type cellFiles struct {
	Commit string
	Repeat int
	Status results.Status
	// Failed marks the row: the template says nothing about statuses.
	Failed bool
	Error  string
	Files  []link
}

func (d *runData) writeConfig(site string, o Options, cfg string, cells []store.Cell, verdicts []Verdict, trendOf map[store.SeriesKey]string) error {
	page := ConfigPage(d.run.ID, cfg)
	from := filepath.Dir(page)
	pageDir := filepath.Join(site, from)
	labels := make([]string, 0, len(d.run.Commits))
	for _, c := range d.run.Commits {
		labels = append(labels, c.Label)
	}
	col := map[string]int{}
	for i, l := range labels {
		col[l] = i
	}
	byRepeat := map[string]map[int][]string{}
	span := map[string][2]float64{}
	var files []cellFiles
	for _, c := range cells {
		for m, v := range d.values[c.Cell] {
			if lh, ok := span[m]; ok {
				span[m] = [2]float64{min(lh[0], v), max(lh[1], v)}
			} else {
				span[m] = [2]float64{v, v}
			}
			if byRepeat[m] == nil {
				byRepeat[m] = map[int][]string{}
			}
			row := byRepeat[m][c.Repeat]
			if row == nil {
				row = make([]string, len(labels))
				byRepeat[m][c.Repeat] = row
			}
			if i, ok := col[c.Commit]; ok {
				row[i] = human(v)
			}
		}
		files = append(files, d.cellFiles(pageDir, c))
	}
	rows := map[string][]vrow{}
	for _, r := range d.rows(verdicts, "", from, trendOf) {
		rows[r.Metric] = append(rows[r.Metric], r)
	}
	var tables []metricTable
	for _, m := range slices.Sorted(maps.Keys(byRepeat)) {
		t := metricTable{Metric: m, Unit: d.unit(m)}
		for _, rep := range slices.Sorted(maps.Keys(byRepeat[m])) {
			t.Repeats = append(t.Repeats, repeatRow{Repeat: rep, Values: byRepeat[m][rep]})
		}
		t.Verdicts = rows[m]
		if t.Constant = span[m][0] == span[m][1]; t.Constant {
			t.Value = human(span[m][0])
		}
		tables = append(tables, t)
	}
	d.orderTables(tables)
	back := relLink(from, RunPage(d.run.ID))
	return render(filepath.Join(site, page), "config.html", map[string]any{
		"Title": o.Title, "Root": "../..", "Run": d.run, "Name": d.run.Name(), "Config": cfg, "Back": back,
		"Commits": labels, "Tables": tables, "Files": files,
	})
}

// cellFiles links a cell's artefacts from the page directory from
// (d.href, never file://): relative to the cell's results directory
// when the site is on disk, beneath FilesPrefix when it is served.
func (d *runData) cellFiles(from string, c store.Cell) cellFiles {
	cf := cellFiles{Commit: c.Commit, Repeat: c.Repeat, Status: c.Status, Failed: c.Status != results.StatusOK, Error: c.Error}
	for _, n := range slices.Sorted(maps.Keys(c.Artifacts)) {
		p := c.Artifacts[n]
		if !filepath.IsAbs(p) {
			p = filepath.Join(d.dirs[c.Shard], p)
		}
		l := link{Name: n, Href: d.href(from, p), Path: p}
		if l.Href == "" {
			l.Note = notServed
		}
		cf.Files = append(cf.Files, l)
	}
	return cf
}
