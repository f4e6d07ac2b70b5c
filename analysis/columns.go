package analysis

// Columns: a group's valid values of each metric, their repeats, and
// what the rows and tiers read of them sorted.

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/perf/benchmath"

	"github.com/pgabtest/abtest/results"
)

// column is a group's valid values of a metric (value) and their
// repeats, in repeat order, and what is read of the values sorted.
type column struct {
	reps []int
	vals []float64
	// median is Median() of the values; center, lo and hi are
	// benchmath's median and its 95 % interval (AssumeNothing.Summary);
	// spread is spreadSorted's, in the baseline's groups (NaN
	// elsewhere, or under 2 values). Not set without values.
	median, center, lo, hi, spread float64
}

// noValues is the column of a metric a group has no value of.
var noValues = &column{vals: []float64{}}

// values returns a group's valid values of m in repeat order. The
// slice is shared: read it, never write it.
func (a *analyzer) values(g *group, m string) []float64 {
	if g == nil {
		return nil
	}
	return a.column(g, m).vals
}

// column returns a group's column of m (read it, never write it).
func (a *analyzer) column(g *group, m string) *column {
	if g.cols == nil {
		var buf sortBuffers
		a.fillColumns(g)
		a.summarize(g, &buf)
	}
	if c, ok := g.cols[m]; ok {
		return c
	}
	return noValues
}

// fillAllColumns makes every group's columns and their sorted figures,
// a worker per CPU taking the groups in turn: they are independent, and
// at 10⁵ cells sorting them (in each of 9 600 rows, 250 values a
// commit) and making them were a third of Analyze, on one core.
func (a *analyzer) fillAllColumns() {
	var gs []*group
	for _, id := range a.configs {
		for _, c := range a.r.Commits {
			if g := a.groups[id][c]; g != nil && g.cols == nil {
				gs = append(gs, g)
			}
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(gs)) {
		wg.Go(func() {
			var buf sortBuffers
			for i := int(next.Add(1)) - 1; i < len(gs); i = int(next.Add(1)) - 1 {
				a.fillColumns(gs[i])
				a.summarize(gs[i], &buf)
			}
		})
	}
	wg.Wait()
}

// sortBuffers are a worker's buffers for values sorted and their
// deviations.
type sortBuffers struct{ sorted, dev []float64 }

// summarize sets the sorted figures of a group's columns.
func (a *analyzer) summarize(g *group, buf *sortBuffers) {
	for _, c := range g.cols {
		buf.sorted = append(buf.sorted[:0], c.vals...)
		s := buf.sorted
		slices.Sort(s)
		c.median = Median(s)
		// What benchmath.NewSample makes, of the values sorted here.
		sum := benchmath.AssumeNothing.Summary(&benchmath.Sample{Values: s, Thresholds: &benchmath.Thresholds{CompareAlpha: a.o.Alpha}}, 0.95)
		c.center, c.lo, c.hi = sum.Center, sum.Lo, sum.Hi
		c.spread = math.NaN()
		if g.base && len(s) >= 2 {
			c.spread = spreadSorted(s, &buf.dev)
		}
	}
}

// fillColumns makes a group's columns of every metric in one pass over
// its records in repeat order: a value counts when it is a measurement
// (valid, and not void). What each metric needs (its column, whether it
// is positive or voidable) is looked up once per records' names, which
// the records of a decoding share (results.Values.Names), not once per
// value: 0.12 CPU-s at 10⁵ cells. A column with a value in every
// record shares the group's repeats (9 MB at 10⁵ cells, a slice per
// group and metric before).
func (a *analyzer) fillColumns(g *group) {
	recs := g.records()
	g.cols = map[string]*column{}
	all := make([]int, len(recs))
	for i, rec := range recs {
		all[i] = rec.Repeat
	}
	var names []string
	var slots []metricSlot
	g.names = nil
	// The methods of every cell, of each kind, found while the cell is
	// read: looked up again by methodsOf, a group's 250 cells far apart
	// in memory were a tenth of Analyze at 10⁵ cells.
	var lat, instr []string
	for i, rec := range recs {
		lat, instr = addMethod(lat, rec.Method(results.ByLatency)), addMethod(instr, rec.Method(results.ByInstructions))
		if ns := rec.Metrics.Names(); !slices.Equal(ns, names) || slots == nil {
			if i == 0 {
				g.names = ns
			} else if !slices.Equal(ns, names) {
				g.names = nil
			}
			names, slots = ns, a.metricSlots(ns, slots[:0])
			for j := range slots {
				slots[j].col = g.cols[slots[j].name]
			}
		}
		for j := range slots {
			s := &slots[j]
			v := rec.Metrics.At(j)
			if !validValue(v, s.positive) || s.void(rec) {
				continue
			}
			if s.col == nil {
				s.col = &column{vals: make([]float64, 0, len(recs))}
				g.cols[s.name] = s.col
			}
			c := s.col
			// Repeats are kept once a record before this one had no
			// value; until then they are all's.
			if c.reps == nil && len(c.vals) != i {
				c.reps = append(make([]int, 0, len(recs)), all[:len(c.vals)]...)
			}
			if c.reps != nil {
				c.reps = append(c.reps, rec.Repeat)
			}
			c.vals = append(c.vals, v)
		}
	}
	slices.Sort(lat)
	slices.Sort(instr)
	g.methods = map[results.MeasuredBy][]string{results.ByLatency: lat, results.ByInstructions: instr}
	for _, c := range g.cols {
		if c.reps == nil {
			c.reps = all[:len(c.vals):len(c.vals)]
		}
		c.reps, c.vals = slices.Clip(c.reps), slices.Clip(c.vals)
	}
}

// addMethod adds a cell's method to the methods (methodsOf's list).
func addMethod(methods []string, name string) []string {
	if name == "" {
		name = "unrecorded"
	}
	if !slices.Contains(methods, name) {
		methods = append(methods, name)
	}
	return methods
}

// metricSlot is what a pass over records does with one metric's
// values, looked up once per records' names.
type metricSlot struct {
	name     string
	positive bool
	voidable *results.Metric // the metric, where its values can be void
	col      *column         // fillColumns': nil until the group has a value
	present  bool            // groupCells': a usable cell has a valid value
	invalid  int             // groupCells': usable cells whose value is invalid
}

// metricSlots appends to slots the slot of each name.
func (a *analyzer) metricSlots(names []string, slots []metricSlot) []metricSlot {
	for _, n := range names {
		s := metricSlot{name: n, positive: a.positive[n]}
		for i := range a.voidList {
			if a.voidList[i].Name == n {
				s.voidable = &a.voidList[i]
			}
		}
		slots = append(slots, s)
	}
	return slots
}

// void reports whether rec's value of the slot's metric is void
// (analyzer.whyVoid).
func (s *metricSlot) void(rec *results.Record) bool {
	return len(rec.Void) > 0 && rec.Void[s.name] != "" || s.voidable != nil && rec.WhyVoid(*s.voidable) != ""
}

// pairs returns the values of m of the blocks where both commits have
// a valid one, in repeat order: the two cells of a block ran back to
// back.
func (a *analyzer) pairs(ga, gb *group, m string) (pa, pb []float64) {
	if ga == nil || gb == nil {
		return nil, nil
	}
	ca, cb := a.column(ga, m), a.column(gb, m)
	if len(ca.reps) > 0 && slices.Equal(ca.reps, cb.reps) {
		// Every block pairs: the columns themselves, shared as values'
		// are (a copy of each was 19 MB at 10⁵ cells, live until the
		// tests were decided).
		return ca.vals, cb.vals
	}
	for i, j := 0, 0; i < len(ca.reps) && j < len(cb.reps); {
		switch {
		case ca.reps[i] < cb.reps[j]:
			i++
		case ca.reps[i] > cb.reps[j]:
			j++
		default:
			pa = append(pa, ca.vals[i])
			pb = append(pb, cb.vals[j])
			i++
			j++
		}
	}
	return pa, pb
}
