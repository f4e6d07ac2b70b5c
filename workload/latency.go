package workload

// Where a run's latency percentiles come from: the method, fixed by the
// run's configuration, and the sampling rate of pgbench's transaction
// log.

import (
	"math"
	"runtime"
)

// LoggedTxPerSecond is the per-transaction log's budget, in lines per
// second of window: the sampling rate is chosen so that about this many
// transactions a second are logged, whatever the cell's length. Each
// line costs pgbench about 1 µs of CPU (pgbenchLogLine; 2.3 µs on an
// older machine), so the budget is about 0.2 % of one core (0.5 %); a
// fixed 100 000 lines a cell cost a 3 s cell at 40 000 tx/s 1.6 % at
// 2.3 µs (issue 27). At that throughput it gives
// LoggedTxPerSecond²/TPS = 100 back-to-back pairs a second, 300 in a
// 3 s cell; the pair rule of samplingRate keeps short cells above
// MinLatencyPairs.
const LoggedTxPerSecond = 2000

// maxLoggedTxPerRun bounds the log of a run of -t transactions, which
// has no window to scale LoggedTxPerSecond by (about 4 MB).
const maxLoggedTxPerRun = 100000

// MinLatencyPairs is the fewest back-to-back pairs (see TxLog.Intervals)
// a closed-loop run needs for its p99 and maximum latency; with fewer,
// they are left out with a warning rather than taken from another
// method (p99 of fewer than 100 values is their maximum).
const MinLatencyPairs = 100

// MinMedianPairs is the fewest pairs for p50 and p95, which keep their
// rank to one standard error of ±7.9 and ±3.4 points at 40 pairs. The
// log is sized for 3 × MinLatencyPairs at the expected throughput, so a
// window that ran at under a third of its warm-up's pace lost every
// percentile: under load, 2 of 36 cells of a 3 s matrix did, and the
// gate, missing its gated p50 and p95, could not answer (exit 3). Now
// they survive a window at a seventh of the pace.
const MinMedianPairs = 40

// maxTPSPerCPU bounds the transactions per second one CPU can serve,
// for the sampling rate when the throughput is not known: SELECT 1
// from 64 clients, the cheapest transaction, ran at 60 000 per CPU on
// this 2-core VM (Debian's PostgreSQL 15, 5 s cells). A host that
// exceeds it logs a little more than its budget, with more pairs.
const maxTPSPerCPU = 100000

// LatencyMethod says where a result's latency percentiles come from. It
// is decided by the run's configuration alone, never by what the run
// measured, so that every cell of a configuration uses the same one;
// cells whose methods differ must not be compared.
type LatencyMethod string

// The latency methods.
const (
	// LatencyIntervals: closed loop (no -R); the intervals between a
	// client's back-to-back completions (TxLog.Intervals).
	LatencyIntervals LatencyMethod = "completion-intervals"
	// LatencyPgbench: open loop (-R); pgbench's own latencies, counted
	// from each transaction's scheduled start (TxLog.Reported).
	LatencyPgbench LatencyMethod = "pgbench-latency"
)

// latencyMethod is the method of spec's runs.
func latencyMethod(s Spec) LatencyMethod {
	if s.Rate > 0 {
		return LatencyPgbench
	}
	return LatencyIntervals
}

// samplingRate picks pgbench's --sampling-rate so that about
// LoggedTxPerSecond transactions a second of window are logged
// (maxLoggedTxPerRun for a run of -t transactions). Where the
// throughput is only bounded, the budget is at least maxLoggedTxPerRun
// a run: under load a cell runs at a twentieth of the bound (c = 64 at
// load 18: 10 000 of 200 000 tx/s), and a budget per second of the
// bound left it 42 pairs; the matrix's cells know their warm-up's TPS.
// The transactions to come are estimated from -t, the rate (-R),
// ExpectedTPS, or else an upper bound: clients × (1000/think time), or
// the lesser of clients × 20 000 and CPUs × maxTPSPerCPU per second.
//
// A closed loop's percentiles need back-to-back pairs, which a rate r
// samples at r² (issue 13: at c = 64, d = 30 the old clients × 20 000
// bound logged so few pairs that every real cell fell back to pgbench's
// biased latencies). So the rate is at least √(k × MinLatencyPairs /
// expected), which at the expected count yields k times the pairs
// needed. Where the count is a bound, k = 10: the bound overestimates
// (select1 at 8 clients on 2 busy cores: 160 000 tx/s bounded, 15 000–
// 40 000 run), and a cell run at a tenth of it still has its 100
// pairs. Where it was measured (ExpectedTPS: a warm-up's throughput) or
// given (-t), k = 3, which at 40 000 tx/s in a 3 s cell is the budget's
// own 300 pairs; with a good estimate the budget alone gives
// LoggedTxPerSecond²/TPS pairs a second.
//
// A measured count is the higher of ExpectedTPS (the warm-up's) and
// PeakTPS (earlier windows'): a warm-up that reads low cannot make a
// cell log past its budget. Sized for the peak, a window that runs at
// the warm-up's pace, far below it, would lose its pairs: the rate is
// also at least √(MinLatencyPairs / the warm-up's count), which only
// binds where the warm-up read under a third of the peak.
func samplingRate(s Spec) float64 {
	rate := sampledShare(s)
	if s.ExpectedTPS > 0 && s.PeakTPS > s.ExpectedTPS && s.Transactions == 0 && s.Rate == 0 {
		rate = math.Max(rate, math.Sqrt(MinLatencyPairs/(s.ExpectedTPS*s.Duration.Seconds())))
	}
	// pgbench takes a decimal; keep four significant digits.
	return math.Min(1, math.Max(rate, 0.0001))
}

// sampledShare is samplingRate's share of the expected transactions.
func sampledShare(s Spec) float64 {
	var expected float64
	secs := s.Duration.Seconds()
	budget := LoggedTxPerSecond * secs
	pairs := 10.0 * MinLatencyPairs // at the expected count
	switch {
	case s.Transactions > 0:
		expected = float64(s.Transactions * s.Clients)
		budget, pairs = maxLoggedTxPerRun, 3*MinLatencyPairs
	case s.Rate > 0:
		expected = s.Rate * secs
	case s.ExpectedTPS > 0 || s.PeakTPS > 0:
		expected = math.Max(s.ExpectedTPS, s.PeakTPS) * secs
		pairs = 3 * MinLatencyPairs
	case s.SleepMS > 0:
		expected = float64(s.Clients) * 1000 / float64(s.SleepMS) * secs
		budget = math.Max(budget, maxLoggedTxPerRun)
	default:
		cpus := runtime.NumCPU()
		if n := len(s.CPUs); n > 0 {
			cpus = n
		}
		expected = math.Min(float64(s.Clients)*20000, float64(cpus)*maxTPSPerCPU) * secs
		budget = math.Max(budget, maxLoggedTxPerRun)
	}
	if expected <= budget {
		return 1
	}
	rate := budget / expected
	if s.Rate == 0 {
		rate = math.Max(rate, math.Sqrt(pairs/expected))
	}
	return rate
}
