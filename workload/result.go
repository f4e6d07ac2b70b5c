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
	// Saturated: with -R the schedule lag kept growing, so the server
	// could not keep the rate; the point must not be averaged in.
	Saturated  bool              `json:"saturated"`
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
		// Never another method's numbers: the percentiles are missing,
		// and the analysis calls the cell incomplete.
		res.Warnings = append(res.Warnings, fmt.Sprintf("latency percentiles left out: %d back-to-back pairs among %d logged transactions (sampling rate %.4g), %d needed; give ExpectedTPS or run longer",
			len(lat), txlog.Count(), res.SamplingRate, MinLatencyPairs))
		lat = nil
	}
	if s.Rate > 0 || sum.TPS <= 0 {
		m[results.MetricLatencyAvg] = sum.LatencyAvgMS
	} else {
		m[results.MetricLatencyAvg] = 1000 * float64(s.Clients) / sum.TPS
	}
	if p50, p95, p99, mx, ok := Percentiles(lat); ok {
		m[results.MetricLatencyP50], m[results.MetricLatencyP95], m[results.MetricLatencyP99], m[results.MetricLatencyMax] = p50, p95, p99, mx
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
	tx := float64(sum.Processed)
	if p := res.Probe; p != nil && tx > 0 {
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
		m[results.MetricTupIns] = float64(p.Tables.Ins)
		m[results.MetricTupUpd] = float64(p.Tables.Upd)
		m[results.MetricTupDel] = float64(p.Tables.Del)
		if p.HasCPU {
			m[results.MetricServerCPUPerTx] = float64(p.CPUTicks) / clockTicks / tx
		}
	}
	if s.Rate > 0 {
		m[results.MetricLagAvg] = sum.LagAvgMS
		res.Saturated = Saturated(res.Progress, sum)
	}
	// The deallocations are counted from before the probe's first
	// reading to after its second, so they cover its window.
	res.Void = results.Builtin.Apply(m, results.Window{Deallocs: res.Final.Deallocs, DeallocsKnown: !res.Final.DeallocsUnknown})
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture abtest runs on.
const clockTicks = 100

// Saturated reports whether an open-loop (-R) run could not keep its
// rate: the schedule lag grew over the run (the last third's mean lag is
// more than twice the first third's) and ended above a bound of 10 ms or
// ten average latencies, whichever is larger.
func Saturated(progress []Progress, sum Summary) bool {
	var lags []float64
	for _, p := range progress {
		if p.HasLag {
			lags = append(lags, p.LagMS)
		}
	}
	bound := math.Max(10, 10*sum.LatencyAvgMS)
	if len(lags) < 3 {
		return sum.LagAvgMS > bound
	}
	third := len(lags) / 3
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(lags[:third]), mean(lags[len(lags)-third:])
	return last > 2*first && last > bound
}

// report prints the end of run lines like the bash harness.
func (r *Runner) report(w io.Writer, res *Result) {
	fmt.Fprintf(w, "  %s\n", res.Waits.Line(res.Clients))
	fmt.Fprintf(w, "  TPS: %.0f", res.Summary.TPS)
	if res.Saturated {
		fmt.Fprint(w, " (SATURATED: schedule lag kept growing; the server did not keep the rate)")
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
		line := fmt.Sprintf("  probe: tup_ins=%d upd=%d del=%d", p.Tables.Ins, p.Tables.Upd, p.Tables.Del)
		if p.WAL != nil {
			line += fmt.Sprintf(" wal_records=%d wal_bytes=%d fpi=%d", p.WAL.Records, p.WAL.Bytes, p.WAL.FPI)
		}
		if v, ok := m[results.MetricServerCPUPerTx]; ok {
			line += fmt.Sprintf(" server_cpu=%.1fµs/tx", v*1e6)
		}
		fmt.Fprintln(w, line)
	}
	for _, name := range slices.Sorted(maps.Keys(res.Void)) {
		fmt.Fprintf(w, "  void: %s (%s)\n", name, res.Void[name])
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "  WARNING: %s\n", warn)
	}
}
