package analysis

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// Every plot's value axis comes from its data (scaleY): a log axis when
// the values span more than maxLinearSpan×, else one from 0 to a little
// above the largest value, whatever its size (server_cpu_s_per_tx is
// 2e-5 s: an axis to at least 1 drew it flat on 0), so that a
// difference looks as large as it is and is seen; tick labels of tiny
// or huge values carry an SI prefix (20µ, 1.5M), not 2e-05.

// scaleY sets p's y axis from the data added to p (its range is theirs
// after Add).
func scaleY(p *plot.Plot) {
	if logIfWide(&p.Y, []float64{p.Y.Min, p.Y.Max}) {
		return
	}
	fromZero(p)
}

// fromZero starts the y axis at 0 (or below, for negative data) with a
// little room above the data; an axis of no data or of zeros only is
// 0–1.
func fromZero(p *plot.Plot) {
	p.Y.Min = math.Min(0, p.Y.Min)
	if !(p.Y.Max > 0) || !isFinite(p.Y.Max) {
		p.Y.Max = 1
	} else {
		p.Y.Max *= 1.05
	}
	p.Y.Tick.Marker = siTicks{plot.DefaultTicks{}}
}

// siTicks are another marker's ticks, labelled with an SI prefix when
// the axis's values are tiny or huge (below 0.01 or from 10⁵).
type siTicks struct{ plot.Ticker }

func (s siTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := s.Ticker.Ticks(lo, hi)
	largest := 0.0
	for _, t := range ticks {
		if t.Label != "" {
			largest = math.Max(largest, math.Abs(t.Value))
		}
	}
	if largest == 0 || largest >= 0.01 && largest < 1e5 {
		for i, t := range ticks {
			// gonum pads to the ticks' precision: 50000.00, 0.00.
			if strings.Contains(t.Label, ".") && !strings.ContainsAny(t.Label, "eE") {
				ticks[i].Label = strings.TrimRight(strings.TrimRight(t.Label, "0"), ".")
			}
		}
		return ticks
	}
	_, isLog := s.Ticker.(plot.LogTicks)
	for i, t := range ticks {
		if t.Label == "" {
			continue
		}
		ref := largest
		if isLog {
			// A decade each: each its own prefix.
			ref = math.Abs(t.Value)
		}
		ticks[i].Label = siLabel(t.Value, ref)
	}
	return ticks
}

// siPrefixes are the SI prefixes by exponent/3 + 4 (n … T).
var siPrefixes = []string{"p", "n", "µ", "m", "", "k", "M", "G", "T"}

// siLabel is v with the SI prefix of ref's magnitude: 2e-05 of an axis
// to 3e-05 is "20µ". Beyond the prefixes, v in scientific notation.
func siLabel(v, ref float64) string {
	if v == 0 {
		return "0"
	}
	exp := int(math.Floor(math.Log10(ref)/3)) * 3
	i := exp/3 + 4
	if i < 0 || i >= len(siPrefixes) || !isFinite(v) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v/math.Pow(10, float64(exp)), 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + siPrefixes[i]
}

// maxLinearSpan is the largest ratio of a plot's largest value to its
// smallest that a linear axis shows: beyond it (20–50 ms beside a 5 s
// saturated point) the small values sit on 0, and the axis is a log one.
const maxLinearSpan = 20

// logIfWide puts axis a on a log scale when vals (all positive) span
// more than maxLinearSpan×, and says whether it did.
func logIfWide(a *plot.Axis, vals []float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if !isFinite(v) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if !(lo > 0) || hi/lo <= maxLinearSpan {
		return false
	}
	a.Scale = plot.LogScale{}
	a.Tick.Marker = siTicks{plot.LogTicks{Prec: -1}}
	a.Label.Text += " (log scale)"
	return true
}
