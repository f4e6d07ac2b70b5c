package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// MaxRate is the highest offered rate (pgbench -R) abtest accepts, in
// transactions per second: beyond any server, and far below where
// pgbench's schedule arithmetic loses precision.
const MaxRate = 1e9

// CheckRate refuses an offered rate that is not a number from 0 (a
// closed loop) to MaxRate: NaN and infinities included.
func CheckRate(r float64) error {
	if !(r >= 0 && r <= MaxRate) {
		return fmt.Errorf("rate %g: want 0 (a closed loop) to %g transactions per second", r, float64(MaxRate))
	}
	return nil
}

// MinStall is the shortest gap without a commit that is a stall: a 3 s
// cell loses its committed share (MinCommittedShare) to a 0.3 s gap at
// its end, and a shorter one moves no verdict.
const MinStall = 250 * time.Millisecond

// stallChance is how often a cell whose point keeps its rate may show a
// gap taken for a stall. Such a point commits on pgbench's Poisson
// schedule, whose n gaps at a logged rate of λ a second exceed x seconds
// with probability about n·e^(−λx): a gap is a stall beyond
// ln(n/stallChance)/λ (0.08 s at 200 tx/s in 3 s, 0.46 s at 30).
const stallChance = 1e-4

// Stall is a gap in an open-loop window in which nothing committed, for
// longer than chance allows at the point's rate: the server (or the
// host) stopped, and the transactions offered meanwhile waited. AtS is
// when it began, in seconds from the window's start; S how long it was.
type Stall struct {
	AtS float64 `json:"at_s"`
	S   float64 `json:"s"`
}

// Stalls returns the stalls of an open-loop window of elapsed seconds
// (WindowSeconds), from the logged transactions' completion times: the
// gaps between them, and from the window's start to the first and from
// the last to its end, longer than MinStall and than chance allows at
// the logged rate (stallChance). The window starts at the earliest
// scheduled start: with -R, pgbench's latency counts from it.
func (l *TxLog) Stalls(elapsed float64) []Stall {
	if len(l.tx) < 2 || elapsed <= 0 {
		return nil
	}
	ends := make([]int64, len(l.tx))
	start := int64(math.MaxInt64)
	for i, t := range l.tx {
		ends[i] = t.endUS
		start = min(start, t.endUS-t.latencyUS)
	}
	slices.Sort(ends)
	end := start + int64(elapsed*1e6)
	minGap := max(MinStall.Seconds(), math.Log(float64(len(ends)+1)/stallChance)/(float64(len(ends))/elapsed))
	var out []Stall
	prev := start
	for i := 0; i <= len(ends); i++ {
		at := end
		if i < len(ends) {
			at = min(ends[i], end)
		}
		if gap := float64(at-prev) / 1e6; gap > minGap {
			out = append(out, Stall{AtS: float64(prev-start) / 1e6, S: gap})
		}
		prev = max(prev, at)
	}
	return out
}

// WindowSeconds is how long an open-loop window ran: pgbench's own
// measured time (processed / TPS), else duration (-T) when nothing
// committed.
func WindowSeconds(sum Summary, duration float64) float64 {
	if sum.TPS > 0 {
		return float64(sum.Processed) / sum.TPS
	}
	return duration
}

// openLoop fills res's open-loop metrics and saturation: the offered
// rate, the backlog, the stalls (from txlog) and whether the point is
// saturated, with a warning for either.
func openLoop(res *Result, txlog *TxLog, s Spec) {
	m, sum := res.Metrics, res.Summary
	m[results.MetricLagAvg] = sum.LagAvgMS
	stalls := txlog.Stalls(WindowSeconds(sum, res.Duration))
	sat := SaturationOf(s.Rate, sum, s.BacklogBound, res.Duration, stalls)
	res.Saturation, res.Saturated = &sat, sat.Saturated
	m[results.MetricOfferedTPS], m[results.MetricBacklog] = sat.OfferedTPS, sat.BacklogS
	m[results.MetricStalls], m[results.MetricStallMax] = float64(sat.Stalls), sat.StallMaxS
	if len(stalls) > 0 {
		res.Warnings = append(res.Warnings, stallNote(stalls, sat))
	}
	if sat.Saturated {
		res.Warnings = append(res.Warnings, "saturated: "+sat.Reason)
	}
}

// stallNote says what the stalls were and what they were judged.
func stallNote(stalls []Stall, sat Saturation) string {
	var at []string
	for _, st := range stalls {
		at = append(at, fmt.Sprintf("%.2f s at %.2f s", st.S, st.AtS))
	}
	judged := "not saturation: outside them the point committed its offer"
	if sat.Saturated {
		judged = "the point is saturated besides"
	}
	return fmt.Sprintf("stalled: nothing committed for %s into the window (%s, longest %.2f s); %s", strings.Join(at, ", "), text.Count(len(stalls), "stall"), sat.StallMaxS, judged)
}
