package workload

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestResultVoidsEvictedCounts: a run whose pg_stat_statements
// deallocation count rose inside the window, or could not be read,
// leaves statements_per_tx and rows_per_tx out of its metrics with why
// (entries evicted took their calls with them: churn read 0.64
// statements per transaction); the WAL, table and /proc metrics and the
// eviction's own counts stay.
func TestResultVoidsEvictedCounts(t *testing.T) {
	probe := &Counters{
		Kinds:    map[string]KindCounters{"SELECT": {Calls: 640, Rows: 640}},
		WAL:      &WALCounters{Records: 2000, Bytes: 100000, FPI: 10},
		Tables:   TableCounters{Ins: 5, Upd: 7, Del: 1},
		CPUTicks: 50, HasCPU: true,
	}
	kept := []string{results.MetricPGSSEntries, results.MetricServerCPUPerTx, results.MetricTupDel, results.MetricTupIns, results.MetricTupUpd,
		results.MetricWALBytesPerTx, results.MetricWALFPIPerTx, results.MetricWALRecordsPerTx}
	pgss := []string{results.MetricRowsPerTx, results.MetricStatementsPerTx}
	for _, tc := range []struct {
		name  string
		final Final
		why   string
	}{
		{"no evictions", Final{Entries: 900}, ""},
		{"evictions", Final{Entries: 1000, Deallocs: 12}, results.VoidEvicted},
		{"no pg_stat_statements_info", Final{Entries: 1000, DeallocsUnknown: true}, results.VoidDeallocsUnknown},
	} {
		res := &Result{Metrics: map[string]float64{}, Summary: Summary{TPS: 1000, Processed: 1000}, Final: tc.final, Probe: probe}
		(&Runner{}).metrics(res, &TxLog{}, Spec{Clients: 1, Duration: 1e9})
		for _, m := range kept {
			if _, ok := res.Metrics[m]; !ok {
				t.Errorf("%s: %s left out", tc.name, m)
			}
		}
		_, hasDeallocs := res.Metrics[results.MetricPGSSDeallocs]
		if hasDeallocs == tc.final.DeallocsUnknown {
			t.Errorf("%s: pgss_deallocs in the metrics: %v; the server could read it: %v", tc.name, hasDeallocs, !tc.final.DeallocsUnknown)
		}
		if tc.why == "" {
			if len(res.Void) > 0 || res.Metrics[results.MetricStatementsPerTx] != 0.64 || res.Metrics[results.MetricRowsPerTx] != 0.64 {
				t.Errorf("%s: void %v, metrics %v", tc.name, res.Void, res.Metrics)
			}
			continue
		}
		if got := slices.Sorted(maps.Keys(res.Void)); !slices.Equal(got, pgss) {
			t.Errorf("%s: void %v, want %v", tc.name, res.Void, pgss)
		}
		for _, m := range pgss {
			if v, ok := res.Metrics[m]; ok || res.Void[m] != tc.why {
				t.Errorf("%s: %s = %v (kept %v), void because %q, want left out because %q", tc.name, m, v, ok, res.Void[m], tc.why)
			}
		}
		var out strings.Builder
		(&Runner{}).report(&out, res)
		if !strings.Contains(out.String(), "void: statements_per_tx ("+tc.why+")") {
			t.Errorf("%s: the run's lines do not say what is void:\n%s", tc.name, out.String())
		}
	}
}

// TestProbeMetricsVoidNotZero: a probe the server cannot provide is void
// with why, never a zero: pg_stat_wal before PostgreSQL 14, the oldest
// xmin for a role that cannot see other sessions'; HOT % is left out
// of a window without updates (no share of nothing), and the rows per
// transaction are the counters over the transactions.
func TestProbeMetricsVoidNotZero(t *testing.T) {
	probe := &Counters{Kinds: map[string]KindCounters{}, Tables: TableCounters{Ins: 2000, Del: 1000, Dead: 1000, BlksHit: 5000, IndexBytes: 8192}}
	res := &Result{Metrics: map[string]float64{}, Summary: Summary{TPS: 100, Processed: 1000}, Final: Final{Entries: 1}, Probe: probe, xminHidden: true}
	(&Runner{}).metrics(res, &TxLog{}, Spec{Clients: 1, Duration: 1e9})
	for _, name := range []string{results.MetricWALRecordsPerTx, results.MetricWALBytesPerTx, results.MetricWALFPIPerTx} {
		if v, ok := res.Metrics[name]; ok || res.Void[name] != results.VoidNoStatWAL {
			t.Errorf("%s without pg_stat_wal: %v (kept %v), void %q", name, v, ok, res.Void[name])
		}
	}
	if v, ok := res.Metrics[results.MetricOldestXminAge]; ok || res.Void[results.MetricOldestXminAge] != results.VoidXminHidden {
		t.Errorf("oldest xmin hidden: %v (kept %v), void %q", v, ok, res.Void[results.MetricOldestXminAge])
	}
	if v, ok := res.Metrics[results.MetricHOTUpdatePct]; ok {
		t.Errorf("HOT %% of no updates: %v", v)
	}
	want := map[string]float64{results.MetricTupInsPerTx: 2, results.MetricTupUpdPerTx: 0, results.MetricTupDelPerTx: 1,
		results.MetricDeadTupPerTx: 1, results.MetricBuffersHitPerTx: 5, results.MetricIndexGrowthPerTx: 8.192, results.MetricIndexGrowth: 8192}
	for name, v := range want {
		if got, ok := res.Metrics[name]; !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, v)
		}
	}
	if res.Saturation != nil || res.Saturated {
		t.Errorf("a closed loop judged for saturation: %+v", res.Saturation)
	}
	age := int64(42)
	probe.WAL, probe.Tables.Upd, probe.Tables.HotUpd = &WALCounters{Records: 3000}, 400, 100
	res = &Result{Metrics: map[string]float64{}, Summary: Summary{TPS: 100, Processed: 1000}, Probe: probe, OldestXminAge: &age}
	(&Runner{}).metrics(res, &TxLog{}, Spec{Clients: 1, Duration: 1e9})
	if len(res.Void) > 0 || res.Metrics[results.MetricWALRecordsPerTx] != 3 || res.Metrics[results.MetricOldestXminAge] != 42 || res.Metrics[results.MetricHOTUpdatePct] != 25 {
		t.Errorf("void %v, metrics %v", res.Void, res.Metrics)
	}
}
