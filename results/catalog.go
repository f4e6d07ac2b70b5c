package results

// The names of the built-in metrics. A metric is named by its constant
// everywhere outside this file; a workload file's own metrics are named
// by the file.
const (
	MetricTPS               = "tps"
	MetricLatencyAvg        = "latency_avg_ms"
	MetricLatencyP50        = "latency_p50_ms"
	MetricLatencyP95        = "latency_p95_ms"
	MetricLatencyP99        = "latency_p99_ms"
	MetricLatencyMax        = "latency_max_ms"
	MetricLagAvg            = "lag_avg_ms"
	MetricFailedTx          = "failed_tx"
	MetricPGSSEntries       = "pgss_entries"
	MetricPGSSHot           = "pgss_hot"
	MetricPGSSCold          = "pgss_cold"
	MetricPGSSDeallocs      = "pgss_deallocs"
	MetricDBTimePct         = "db_time_pct"
	MetricStatementsPerTx   = "statements_per_tx"
	MetricRowsPerTx         = "rows_per_tx"
	MetricTupIns            = "tup_ins"
	MetricTupUpd            = "tup_upd"
	MetricTupDel            = "tup_del"
	MetricWALRecordsPerTx   = "wal_records_per_tx"
	MetricWALBytesPerTx     = "wal_bytes_per_tx"
	MetricWALFPIPerTx       = "wal_fpi_per_tx"
	MetricServerCPUPerTx    = "server_cpu_s_per_tx"
	MetricInstructionsPerTx = "instructions_per_tx"
	MetricInstructions      = "instructions"

	// An open-loop (-R) point's offered rate and backlog (Saturation).
	MetricOfferedTPS = "offered_tps"
	MetricBacklog    = "backlog_s"
	// Its stalls: gaps in which it committed nothing (Saturation.Stalls).
	MetricStalls   = "stalls"
	MetricStallMax = "stall_max_s"

	// The probes that explain a window (issue 25; seed 000's point
	// table): tuples, HOT, vacuum, sizes, buffers, the xmin horizon.
	MetricTupInsPerTx      = "tup_ins_per_tx"
	MetricTupUpdPerTx      = "tup_upd_per_tx"
	MetricTupDelPerTx      = "tup_del_per_tx"
	MetricHOTUpdatePct     = "hot_update_pct"
	MetricDeadTupGrowth    = "dead_tup_growth"
	MetricDeadTupPerTx     = "dead_tup_per_tx"
	MetricAutovacuumRuns   = "autovacuum_runs"
	MetricAutoanalyzeRuns  = "autoanalyze_runs"
	MetricTableGrowth      = "table_growth_bytes"
	MetricIndexGrowth      = "index_growth_bytes"
	MetricTableGrowthPerTx = "table_growth_per_tx"
	MetricIndexGrowthPerTx = "index_growth_per_tx"
	MetricBuffersHitPerTx  = "buffers_hit_per_tx"
	MetricBuffersReadPerTx = "buffers_read_per_tx"
	MetricOldestXminAge    = "oldest_xmin_age"
)

// The reasons a probe the server cannot provide is void, not zero: one
// sentence per source, as with Validity.Void's.
const (
	VoidNoStatWAL  = "pg_stat_wal is missing (PostgreSQL < 14)"
	VoidXminHidden = "the role cannot see other sessions' xmin (pg_stat_activity shows it to members of pg_read_all_stats)"
)

// Builtin declares every metric a cell of the built-in probes can carry:
// its unit, which direction is better (or that it only describes), the
// smallest change that matters, the tier it starts in and, for a source
// that can lose data (pg_stat_statements evicting entries), when a
// cell's value is void (Validity). The analysis
// measures each metric's determinism on the baseline's own repeats and
// may move it to a looser tier (seed 001: a counter that never varies is
// gated exactly; TPS on a shared host only within a band; WAL bytes,
// dominated by full-page images, are reported but not gated). The matrix
// writes these definitions into plan.json, and the analysis judges a run
// by the ones it was run under.
var Builtin = Metrics{
	{Name: MetricTPS, Unit: "tx/s", Direction: HigherIsBetter, ThresholdPct: 2, Tier: TierBand, Positive: true, Doc: "transactions per second (pgbench)"},
	{Name: MetricLatencyAvg, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 2, Tier: TierBand, SameAs: MetricTPS, Doc: "mean latency: clients/TPS in a closed loop, pgbench's own with -R"},
	{Name: MetricLatencyP50, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierBand, MeasuredBy: ByLatency, Doc: "median latency"},
	{Name: MetricLatencyP95, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierBand, MeasuredBy: ByLatency, Doc: "95th percentile latency"},
	{Name: MetricLatencyP99, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, MeasuredBy: ByLatency, Doc: "99th percentile latency"},
	{Name: MetricLatencyMax, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 50, Tier: TierReport, MeasuredBy: ByLatency, Doc: "largest logged latency"},
	{Name: MetricLagAvg, Unit: "ms", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "mean schedule lag (-R)"},
	{Name: MetricFailedTx, Unit: "tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Count: true, Doc: "failed transactions"},
	{Name: MetricPGSSEntries, Unit: "entries", Direction: Descriptive, ThresholdPct: 1, Tier: TierBand, Doc: "pg_stat_statements entries at the end"},
	{Name: MetricPGSSHot, Unit: "entries", Direction: Descriptive, ThresholdPct: 1, Tier: TierBand, Doc: "hot entries kept at the end"},
	{Name: MetricPGSSCold, Unit: "entries", Direction: Descriptive, ThresholdPct: 5, Tier: TierReport, Doc: "cold entries at the end"},
	{Name: MetricPGSSDeallocs, Unit: "deallocs", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierBand, Count: true, Doc: "pg_stat_statements eviction cycles in the window: an event count, compared by its rate"},
	{Name: MetricDBTimePct, Unit: "%", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierReport, Doc: "share of backend samples that were active"},
	{Name: MetricStatementsPerTx, Unit: "stmts/tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Validity: ValidWithoutEvictions, Doc: "statements per transaction (pg_stat_statements calls; void in a cell where entries were evicted)"},
	{Name: MetricRowsPerTx, Unit: "rows/tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Validity: ValidWithoutEvictions, Doc: "rows per transaction (pg_stat_statements rows; void in a cell where entries were evicted)"},
	{Name: MetricTupIns, Unit: "rows", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows inserted (pg_stat_user_tables)"},
	{Name: MetricTupUpd, Unit: "rows", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows updated"},
	{Name: MetricTupDel, Unit: "rows", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows deleted"},
	{Name: MetricWALRecordsPerTx, Unit: "records/tx", Direction: LowerIsBetter, ThresholdPct: 1, Tier: TierBand, Doc: "WAL records per transaction"},
	{Name: MetricWALBytesPerTx, Unit: "B/tx", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierReport, Doc: "WAL bytes per transaction (full-page images make it noisy)"},
	{Name: MetricWALFPIPerTx, Unit: "fpi/tx", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "full-page images per transaction"},
	{Name: MetricInstructionsPerTx, Unit: "instr/tx", Direction: LowerIsBetter, ThresholdPct: 0.1, Tier: TierExact, MeasuredBy: ByInstructions, Positive: true, Doc: "instructions per transaction of the server's backends, by simulation or the CPU's counter (see workload.Instructions; matrix --instructions)"},
	{Name: MetricInstructions, Unit: "instr", Direction: Descriptive, ThresholdPct: 0.1, Tier: TierExact, MeasuredBy: ByInstructions, Doc: "instructions of the measured window: instructions_per_tx × its transactions"},
	{Name: MetricServerCPUPerTx, Unit: "s/tx", Direction: LowerIsBetter, ThresholdPct: 2, Tier: TierBand, Doc: "server CPU seconds per transaction (/proc)"},
	{Name: MetricOfferedTPS, Unit: "tx/s", Direction: Descriptive, ThresholdPct: 1, Tier: TierReport, Doc: "the rate an open-loop (-R) point was offered; tps is what it committed"},
	{Name: MetricBacklog, Unit: "s", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "the most offered work an open-loop point fell behind by, in seconds of it: offered and not committed by the end, or pgbench's largest schedule lag"},
	{Name: MetricStalls, Unit: "stalls", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierReport, Count: true, Doc: "gaps in which an open-loop point committed nothing for longer than its rate makes likely (at least 250 ms): a stall, reported, not saturation"},
	{Name: MetricStallMax, Unit: "s", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "the longest stall of an open-loop point (0 without one)"},
	// Rows written per transaction are fixed by the script: exact, like
	// seed 000's gated tuple counts (the window's totals, tup_ins…,
	// follow the throughput of a timed run).
	{Name: MetricTupInsPerTx, Unit: "rows/tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows inserted per transaction (pg_stat_user_tables)"},
	{Name: MetricTupUpdPerTx, Unit: "rows/tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows updated per transaction (pg_stat_user_tables)"},
	{Name: MetricTupDelPerTx, Unit: "rows/tx", Direction: LowerIsBetter, ThresholdPct: 0, Tier: TierExact, Doc: "rows deleted per transaction (pg_stat_user_tables)"},
	// Whether an update is HOT, and what autovacuum and page pruning did
	// by the end of a window, depend on timing: a band or a report.
	{Name: MetricHOTUpdatePct, Unit: "%", Direction: HigherIsBetter, ThresholdPct: 5, Tier: TierBand, Doc: "share of the window's updated rows that were HOT updates (n_tup_hot_upd / n_tup_upd; left out of a window without updates)"},
	{Name: MetricDeadTupGrowth, Unit: "rows", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "growth of the user tables' dead tuples over the window (n_dead_tup: pruning and autovacuum take it down)"},
	{Name: MetricDeadTupPerTx, Unit: "rows/tx", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "dead-tuple growth per transaction"},
	{Name: MetricAutovacuumRuns, Unit: "runs", Direction: Descriptive, ThresholdPct: 0, Tier: TierReport, Count: true, Doc: "autovacuum runs on the user tables in the window"},
	{Name: MetricAutoanalyzeRuns, Unit: "runs", Direction: Descriptive, ThresholdPct: 0, Tier: TierReport, Count: true, Doc: "autoanalyze runs on the user tables in the window"},
	{Name: MetricTableGrowth, Unit: "B", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "growth of the user tables' main forks over the window (pg_relation_size)"},
	{Name: MetricIndexGrowth, Unit: "B", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "growth of the user tables' indexes over the window (pg_indexes_size)"},
	{Name: MetricTableGrowthPerTx, Unit: "B/tx", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "table growth per transaction"},
	{Name: MetricIndexGrowthPerTx, Unit: "B/tx", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "index growth per transaction"},
	{Name: MetricBuffersHitPerTx, Unit: "blocks/tx", Direction: LowerIsBetter, ThresholdPct: 5, Tier: TierBand, Doc: "shared-buffer hits per transaction on the user tables, their indexes and TOAST (pg_statio_user_tables)"},
	{Name: MetricBuffersReadPerTx, Unit: "blocks/tx", Direction: LowerIsBetter, ThresholdPct: 10, Tier: TierReport, Doc: "blocks read into shared buffers per transaction (pg_statio_user_tables; the cache's state decides it)"},
	{Name: MetricOldestXminAge, Unit: "xids", Direction: Descriptive, ThresholdPct: 10, Tier: TierReport, Doc: "the oldest xmin's age reached in the window, sampled: sessions' xmin and xid, replication slots' xmin and catalog_xmin, prepared transactions (it grows with the transactions that write)"},
}

// TableMetrics lists the metrics a report's per-workload tables show, in
// their order: throughput, latency, the pg_stat_statements counters and
// the costs per transaction.
var TableMetrics = []string{MetricTPS, MetricLatencyAvg, MetricLatencyP50, MetricLatencyP95, MetricLatencyP99, MetricPGSSDeallocs, MetricPGSSEntries, MetricServerCPUPerTx, MetricWALBytesPerTx, MetricWALRecordsPerTx, MetricDBTimePct}
