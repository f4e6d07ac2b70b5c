package results

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// What a workload run measures besides its metrics: the live sampler's
// lines, pgbench's progress, wait events, pg_stat_statements at the end
// and the counter probes. The workload package produces these; they are
// stored in cells.jsonl as they are.

// Sample is one line of the live sampler:
//
//	t=5s entries=5005 hot=1000 cold=4003 tps=75697 dealloc=5 age=[1s..5s avg=5s sd=0s] calls=[1..362 avg=63 sd=122] fp=a7b9cc21 waits=[CPU(42)]
type Sample struct {
	T       float64   `json:"t"`
	Entries int       `json:"entries"`
	Hot     int       `json:"hot"`
	Cold    int       `json:"cold"`
	TPS     float64   `json:"tps"`
	Dealloc int64     `json:"dealloc"`
	Age     Dist      `json:"age_s"`
	Calls   Dist      `json:"calls"`
	FP      string    `json:"fp"`
	Waits   []WaitTop `json:"waits"`
	// XminAge is the oldest xmin's age, in transactions, at the sample
	// (OldestXmin); 0 where it could not be read.
	XminAge  int64 `json:"xmin_age,omitempty"`
	HasClass bool  `json:"-"`
}

// Dist summarises a distribution.
type Dist struct {
	Min, Max, Avg, SD float64
}

// WaitTop is a wait event and how often it was seen since the last line.
type WaitTop struct {
	Event string `json:"event"`
	N     int    `json:"n"`
}

// Line renders the sample like the bash harness did.
func (s Sample) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%-4s entries=%-5d ", fmt.Sprintf("%.0fs", s.T), s.Entries)
	if s.HasClass {
		fmt.Fprintf(&b, "hot=%-5d cold=%-5d ", s.Hot, s.Cold)
	}
	fmt.Fprintf(&b, "tps=%-8.0f dealloc=%-6d age=[%.0fs..%.0fs avg=%.0fs sd=%.0fs] calls=[%.0f..%.0f avg=%.0f sd=%.0f] fp=%s waits=[",
		s.TPS, s.Dealloc, s.Age.Min, s.Age.Max, s.Age.Avg, s.Age.SD, s.Calls.Min, s.Calls.Max, s.Calls.Avg, s.Calls.SD, s.FP)
	for i, w := range s.Waits {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(%d)", w.Event, w.N)
	}
	b.WriteString("]")
	return b.String()
}

// Final is the state of pg_stat_statements at the end of a run.
type Final struct {
	Entries   int   `json:"entries"`
	Hot       int   `json:"hot"`
	Cold      int   `json:"cold"`
	HotCalls  int64 `json:"hot_calls"`
	ColdCalls int64 `json:"cold_calls"`
	Deallocs  int64 `json:"deallocs"`
	// DeallocsUnknown: the server has no pg_stat_statements_info
	// (PostgreSQL < 14), so Deallocs is 0 without having been read.
	DeallocsUnknown bool           `json:"deallocs_unknown,omitempty"`
	Histogram       []HistogramBin `json:"calls_histogram"`
	HasClass        bool           `json:"-"`
}

// HistogramBin counts entries whose calls fall in a range.
type HistogramBin struct {
	Label string `json:"label"`
	N     int    `json:"n"`
}

// Waits is the wait-event sampler's tally: each tick looks at every client
// backend of the benchmark database once.
type Waits struct {
	Ticks   int            `json:"ticks"`
	Idle    int            `json:"idle"`
	Active  int            `json:"active"`
	ByEvent map[string]int `json:"by_event"`
	Seconds float64        `json:"seconds"`
}

// Line renders db_time: idle=…% db=…% (CPU=…% LWLock:…=…%).
func (w Waits) Line(clients int) string {
	total := w.Idle + w.Active
	if total == 0 {
		return "db_time: no samples"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "db_time: idle=%.1f%% db=%.1f%% (", 100*float64(w.Idle)/float64(total), 100*float64(w.Active)/float64(total))
	for i, e := range w.top(len(w.ByEvent)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%.1f%%", e.Event, 100*float64(e.N)/float64(max(w.Active, 1)))
	}
	fmt.Fprintf(&b, ") (%d active samples over %.0fs, %d clients)", w.Active, w.Seconds, clients)
	return b.String()
}

func (w Waits) top(n int) []WaitTop {
	var out []WaitTop
	for _, k := range slices.Sorted(maps.Keys(w.ByEvent)) {
		out = append(out, WaitTop{k, w.ByEvent[k]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].N > out[j].N })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Counters are cumulative server counters read around the measured
// window; a probe is the difference of two readings (seed 001: counters
// that never vary gate a change exactly, where TPS cannot).
type Counters struct {
	// Kinds maps a statement kind (SELECT, INSERT, …) to the calls and
	// rows pg_stat_statements counted for it.
	Kinds map[string]KindCounters `json:"kinds"`
	// WAL is pg_stat_wal (PostgreSQL ≥ 14).
	WAL    *WALCounters  `json:"wal,omitempty"`
	Tables TableCounters `json:"tables"`
	// CPUTicks is the server's CPU time in clock ticks (postmaster and
	// every child, exited ones included), when the server is local.
	CPUTicks int64 `json:"cpu_ticks"`
	HasCPU   bool  `json:"has_cpu"`
}

// KindCounters are pg_stat_statements sums for one statement kind.
type KindCounters struct {
	Calls int64 `json:"calls"`
	Rows  int64 `json:"rows"`
}

// WALCounters are pg_stat_wal's.
type WALCounters struct {
	Records int64 `json:"records"`
	FPI     int64 `json:"fpi"`
	Bytes   int64 `json:"bytes"`
}

// TableCounters are sums over the database's user tables: the counters
// of pg_stat_user_tables and pg_statio_user_tables, and the tables' and
// their indexes' sizes. Dead and the sizes are levels, not counters: a
// probe's difference is their growth over the window.
type TableCounters struct {
	Ins         int64 `json:"n_tup_ins"`
	Upd         int64 `json:"n_tup_upd"`
	Del         int64 `json:"n_tup_del"`
	HotUpd      int64 `json:"n_tup_hot_upd"`
	Dead        int64 `json:"n_dead_tup"`
	Autovacuum  int64 `json:"autovacuum_count"`
	Autoanalyze int64 `json:"autoanalyze_count"`
	// BlksHit and BlksRead are the tables', their indexes' and TOAST's
	// buffer hits and reads (pg_statio_user_tables).
	BlksHit  int64 `json:"blks_hit"`
	BlksRead int64 `json:"blks_read"`
	// HeapBytes is pg_relation_size (the main fork), IndexBytes
	// pg_indexes_size.
	HeapBytes  int64 `json:"heap_bytes"`
	IndexBytes int64 `json:"index_bytes"`
}

// Statement is one entry's timing over the window.
type Statement struct {
	Query  string  `json:"query"`
	Calls  int64   `json:"calls"`
	MeanMS float64 `json:"mean_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// Sub returns the counters' change from before to c.
func (c Counters) Sub(before Counters) Counters {
	d := Counters{Kinds: map[string]KindCounters{}, HasCPU: c.HasCPU && before.HasCPU}
	for k, v := range c.Kinds {
		b := before.Kinds[k]
		d.Kinds[k] = KindCounters{Calls: v.Calls - b.Calls, Rows: v.Rows - b.Rows}
	}
	if c.WAL != nil && before.WAL != nil {
		d.WAL = &WALCounters{Records: c.WAL.Records - before.WAL.Records, FPI: c.WAL.FPI - before.WAL.FPI, Bytes: c.WAL.Bytes - before.WAL.Bytes}
	}
	a, b := c.Tables, before.Tables
	d.Tables = TableCounters{
		Ins: a.Ins - b.Ins, Upd: a.Upd - b.Upd, Del: a.Del - b.Del,
		HotUpd: a.HotUpd - b.HotUpd, Dead: a.Dead - b.Dead,
		Autovacuum: a.Autovacuum - b.Autovacuum, Autoanalyze: a.Autoanalyze - b.Autoanalyze,
		BlksHit: a.BlksHit - b.BlksHit, BlksRead: a.BlksRead - b.BlksRead,
		HeapBytes: a.HeapBytes - b.HeapBytes, IndexBytes: a.IndexBytes - b.IndexBytes,
	}
	d.CPUTicks = c.CPUTicks - before.CPUTicks
	return d
}

// Progress is one pgbench -P line:
//
//	progress: 5.0 s, 117234.5 tps, lat 0.545 ms stddev 0.123, 0 failed
//	progress: 10.0 s, 999.8 tps, lat 1.2 ms stddev 0.4, lag 0.052 ms, 0 failed
type Progress struct {
	T        float64 `json:"t"`
	TPS      float64 `json:"tps"`
	LatMS    float64 `json:"lat_ms"`
	StddevMS float64 `json:"stddev_ms"`
	LagMS    float64 `json:"lag_ms,omitempty"`
	Failed   int64   `json:"failed,omitempty"`
	Skipped  int64   `json:"skipped,omitempty"`
	HasLag   bool    `json:"-"`
}

// Saturation is how an open-loop (pgbench -R) point kept up with the
// rate it was offered. A saturated point measured a queue, not the
// server: it is reported, never averaged in.
type Saturation struct {
	OfferedTPS   float64 `json:"offered_tps"`
	CommittedTPS float64 `json:"committed_tps"`
	// BacklogS is the most offered work, in seconds of it, the point
	// fell behind by: the larger of what was offered and not committed
	// by the end and pgbench's largest schedule lag.
	BacklogS float64 `json:"backlog_s"`
	// BoundS is the backlog beyond which the point is saturated.
	BoundS    float64 `json:"bound_s"`
	Saturated bool    `json:"saturated"`
	// Stalls counts the gaps in which the point committed nothing for
	// longer than chance allows (workload.Stall); StallMaxS is the
	// longest, StalledS their sum. A stall is not saturation: the
	// backlog it leaves counts against the bound, and the point is
	// judged on what it committed outside its stalls.
	Stalls    int     `json:"stalls,omitempty"`
	StallMaxS float64 `json:"stall_max_s,omitempty"`
	StalledS  float64 `json:"stalled_s,omitempty"`
	// Reason says why the point is saturated ("" when it is not).
	Reason string `json:"reason,omitempty"`
}
