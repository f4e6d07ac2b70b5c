package workload

// What a run measured: the Result, its flat metrics, saturation of an
// open loop, and the lines printed at the end of the run.

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// Result is what one workload run measured.
type Result struct {
	Workload  string             `json:"workload"`
	Server    string             `json:"server"`
	Version   string             `json:"version"`
	Clients   int                `json:"clients"`
	Threads   int                `json:"threads"`
	Protocol  string             `json:"protocol"`
	Duration  float64            `json:"duration_s"`
	Rate      float64            `json:"rate,omitempty"`
	SleepMS   int                `json:"sleep_ms,omitempty"`
	StartedAt time.Time          `json:"started_at"`
	Metrics   map[string]float64 `json:"metrics"`
	// Void lists the metrics whose value this run measured but which
	// are not measurements (results.Metric.Validity), each with why:
	// they are left out of Metrics.
	Void map[string]string `json:"void,omitempty"`
	// Saturated: with -R the point fell behind the rate it was offered
	// (Saturation says by how much and why); it must not be averaged in.
	Saturated bool `json:"saturated"`
	// Saturation is how an open-loop point kept up; nil in a closed loop,
	// which is never saturated.
	Saturation *Saturation `json:"saturation,omitempty"`
	// OldestXminAge is the oldest xmin's largest age read in the window
	// (at its start, each sample, its end); nil where the role cannot
	// see other sessions' xmin.
	OldestXminAge *int64 `json:"oldest_xmin_age,omitempty"`
	// xminHidden: the role could not see other sessions' xmin, so the
	// oldest xmin's age is void.
	xminHidden bool

	Summary    Summary           `json:"pgbench"`
	Progress   []Progress        `json:"progress"`
	Samples    []Sample          `json:"samples"`
	Waits      Waits             `json:"waits"`
	Final      Final             `json:"final"`
	Probe      *Counters         `json:"probe,omitempty"`
	Statements []Statement       `json:"statements,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
	Artifacts  map[string]string `json:"artifacts,omitempty"`
	// LoggedTx is how many transactions the latency percentiles are
	// computed from, at SamplingRate.
	LoggedTx     int     `json:"logged_tx"`
	SamplingRate float64 `json:"sampling_rate"`
	// LatencyMethod says where the latency percentiles come from;
	// LatencyDetail how many values they rest on.
	LatencyMethod LatencyMethod `json:"latency_method"`
	LatencyDetail string        `json:"latency_detail,omitempty"`
	// Observer is what measuring the run cost (abtest's CPU time and
	// pgbench's latency logging, against the window).
	Observer *Observer `json:"observer,omitempty"`
}

// metrics fills the flat metrics map.
//
// Latency: in a closed loop (no -R) the average is clients/TPS (Little's
// law, pgbench's own formula without -P) and the percentiles are those of
// the intervals between back-to-back completions of a client (see
// TxLog.Intervals); open loop, both are pgbench's, counted from each
// transaction's scheduled start.
func (r *Runner) metrics(res *Result, txlog *TxLog, s Spec) {
	m := res.Metrics
	sum := res.Summary
	m[results.MetricTPS] = sum.TPS
	res.LatencyMethod = latencyMethod(s)
	var lat []float64
	if res.LatencyMethod == LatencyPgbench {
		lat = txlog.Reported()
	} else if lat = txlog.Intervals(); len(lat) < MinLatencyPairs {
		// Never another method's numbers: what the pairs cannot give is
		// missing, and the analysis calls those rows incomplete.
		left := "p99 and maximum"
		if len(lat) < MinMedianPairs {
			left = "percentiles"
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("latency %s left out: %d back-to-back pairs among %d logged transactions (sampling rate %.4g), where p50 and p95 need %d and p99 %d; the window ran far below its warm-up's pace (or give ExpectedTPS, or run longer)",
			left, len(lat), txlog.Count(), res.SamplingRate, MinMedianPairs, MinLatencyPairs))
	}
	if s.Rate > 0 || sum.TPS <= 0 {
		m[results.MetricLatencyAvg] = sum.LatencyAvgMS
	} else {
		m[results.MetricLatencyAvg] = 1000 * float64(s.Clients) / sum.TPS
	}
	if p50, p95, p99, mx, ok := Percentiles(lat); ok && (res.LatencyMethod == LatencyPgbench || len(lat) >= MinMedianPairs) {
		m[results.MetricLatencyP50], m[results.MetricLatencyP95] = p50, p95
		if res.LatencyMethod == LatencyPgbench || len(lat) >= MinLatencyPairs {
			m[results.MetricLatencyP99], m[results.MetricLatencyMax] = p99, mx
		}
		res.LatencyDetail = fmt.Sprintf("%s, %d values from %d logged transactions (sampling rate %.4g)", res.LatencyMethod, len(lat), txlog.Count(), res.SamplingRate)
	}
	m[results.MetricFailedTx] = float64(sum.Failed)
	m[results.MetricPGSSEntries] = float64(res.Final.Entries)
	if !res.Final.DeallocsUnknown {
		m[results.MetricPGSSDeallocs] = float64(res.Final.Deallocs)
	}
	if res.Final.HasClass {
		m[results.MetricPGSSHot] = float64(res.Final.Hot)
		m[results.MetricPGSSCold] = float64(res.Final.Cold)
	}
	if total := res.Waits.Idle + res.Waits.Active; total > 0 {
		m[results.MetricDBTimePct] = 100 * float64(res.Waits.Active) / float64(total)
	}
	if p := res.Probe; p != nil {
		probeMetrics(m, p, float64(sum.Processed))
	}
	if res.OldestXminAge != nil {
		m[results.MetricOldestXminAge] = float64(*res.OldestXminAge)
	}
	if s.Rate > 0 {
		openLoop(res, txlog, s)
	}
	// The deallocations are counted from before the probe's first
	// reading to after its second, so they cover its window.
	res.Void = results.Builtin.Apply(m, results.Window{Deallocs: res.Final.Deallocs, DeallocsKnown: !res.Final.DeallocsUnknown})
	res.Void = voidProbes(res.Void, res)
}

// voidProbes adds to void the probes the server could not provide,
// with why: a missing value is void, never zero.
func voidProbes(void map[string]string, res *Result) map[string]string {
	add := func(why string, names ...string) {
		if void == nil {
			void = map[string]string{}
		}
		for _, n := range names {
			void[n] = why
		}
	}
	if res.Probe != nil && res.Probe.WAL == nil {
		add(results.VoidNoStatWAL, results.MetricWALRecordsPerTx, results.MetricWALBytesPerTx, results.MetricWALFPIPerTx)
	}
	if res.xminHidden {
		add(results.VoidXminHidden, results.MetricOldestXminAge)
	}
	return void
}

// probeMetrics fills m with the probe's counters over the window, per
// transaction where the window's work grows with its throughput; none
// per transaction when none committed.
func probeMetrics(m map[string]float64, p *Counters, tx float64) {
	t := p.Tables
	m[results.MetricTupIns] = float64(t.Ins)
	m[results.MetricTupUpd] = float64(t.Upd)
	m[results.MetricTupDel] = float64(t.Del)
	m[results.MetricDeadTupGrowth] = float64(t.Dead)
	m[results.MetricAutovacuumRuns] = float64(t.Autovacuum)
	m[results.MetricAutoanalyzeRuns] = float64(t.Autoanalyze)
	m[results.MetricTableGrowth] = float64(t.HeapBytes)
	m[results.MetricIndexGrowth] = float64(t.IndexBytes)
	if t.Upd > 0 {
		m[results.MetricHOTUpdatePct] = 100 * float64(t.HotUpd) / float64(t.Upd)
	}
	if tx <= 0 {
		return
	}
	if p.WAL != nil {
		m[results.MetricWALRecordsPerTx] = float64(p.WAL.Records) / tx
		m[results.MetricWALBytesPerTx] = float64(p.WAL.Bytes) / tx
		m[results.MetricWALFPIPerTx] = float64(p.WAL.FPI) / tx
	}
	var rows, calls int64
	for _, k := range p.Kinds {
		rows += k.Rows
		calls += k.Calls
	}
	m[results.MetricStatementsPerTx] = float64(calls) / tx
	m[results.MetricRowsPerTx] = float64(rows) / tx
	m[results.MetricTupInsPerTx] = float64(t.Ins) / tx
	m[results.MetricTupUpdPerTx] = float64(t.Upd) / tx
	m[results.MetricTupDelPerTx] = float64(t.Del) / tx
	m[results.MetricDeadTupPerTx] = float64(t.Dead) / tx
	m[results.MetricTableGrowthPerTx] = float64(t.HeapBytes) / tx
	m[results.MetricIndexGrowthPerTx] = float64(t.IndexBytes) / tx
	m[results.MetricBuffersHitPerTx] = float64(t.BlksHit) / tx
	m[results.MetricBuffersReadPerTx] = float64(t.BlksRead) / tx
	if p.HasCPU {
		m[results.MetricServerCPUPerTx] = float64(p.CPUTicks) / clockTicks / tx
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture abtest runs on.
const clockTicks = 100

// DefaultBacklogBound is how far behind its offered rate an open-loop
// point may fall before it is saturated: seed 000 marked a point
// saturated once its backlog exceeded 5 s of offered work.
const DefaultBacklogBound = 5 * time.Second

// MinCommittedShare is the share of the offered transactions a point
// must commit; below it the point is saturated however short it is (a
// 3 s point cannot build a 5 s backlog). This VM's throughput varies
// by 5–8 % from run to run, so a point offered about its capacity
// commits 92–100 % of the offer on one run or another: only a shortfall
// beyond that noise is "clearly less". A point well within capacity
// commits its whole offer but the transactions in flight at the end.
const MinCommittedShare = 0.9

// SaturationOf judges an open-loop point offered rate tx/s whose
// pgbench summary is sum, against a backlog bound (0: the default);
// duration is the run's -T, for a point that committed nothing; stalls
// are the window's (TxLog.Stalls), nil when unknown.
//
// The point is saturated when its backlog passed the bound, or when it
// committed less than MinCommittedShare of its offer by more than
// pgbench's own schedule varies: pgbench draws the starts of an offered
// rate from a Poisson process, whose count over a window of n expected
// transactions spreads by √n (a 3 s point at 30 tx/s, 90 expected,
// commits 72–108 without falling behind); 3√n is left to chance.
// Nothing here depends on progress reports, which a short cell has too
// few of to show a trend.
//
// A stall is not saturation (issue 40: a 1 s stall of a 3 s cell, or
// one at its end, called an easy point saturated). Its length counts
// in the backlog, so a stall as long as the bound saturates; the share
// is judged on the time outside the stalls, where a point that keeps
// its rate commits its offer (after a stall in the middle it catches
// up, and need not have by the end), while a point that falls behind
// steadily does not, stalls or none. A point whose stalls took half
// its window or more has shown too little to be excused.
func SaturationOf(rate float64, sum Summary, bound time.Duration, duration float64, stalls []Stall) Saturation {
	if bound <= 0 {
		bound = DefaultBacklogBound
	}
	sat := Saturation{OfferedTPS: rate, CommittedTPS: sum.TPS, BoundS: bound.Seconds()}
	if rate <= 0 {
		return sat
	}
	elapsed := WindowSeconds(sum, duration)
	for _, st := range stalls {
		sat.Stalls++
		sat.StallMaxS = math.Max(sat.StallMaxS, st.S)
		sat.StalledS += st.S
	}
	offered := rate * elapsed
	short := offered - float64(sum.Processed)
	sat.BacklogS = math.Max(math.Max(math.Max(short, 0)/rate, sum.LagMaxMS/1000), sat.StallMaxS)
	var why []string
	if sat.BacklogS > sat.BoundS {
		why = append(why, fmt.Sprintf("backlog reached %.1f s of offered work, beyond the bound of %.3g s", sat.BacklogS, sat.BoundS))
	}
	owed, outside := offered, ""
	if sat.Stalls > 0 && sat.StalledS < elapsed/2 {
		owed = rate * (elapsed - sat.StalledS)
		outside = fmt.Sprintf(" outside its %s (%.1f s)", text.Count(sat.Stalls, "stall"), sat.StalledS)
	}
	if short := owed - float64(sum.Processed); short > (1-MinCommittedShare)*owed && short > 3*math.Sqrt(owed) {
		why = append(why, fmt.Sprintf("committed %.0f of the %.0f tx/s offered (%.0f %%%s, below %.0f %%)", sum.TPS, rate, 100*float64(sum.Processed)/owed, outside, 100*MinCommittedShare))
	}
	sat.Saturated, sat.Reason = len(why) > 0, strings.Join(why, "; ")
	return sat
}

// report prints the end of run lines like the bash harness.
func (r *Runner) report(w io.Writer, res *Result) {
	fmt.Fprintf(w, "  %s\n", res.Waits.Line(res.Clients))
	fmt.Fprintf(w, "  TPS: %.0f", res.Summary.TPS)
	if res.Saturated {
		fmt.Fprintf(w, " (SATURATED: %s)", res.Saturation.Reason)
	}
	fmt.Fprintln(w)
	m := res.Metrics
	if _, ok := m[results.MetricLatencyP50]; ok {
		fmt.Fprintf(w, "  latency: avg=%.3f p50=%.3f p95=%.3f p99=%.3f max=%.3f ms (%s)\n",
			m[results.MetricLatencyAvg], m[results.MetricLatencyP50], m[results.MetricLatencyP95], m[results.MetricLatencyP99], m[results.MetricLatencyMax], res.LatencyDetail)
	}
	f := res.Final
	if f.HasClass {
		fmt.Fprintf(w, "  FINAL: entries=%d hot=%d cold=%d hot_calls=%d cold_calls=%d\n", f.Entries, f.Hot, f.Cold, f.HotCalls, f.ColdCalls)
	} else {
		fmt.Fprintf(w, "  FINAL: entries=%d\n", f.Entries)
	}
	if f.DeallocsUnknown {
		fmt.Fprintln(w, "  deallocs: unknown (no pg_stat_statements_info before PostgreSQL 14)")
	} else {
		fmt.Fprintf(w, "  deallocs: %d\n", f.Deallocs)
	}
	if len(f.Histogram) > 0 {
		var parts []string
		for _, b := range f.Histogram {
			parts = append(parts, fmt.Sprintf("%s:%d", b.Label, b.N))
		}
		fmt.Fprintf(w, "  histogram: %s\n", strings.Join(parts, " "))
	}
	if p := res.Probe; p != nil {
		t := p.Tables
		line := fmt.Sprintf("  probe: tup_ins=%d upd=%d hot=%d del=%d dead=%+d autovacuum=%d autoanalyze=%d heap=%+dB index=%+dB blks_hit=%d blks_read=%d",
			t.Ins, t.Upd, t.HotUpd, t.Del, t.Dead, t.Autovacuum, t.Autoanalyze, t.HeapBytes, t.IndexBytes, t.BlksHit, t.BlksRead)
		if p.WAL != nil {
			line += fmt.Sprintf(" wal_records=%d wal_bytes=%d fpi=%d", p.WAL.Records, p.WAL.Bytes, p.WAL.FPI)
		}
		if v, ok := m[results.MetricServerCPUPerTx]; ok {
			line += fmt.Sprintf(" server_cpu=%.1fµs/tx", v*1e6)
		}
		fmt.Fprintln(w, line)
	}
	if res.OldestXminAge != nil {
		fmt.Fprintf(w, "  oldest xmin age: %d transactions\n", *res.OldestXminAge)
	}
	for _, name := range slices.Sorted(maps.Keys(res.Void)) {
		fmt.Fprintf(w, "  void: %s (%s)\n", name, res.Void[name])
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "  WARNING: %s\n", warn)
	}
}
