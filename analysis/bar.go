package analysis

// The bar a change must pass and an equivalence must fit: the user's.

import (
	"fmt"
	"math"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// Bar says where a metric's bar comes from (Options.Bar): the one a
// change must pass to be better or worse, and the one its equivalence interval
// must lie within to be the same.
type Bar int

const (
	// BarThreshold is the metric's threshold (--threshold, or its
	// declaration's): the bar the user set. Noise never widens it; an
	// interval too wide for it is unknown, and the run says how many
	// repeats would fit it.
	BarThreshold Bar = iota
	// BarAuto (--bar auto) widens the bar in each configuration to
	// noiseK × the baseline's spread where that is larger, as abtest did
	// before issue 40; the run-level line names the bar and where it came
	// from, so a same at ±9 % is never read as a same at ±2 %.
	BarAuto
)

func (b Bar) String() string {
	if b == BarAuto {
		return "auto"
	}
	return "threshold"
}

// MarshalText names the bar in JSON: "threshold" or "auto".
func (b Bar) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads a bar MarshalText wrote (a report read back).
func (b *Bar) UnmarshalText(text []byte) error {
	v, err := ParseBar(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// ParseBar reads --bar: "threshold" (or empty) or "auto".
func ParseBar(s string) (Bar, error) {
	switch s {
	case "", "threshold":
		return BarThreshold, nil
	case "auto":
		return BarAuto, nil
	}
	return BarThreshold, exitcode.BadInputf("--bar %q: want threshold (the default: each metric's threshold, or --threshold) or auto (widened by the baseline's noise)", s)
}

// ParseBars reads the bars the user set: --threshold (ParseThresholds)
// and --bar (ParseBar).
func ParseBars(thresholds []string, bar string) (map[string]float64, Bar, error) {
	th, err := ParseThresholds(thresholds)
	if err != nil {
		return th, BarThreshold, err
	}
	b, err := ParseBar(bar)
	return th, b, err
}

// barText names a bar of pct percent as the reader needs it: where it
// came from when it is not the user's.
func barText(pct float64, b Bar) string {
	if b == BarAuto {
		return fmt.Sprintf("the bar ±%.3g%% (auto, from the baseline's spread)", pct)
	}
	return fmt.Sprintf("±%.3g%%", pct)
}

// autoBarLine says, under --bar auto, how far the noise widened the
// bars of the gated verdicts: the widest against its threshold, and
// where; "" under the user's bar.
func (r *Report) autoBarLine() string {
	if r.Bar != BarAuto {
		return ""
	}
	th := map[string]float64{}
	for _, t := range r.Tiers {
		th[t.Metric] = t.ThresholdPct
	}
	var widest float64
	var where string
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Verdict == results.VerdictBaseline || st.Verdict == results.Incomplete || !st.Gated || math.IsInf(st.MinEffectPct, 0) || math.IsNaN(st.MinEffectPct) {
				continue
			}
			if w := st.MinEffectPct - th[row.Metric]; w > widest {
				widest, where = w, fmt.Sprintf("±%.3g%% for %s on %s, its threshold ±%.3g%%", st.MinEffectPct, row.Metric, row.Config, th[row.Metric])
			}
		}
	}
	if where == "" {
		return fmt.Sprintf("--bar auto: no bar was widened (no baseline spread above %.3g × its threshold)", 1/noiseK)
	}
	return "--bar auto: bars widened by the baseline's spread, up to " + where + ": a same there means within that bar, not the threshold"
}
