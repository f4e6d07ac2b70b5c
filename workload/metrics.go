package workload

import "github.com/pgabtest/abtest/results"

// Metrics declares every metric a Result can carry: its unit, which
// direction is better (or that it only describes), the smallest change
// that matters and the tier it starts in. The analysis measures each
// metric's determinism on the baseline's own repeats and may move it to a
// looser tier (seed 001: a counter that never varies is gated exactly;
// TPS on a shared host only within a band; WAL bytes, dominated by
// full-page images, are reported but not gated). The matrix writes these
// definitions into plan.json, and the analysis judges a run by the ones
// it was run under.
var Metrics = results.Metrics{
	{Name: "tps", Unit: "tx/s", Direction: results.HigherIsBetter, ThresholdPct: 2, Tier: results.TierBand, Positive: true, Doc: "transactions per second (pgbench)"},
	{Name: "latency_avg_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 2, Tier: results.TierBand, SameAs: "tps", Doc: "mean latency: clients/TPS in a closed loop, pgbench's own with -R"},
	{Name: "latency_p50_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierBand, MeasuredBy: results.ByLatency, Doc: "median latency"},
	{Name: "latency_p95_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierBand, MeasuredBy: results.ByLatency, Doc: "95th percentile latency"},
	{Name: "latency_p99_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport, MeasuredBy: results.ByLatency, Doc: "99th percentile latency"},
	{Name: "latency_max_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 50, Tier: results.TierReport, MeasuredBy: results.ByLatency, Doc: "largest logged latency"},
	{Name: "lag_avg_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport, Doc: "mean schedule lag (-R)"},
	{Name: "failed_tx", Unit: "tx", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Count: true, Doc: "failed transactions"},
	{Name: "pgss_entries", Unit: "entries", Direction: results.Descriptive, ThresholdPct: 1, Tier: results.TierBand, Doc: "pg_stat_statements entries at the end"},
	{Name: "pgss_hot", Unit: "entries", Direction: results.Descriptive, ThresholdPct: 1, Tier: results.TierBand, Doc: "hot entries kept at the end"},
	{Name: "pgss_cold", Unit: "entries", Direction: results.Descriptive, ThresholdPct: 5, Tier: results.TierReport, Doc: "cold entries at the end"},
	{Name: "pgss_deallocs", Unit: "deallocs", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierBand, Doc: "pg_stat_statements eviction cycles"},
	{Name: "db_time_pct", Unit: "%", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierReport, Doc: "share of backend samples that were active"},
	{Name: "statements_per_tx", Unit: "stmts/tx", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Doc: "statements per transaction (pg_stat_statements)"},
	{Name: "rows_per_tx", Unit: "rows/tx", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Doc: "rows per transaction (pg_stat_statements)"},
	{Name: "tup_ins", Unit: "rows", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Doc: "rows inserted (pg_stat_user_tables)"},
	{Name: "tup_upd", Unit: "rows", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Doc: "rows updated"},
	{Name: "tup_del", Unit: "rows", Direction: results.LowerIsBetter, ThresholdPct: 0, Tier: results.TierExact, Doc: "rows deleted"},
	{Name: "wal_records_per_tx", Unit: "records/tx", Direction: results.LowerIsBetter, ThresholdPct: 1, Tier: results.TierBand, Doc: "WAL records per transaction"},
	{Name: "wal_bytes_per_tx", Unit: "B/tx", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierReport, Doc: "WAL bytes per transaction (full-page images make it noisy)"},
	{Name: "wal_fpi_per_tx", Unit: "fpi/tx", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport, Doc: "full-page images per transaction"},
	{Name: MetricInstructionsPerTx, Unit: "instr/tx", Direction: results.LowerIsBetter, ThresholdPct: 0.1, Tier: results.TierExact, MeasuredBy: results.ByInstructions, Positive: true, Doc: "instructions per transaction of the server's backends, by simulation or the CPU's counter (see Instructions; matrix --instructions)"},
	{Name: MetricInstructions, Unit: "instr", Direction: results.Descriptive, ThresholdPct: 0.1, Tier: results.TierExact, MeasuredBy: results.ByInstructions, Doc: "instructions of the measured window: instructions_per_tx × its transactions"},
	{Name: "server_cpu_s_per_tx", Unit: "s/tx", Direction: results.LowerIsBetter, ThresholdPct: 2, Tier: results.TierBand, Doc: "server CPU seconds per transaction (/proc)"},
}
