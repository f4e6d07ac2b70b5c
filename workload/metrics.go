package workload

// Metric declares one metric of Result.Metrics: its unit, which direction
// is better, the smallest change that matters, and the tier it starts in.
// The analysis measures each metric's determinism on the baseline's own
// repeats and may move it to a looser tier (seed 001: a counter that never
// varies is gated exactly; TPS on a shared host only within a band; WAL
// bytes, dominated by full-page images, are reported but not gated).
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// HigherIsBetter: tps. Lower is better for latencies and costs.
	HigherIsBetter bool `json:"higher_is_better"`
	// MinEffectPct is the smallest change, in percent, reported as
	// faster or slower even when it is statistically significant.
	MinEffectPct float64 `json:"min_effect_pct"`
	// Tier is the starting tier: "exact", "band" or "report".
	Tier string `json:"tier"`
	// Doc says what the metric is.
	Doc string `json:"doc"`
}

// Metrics is the registry: every metric a Result can carry.
var Metrics = []Metric{
	{"tps", "tx/s", true, 2, "band", "transactions per second (pgbench)"},
	{"latency_avg_ms", "ms", false, 2, "band", "mean latency: clients/TPS in a closed loop, pgbench's own with -R"},
	{"latency_p50_ms", "ms", false, 5, "band", "median latency"},
	{"latency_p95_ms", "ms", false, 5, "band", "95th percentile latency"},
	{"latency_p99_ms", "ms", false, 10, "report", "99th percentile latency"},
	{"latency_max_ms", "ms", false, 50, "report", "largest logged latency"},
	{"lag_avg_ms", "ms", false, 10, "report", "mean schedule lag (-R)"},
	{"failed_tx", "tx", false, 0, "exact", "failed transactions"},
	{"pgss_entries", "entries", false, 1, "band", "pg_stat_statements entries at the end"},
	{"pgss_hot", "entries", true, 1, "band", "hot entries kept at the end"},
	{"pgss_cold", "entries", false, 5, "report", "cold entries at the end"},
	{"pgss_deallocs", "deallocs", false, 5, "band", "pg_stat_statements eviction cycles"},
	{"db_time_pct", "%", false, 5, "report", "share of backend samples that were active"},
	{"statements_per_tx", "stmts/tx", false, 0, "exact", "statements per transaction (pg_stat_statements)"},
	{"rows_per_tx", "rows/tx", false, 0, "exact", "rows per transaction (pg_stat_statements)"},
	{"tup_ins", "rows", false, 0, "exact", "rows inserted (pg_stat_user_tables)"},
	{"tup_upd", "rows", false, 0, "exact", "rows updated"},
	{"tup_del", "rows", false, 0, "exact", "rows deleted"},
	{"wal_records_per_tx", "records/tx", false, 1, "band", "WAL records per transaction"},
	{"wal_bytes_per_tx", "B/tx", false, 5, "report", "WAL bytes per transaction (full-page images make it noisy)"},
	{"wal_fpi_per_tx", "fpi/tx", false, 10, "report", "full-page images per transaction"},
	{"server_cpu_s_per_tx", "s/tx", false, 2, "band", "server CPU seconds per transaction (/proc)"},
}

// MetricByName returns the registry entry for name.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
