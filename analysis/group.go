package analysis

// Groups: one commit's cells in one configuration, sorted from the plan
// and the records; their valid values, and the blocks that pair.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// group is one commit's cells in one configuration.
type group struct {
	planned           int
	usable            map[int]*results.Record // by repeat
	failed, saturated int
	// cols are the group's valid values by metric, made on first use:
	// every row, tier and primary asks for them again, and at 10⁵ cells
	// walking the records' metric maps each time was most of Analyze.
	cols map[string]*column
	recs []*results.Record // usable, in repeat order (records)
	// base: the baseline's group (its columns' spreads are read).
	base bool
	// names are the metrics every usable cell has, when they all have
	// the same, and methods, by kind, the methods that measured them
	// all (fillColumns, methodsOf).
	names   []string
	methods map[results.MeasuredBy][]string
	// bad are the repeats of the group's failed and saturated records
	// (few), to tell a second record of one cell; dups describe the
	// cells recorded more than once, none of whose records is used
	// (groupCells).
	bad  []int
	dups []string
}

// taken reports whether a record of repeat rep is in the group already.
func (g *group) taken(rep int) bool {
	if _, ok := g.usable[rep]; ok {
		return true
	}
	return slices.Contains(g.bad, rep)
}

// records returns the group's usable records in repeat order, made once:
// ranging over the map for every row was a tenth of Analyze.
func (g *group) records() []*results.Record {
	if g.recs == nil && len(g.usable) > 0 {
		for _, rep := range slices.Sorted(maps.Keys(g.usable)) {
			g.recs = append(g.recs, g.usable[rep])
		}
	}
	return g.recs
}

// group returns a commit's group in a configuration, made on first use.
func (a *analyzer) group(cfg, commit string) *group {
	if a.groups[cfg] == nil {
		a.groups[cfg] = map[string]*group{}
	}
	g := a.groups[cfg][commit]
	if g == nil {
		g = &group{usable: map[int]*results.Record{}, base: commit == a.r.Baseline}
		a.groups[cfg][commit] = g
	}
	return g
}

// groupOf is a commit's group in configuration c.
func (a *analyzer) groupOf(c results.Config, commit string) *group {
	return a.group(a.configID(c), commit)
}

// configID is c.ID(), remembered (configIDs).
func (a *analyzer) configID(c results.Config) string { return a.r.configID(c) }

// configID is c.ID(), remembered (configIDs).
func (r *Report) configID(c results.Config) string {
	if r.ids == nil {
		r.ids = newConfigIDs()
	}
	return r.ids.of(c)
}

// groupCells sorts the planned cells and the records into groups, and
// notes the failed and saturated cells and the metrics present. A cell
// recorded more than once (identical or not: a shard merged twice, a
// hand-edited cells.jsonl) is left out whole, and its group could not
// answer: the first record once won silently, and a conflicting
// duplicate with half the tps moved the run-level estimate from +0.30 %
// to −0.13 % and exited 0 (issue 40). Found, the records are grouped
// again without them, so nothing after (tables, sweeps, plots) counts
// a duplicated cell either.
func (a *analyzer) groupCells() {
	if dups := a.groupRecords(nil); len(dups) > 0 {
		a.groupRecords(dups)
		a.dropDuplicates(dups)
	}
	if len(a.p.Cells) == 0 {
		a.planFromRecords()
	}
}

// cellKey names a cell by its group and repeat.
type cellKey struct {
	config, commit string
	repeat         int
}

// dupCell is a cell recorded more than once, and its records.
type dupCell struct {
	cell string
	recs []*results.Record
}

// groupRecords groups the plan's cells and the records, leaving out the
// cells in skip, and returns the cells it found recorded more than once
// (only when skip is nil).
func (a *analyzer) groupRecords(skip map[cellKey]*dupCell) map[cellKey]*dupCell {
	p, r := a.p, a.r
	r.Failed, r.Saturated = nil, nil
	a.listConfigs()
	a.groups = map[string]map[string]*group{}
	for i := range p.Cells {
		a.groupOf(p.Cells[i].Config, p.Cells[i].Commit).planned++
	}
	a.present, a.positive, a.invalid = map[string]bool{}, map[string]bool{}, map[string]int{}
	a.voidable, a.void, a.voidList = map[string]results.Metric{}, map[string]map[string]int{}, nil
	for _, m := range p.Metrics {
		a.positive[m.Name] = m.Positive
		if m.Validity != results.ValidAlways {
			if _, dup := a.voidable[m.Name]; !dup {
				a.voidList = append(a.voidList, m)
			}
			a.voidable[m.Name] = m
		}
	}
	for i, m := range a.voidList {
		a.voidList[i] = a.voidable[m.Name] // the last of a name, as the map's
	}
	var names []string
	var slots []metricSlot
	var found map[cellKey]*dupCell
	// In the plan's order (seq), whatever order the records came in: the
	// report lists the cells left out in that order.
	order := make([]int, len(a.in.Records))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		return cmp.Or(cmp.Compare(a.in.Records[i].Seq, a.in.Records[j].Seq), strings.Compare(a.in.Records[i].Cell, a.in.Records[j].Cell))
	})
	for _, i := range order {
		rec := &a.in.Records[i]
		g := a.groupOf(rec.Config, rec.Commit)
		if skip != nil {
			k := cellKey{a.configID(rec.Config), rec.Commit, rec.Repeat}
			if d := skip[k]; d != nil {
				if len(d.recs) == 0 {
					d.cell = rec.Cell
					g.dups = append(g.dups, rec.Cell)
				}
				d.recs = append(d.recs, rec)
				continue
			}
		} else if g.taken(rec.Repeat) {
			if found == nil {
				found = map[cellKey]*dupCell{}
			}
			found[cellKey{a.configID(rec.Config), rec.Commit, rec.Repeat}] = &dupCell{}
		}
		switch {
		case rec.Status != results.StatusOK:
			r.Failed = append(r.Failed, CellNote{Cell: rec.Cell, Status: rec.Status, Error: rec.Error, Tail: rec.LogTail})
			g.failed++
			g.bad = append(g.bad, rec.Repeat)
			continue
		case rec.Saturated:
			r.Saturated = append(r.Saturated, CellNote{Cell: rec.Cell, Status: "saturated", Error: saturationWhy(rec)})
			g.saturated++
			g.bad = append(g.bad, rec.Repeat)
			continue
		}
		if len(g.usable) == 0 && g.planned > 0 {
			g.usable = make(map[int]*results.Record, g.planned)
		}
		g.usable[rec.Repeat] = rec
		names, slots = a.scanMetrics(rec, names, slots)
		a.noteVoid(rec)
	}
	a.scanned(slots)
	return found
}

// listConfigs lists the plan's configurations by ID, in its order.
func (a *analyzer) listConfigs() {
	a.configs = make([]string, 0, len(a.p.Configs))
	a.cfgs = make(map[string]results.Config, len(a.p.Configs))
	for _, c := range a.p.Configs {
		a.configs = append(a.configs, c.ID())
		a.cfgs[c.ID()] = c
	}
}

// dropDuplicates leaves the duplicated cells' records out of what the
// report reads after grouping, and says what each cell's records were.
func (a *analyzer) dropDuplicates(dups map[cellKey]*dupCell) {
	drop := map[*results.Record]bool{}
	var lines []string
	for _, d := range dups {
		for _, rec := range d.recs {
			drop[rec] = true
		}
		lines = append(lines, dupLine(d))
	}
	slices.Sort(lines)
	a.r.Warnings = append(a.r.Warnings, lines...)
	kept := make([]results.Record, 0, len(a.in.Records)-len(drop))
	for i := range a.in.Records {
		if !drop[&a.in.Records[i]] {
			kept = append(kept, a.in.Records[i])
		}
	}
	in := *a.in
	in.Records = kept
	a.in = &in
	a.r.records = kept
	a.r.Observer = observerCost(kept)
}

// dupLine says a duplicated cell's records: how many, whether they
// agree, and their tps where they have one.
func dupLine(d *dupCell) string {
	same := true
	var tps []string
	for _, rec := range d.recs {
		first := d.recs[0].Metrics
		same = same && rec.Status == d.recs[0].Status && slices.Equal(rec.Metrics.Names(), first.Names())
		for j := range rec.Metrics.Names() {
			same = same && sameValue(rec.Metrics.At(j), first.At(j))
		}
		if v, ok := rec.Metrics.Get(results.MetricTPS); ok {
			tps = append(tps, fmt.Sprintf("%.6g", v))
		}
	}
	how := "that differ"
	if same {
		how = "alike"
	}
	if len(tps) == len(d.recs) {
		how += ", tps " + strings.Join(tps, " and ")
	}
	return fmt.Sprintf("cell %s has %d records (%s): none is used, and its configuration could not answer (a results directory given twice, overlapping shards, or an edited %s?)", d.cell, len(d.recs), how, results.CellsFile)
}

// sameValue: two metric values are one (NaN alike).
func sameValue(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }

// planFromRecords plans, for a plan without its cell list (tests,
// hand-made plans), the repeats, or the most any commit has.
func (a *analyzer) planFromRecords() {
	for _, byCommit := range a.groups {
		most := a.p.Options.Repeats
		for _, g := range byCommit {
			most = max(most, len(g.usable)+g.failed+g.saturated+len(g.dups))
		}
		for _, c := range a.r.Commits {
			if byCommit[c] == nil {
				byCommit[c] = &group{usable: map[int]*results.Record{}, base: c == a.r.Baseline}
			}
			byCommit[c].planned = most
		}
	}
}

// saturationWhy says why a cell is saturated: its reason, or what an
// older abtest's rule meant.
func saturationWhy(rec *results.Record) string {
	if rec.Saturation != nil && rec.Saturation.Reason != "" {
		return rec.Saturation.Reason
	}
	return "the schedule lag kept growing: the server did not keep the rate"
}

// onlySaturated: the cells missing from the statistics are all there,
// saturated (none failed or absent).
func (g *group) onlySaturated() bool {
	return g.saturated > 0 && len(g.usable)+g.saturated >= g.planned && g.failed == 0
}

// groupWhy says why a commit's cells in a configuration are fewer than
// planned, or "" when they are all there.
func groupWhy(g *group) string {
	if len(g.usable) >= g.planned {
		return ""
	}
	var parts []string
	if g.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", g.failed))
	}
	if g.saturated > 0 {
		parts = append(parts, fmt.Sprintf("%d saturated", g.saturated))
	}
	if len(g.dups) > 0 {
		parts = append(parts, fmt.Sprintf("%d recorded more than once, left out: %s", len(g.dups), strings.Join(g.dups, ", ")))
	}
	if absent := g.planned - len(g.usable) - g.failed - g.saturated - len(g.dups); absent > 0 {
		parts = append(parts, fmt.Sprintf("%d absent", absent))
	}
	return fmt.Sprintf("%d of %d cells usable (%s)", len(g.usable), g.planned, strings.Join(parts, ", "))
}

// validValue reports whether v is a measurement of a metric: finite,
// and positive where the metric cannot be anything else (a tps of 0,
// or a null that decoded to 0, is a failure to measure, never a value).
func validValue(v float64, positive bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !positive)
}

// whyVoid says why rec's value of m is not a measurement by m's
// validity (results.Record.WhyVoid), or "".
func (a *analyzer) whyVoid(rec *results.Record, m string) string {
	if why := rec.Void[m]; why != "" {
		return why
	}
	if def, ok := a.voidable[m]; ok {
		return rec.WhyVoid(def)
	}
	return ""
}

// noteVoid counts a usable cell's void metrics, by reason.
func (a *analyzer) noteVoid(rec *results.Record) {
	note := func(m, why string) {
		if a.void[m] == nil {
			a.void[m] = map[string]int{}
		}
		a.void[m][why]++
	}
	for m, why := range rec.Void {
		note(m, why)
	}
	for _, m := range a.voidList {
		if _, recorded := rec.Void[m.Name]; !recorded {
			// whyVoid of a voidable metric not recorded void.
			if why := rec.WhyVoid(m); why != "" {
				note(m.Name, why)
			}
		}
	}
}

// scanMetrics notes which of a usable cell's metrics have a valid value
// and counts the invalid ones, by the slots of the records' names
// (metricSlots) before it, made again when they change; scanned then
// writes down what they saw. A map write per value was a fifth of
// grouping 10⁵ cells.
func (a *analyzer) scanMetrics(rec *results.Record, names []string, slots []metricSlot) ([]string, []metricSlot) {
	if ns := rec.Metrics.Names(); !slices.Equal(ns, names) || slots == nil {
		a.scanned(slots)
		names, slots = ns, a.metricSlots(ns, slots[:0])
	}
	for j := range slots {
		s := &slots[j]
		switch v := rec.Metrics.At(j); {
		case s.void(rec):
			// counted by noteVoid
		case validValue(v, s.positive):
			s.present = true
		default:
			s.invalid++
		}
	}
	return names, slots
}

// scanned writes down what scanMetrics saw in slots.
func (a *analyzer) scanned(slots []metricSlot) {
	for _, s := range slots {
		if s.present {
			a.present[s.name] = true
		}
		if s.invalid > 0 {
			a.invalid[s.name] += s.invalid
		}
	}
}

// voidWarnings says once per metric in how many usable cells its value
// was void, and why: never judged there, counted as missing.
func (a *analyzer) voidWarnings() []string {
	usable := 0
	for _, byCommit := range a.groups {
		for _, g := range byCommit {
			usable += len(g.usable)
		}
	}
	var out []string
	for _, m := range slices.Sorted(maps.Keys(a.void)) {
		n, whys := 0, slices.Sorted(maps.Keys(a.void[m]))
		for _, why := range whys {
			n += a.void[m][why]
		}
		out = append(out, fmt.Sprintf("%s void in %d of %d usable cells (%s): not a measurement there, never judged, counted as missing", m, n, usable, strings.Join(whys, "; ")))
	}
	return out
}

// missingWhy says that a group's usable cells lack m (n of them have a
// valid value); void when every one that lacks it has a void value
// (results.Metric.Validity): the metric's source lost data there, which
// is not the run failing to answer, so the gap does not gate.
func (a *analyzer) missingWhy(m string, g *group, n int, cells string) (why string, void bool) {
	nvoid := 0
	for _, rec := range g.records() {
		if a.whyVoid(rec, m) != "" {
			nvoid++
		}
	}
	missing := len(g.usable) - n
	switch {
	case nvoid == missing:
		return fmt.Sprintf("%s void in %d of %d %s", m, missing, len(g.usable), cells), true
	case nvoid > 0:
		return fmt.Sprintf("%s missing in %d of %d %s (%d void)", m, missing, len(g.usable), cells, nvoid), false
	}
	return fmt.Sprintf("%s missing in %d of %d %s", m, missing, len(g.usable), cells), false
}
