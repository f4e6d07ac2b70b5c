package analysis

// Validity before display (issue 42): whether a row has a signal to
// judge is decided once, in the model (Stat.NoSignal), and every form
// shows a row without one as "—" with its reason, never a verdict or a
// Δ: 0 against 0, one constant in both commits, or a share that rests
// on too few samples.

import (
	"fmt"

	"github.com/pgabtest/abtest/results"
)

// minShareSamples is the fewest samples a share may rest on to be shown
// or compared. A share p of n samples has a 95 % binomial interval of
// ±1.96·√(p(1−p)/n): ±9.8 points at n = 100 and p = ½, its widest, so
// below 100 a share shown to the percent ("CPU 86 % of 14 active
// samples") is not known to ±10 points, twice the 5-point floor of a
// wait shift. Compared between two commits, a share is a count of
// events (the active backends sampled); of K events in the two arms
// together, the candidate's part has that interval at n = K, so at
// K = 100 even an even split leaves the ratio of the two shares
// anywhere in −33 % … +49 %, seven times db_time_pct's 5 % bar, and
// wider below: nothing a verdict or a Δ could say. (The demo's
// db_time_pct 2.08 → 0 rested on about 10 active samples.)
const minShareSamples = 100

// fewSharesWhy is the footnote of a share of too few samples.
var fewSharesWhy = fmt.Sprintf("a share of fewer than %d samples (both commits together): its 95%% interval spans more than -33%% … +49%%", minShareSamples)

// shareEvents is how many sampled events a record's value of metric m
// is a share of, for a metric that is a share of the wait-event
// sampler's samples (ok false for any other metric): db_time_pct counts
// the active backends among all sampled.
func shareEvents(m string, rec *results.Record) (n int, ok bool) {
	if m != results.MetricDBTimePct {
		return 0, false
	}
	if rec.Waits == nil {
		return 0, true
	}
	return rec.Waits.Active, true
}

// fewShareSamples says why a share row of commit group g against the
// baseline's has too few samples to compare ("" when it has enough, or
// the metric is no share).
func fewShareSamples(m string, base, cand *group) string {
	count := func(g *group) (int, bool) {
		n, share := 0, false
		if g == nil {
			return 0, false
		}
		for _, rec := range g.records() {
			k, ok := shareEvents(m, rec)
			n, share = n+k, share || ok
		}
		return n, share
	}
	nb, okb := count(base)
	nc, okc := count(cand)
	if !okb && !okc || nb+nc >= minShareSamples {
		return ""
	}
	return fmt.Sprintf("%s rests on %d and %d sampled active backends: fewer than %d together", m, nb, nc, minShareSamples)
}

// markNoSignal gives every commit's Stat that has nothing to judge
// against the baseline its reason (noSignal), where the analysis did
// not already (fewShareSamples).
func (r *Report) markNoSignal() {
	r.eachAgainstBase(func(base, st *Stat) {
		if st.Commit != r.Baseline && st.NoSignal == "" {
			st.NoSignal = noSignal(*base, *st)
		}
	})
}

// noSignal says why a row has nothing to judge ("" when it has): both
// commits' values all zero, or one constant shared by both. An
// incomplete row has its own answer (the run could not answer there,
// and that gates), never hidden behind a "—".
func noSignal(base, cand Stat) string {
	if cand.NoSignal != "" {
		return cand.NoSignal
	}
	if base.N == 0 || cand.N == 0 || cand.Verdict == results.Incomplete {
		return ""
	}
	b0, c0 := constant(base.Values), constant(cand.Values)
	switch {
	case b0 && c0 && base.Values[0] == 0 && cand.Values[0] == 0:
		return "0 against 0 in every cell: nothing to compare"
	case b0 && c0 && base.Values[0] == cand.Values[0]:
		return "the same constant in every cell of both commits"
	case base.Median == 0 && cand.Median == 0 && !isFinite(cand.DeltaPct):
		return "both medians 0 (a few cells above 0): a change from 0 has no size"
	}
	return ""
}

func constant(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return len(xs) > 0
}

// excludesZero: a report-only change whose 95 % interval lies on one
// side of 0 (it moved, though nothing gates it).
func excludesZero(st Stat) bool {
	return !st.Gated && st.NoSignal == "" && isFinite(st.DeltaLo) && isFinite(st.DeltaHi) && (st.DeltaLo > 0 || st.DeltaHi < 0)
}

// shareShown is whether a share of n samples may be shown
// (minShareSamples).
func shareShown(n int) bool { return n >= minShareSamples }

// noSignalMarks number the distinct reasons of a table's "—" cells: ‡,
// ‡‡, … in the order they first appear.
type noSignalMarks []string

// mark is why's mark, adding why to the list the first time.
func (m *noSignalMarks) mark(why string) string {
	for i, w := range *m {
		if w == why {
			return marks(i)
		}
	}
	*m = append(*m, why)
	return marks(len(*m) - 1)
}

func marks(i int) string {
	out := ""
	for range i + 1 {
		out += "‡"
	}
	return out
}

// footnotes are the marks' footnotes.
func (m noSignalMarks) footnotes() []Block {
	var out []Block
	for i, why := range m {
		out = append(out, &Footnote{marks(i) + " no signal: " + why + "."})
	}
	return out
}
