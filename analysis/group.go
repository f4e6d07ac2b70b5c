package analysis

// Groups: one commit's cells in one configuration, sorted from the plan
// and the records; their valid values, and the blocks that pair.

import (
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
}

// group returns a commit's group in a configuration, made on first use.
func (a *analyzer) group(cfg, commit string) *group {
	if a.groups[cfg] == nil {
		a.groups[cfg] = map[string]*group{}
	}
	g := a.groups[cfg][commit]
	if g == nil {
		g = &group{usable: map[int]*results.Record{}}
		a.groups[cfg][commit] = g
	}
	return g
}

// configID is c.ID(), remembered by every field of c (fmt prints maps
// sorted).
func (a *analyzer) configID(c results.Config) string {
	k := fmt.Sprint(c.Workload, "\x00", c.Clients, "\x00", c.CPUs, "\x00", c.Settings, "\x00", c.Instructions, "\x00", c.Rate, "\x00", c.Vars, "\x00", c.Condition)
	id, ok := a.ids[k]
	if !ok {
		id = c.ID()
		a.ids[k] = id
	}
	return id
}

// groupCells sorts the planned cells and the records into groups, and
// notes the failed and saturated cells and the metrics present.
func (a *analyzer) groupCells() {
	p, r := a.p, a.r
	a.configs = make([]string, 0, len(p.Configs))
	for _, c := range p.Configs {
		a.configs = append(a.configs, c.ID())
	}
	a.groups = map[string]map[string]*group{}
	a.ids = map[string]string{}
	for i := range p.Cells {
		a.group(a.configID(p.Cells[i].Config), p.Cells[i].Commit).planned++
	}
	a.present, a.positive, a.invalid = map[string]bool{}, map[string]bool{}, map[string]int{}
	a.voidable, a.void = map[string]results.Metric{}, map[string]map[string]int{}
	for _, m := range p.Metrics {
		a.positive[m.Name] = m.Positive
		if m.Validity != results.ValidAlways {
			a.voidable[m.Name] = m
		}
	}
	for i := range a.in.Records {
		rec := &a.in.Records[i]
		g := a.group(a.configID(rec.Config), rec.Commit)
		switch {
		case rec.Status != results.StatusOK:
			r.Failed = append(r.Failed, CellNote{Cell: rec.Cell, Status: rec.Status, Error: rec.Error, Tail: rec.LogTail})
			g.failed++
			continue
		case rec.Saturated:
			r.Saturated = append(r.Saturated, CellNote{Cell: rec.Cell, Status: "saturated", Error: saturationWhy(rec)})
			g.saturated++
			continue
		}
		g.usable[rec.Repeat] = rec
		for m, v := range rec.Metrics {
			switch {
			case a.whyVoid(rec, m) != "":
				// counted by noteVoid
			case a.valid(m, v):
				a.present[m] = true
			default:
				a.invalid[m]++
			}
		}
		a.noteVoid(rec)
	}
	if len(p.Cells) == 0 {
		a.planFromRecords()
	}
}

// planFromRecords plans, for a plan without its cell list (tests,
// hand-made plans), the repeats, or the most any commit has.
func (a *analyzer) planFromRecords() {
	for _, byCommit := range a.groups {
		most := a.p.Options.Repeats
		for _, g := range byCommit {
			most = max(most, len(g.usable)+g.failed+g.saturated)
		}
		for _, c := range a.r.Commits {
			if byCommit[c] == nil {
				byCommit[c] = &group{usable: map[int]*results.Record{}}
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
	if absent := g.planned - len(g.usable) - g.failed - g.saturated; absent > 0 {
		parts = append(parts, fmt.Sprintf("%d absent", absent))
	}
	return fmt.Sprintf("%d of %d cells usable (%s)", len(g.usable), g.planned, strings.Join(parts, ", "))
}

// valid reports whether v is a measurement of m: finite, and positive
// where the metric cannot be anything else (a tps of 0, or a null that
// decoded to 0, is a failure to measure, never a value).
func (a *analyzer) valid(m string, v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !a.positive[m])
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
	for m := range a.voidable {
		if _, recorded := rec.Void[m]; !recorded {
			if why := a.whyVoid(rec, m); why != "" {
				note(m, why)
			}
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
	for _, rec := range g.usable {
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

// value is rec's value of m when it is a measurement: valid, and not
// void.
func (a *analyzer) value(rec *results.Record, m string) (float64, bool) {
	v, ok := rec.Metrics[m]
	return v, ok && a.valid(m, v) && a.whyVoid(rec, m) == ""
}

// values returns a group's valid values of m in repeat order.
func (a *analyzer) values(g *group, m string) []float64 {
	if g == nil {
		return nil
	}
	reps := make([]int, 0, len(g.usable))
	for rep, rec := range g.usable {
		if _, ok := a.value(rec, m); ok {
			reps = append(reps, rep)
		}
	}
	slices.Sort(reps)
	out := make([]float64, len(reps))
	for i, rep := range reps {
		out[i] = g.usable[rep].Metrics[m]
	}
	return out
}

// pairs returns the values of m of the blocks where both commits have
// a valid one, in repeat order: the two cells of a block ran back to
// back.
func (a *analyzer) pairs(ga, gb *group, m string) (pa, pb []float64) {
	if ga == nil || gb == nil {
		return nil, nil
	}
	reps := make([]int, 0, len(ga.usable))
	for rep, ra := range ga.usable {
		rb, ok := gb.usable[rep]
		if !ok {
			continue
		}
		_, oka := a.value(ra, m)
		_, okb := a.value(rb, m)
		if oka && okb {
			reps = append(reps, rep)
		}
	}
	slices.Sort(reps)
	for _, rep := range reps {
		pa = append(pa, ga.usable[rep].Metrics[m])
		pb = append(pb, gb.usable[rep].Metrics[m])
	}
	return pa, pb
}
