package results_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// BenchmarkDecodeRecords: 20 000 lines like bench/gen100k's (12 metrics,
// 3 progress reports), decoded as analyze reads cells.jsonl.
func BenchmarkDecodeRecords(b *testing.B) {
	var buf bytes.Buffer
	names := []string{"failed_tx", "lag_avg_ms", "latency_avg_ms", "latency_max_ms", "latency_p50_ms", "latency_p95_ms",
		"latency_p99_ms", "pgss_cold", "pgss_deallocs", "pgss_entries", "pgss_hot", "tps"}
	for i := range 20000 {
		r := results.Record{Cell: fmt.Sprintf("select1/c%d/cpuall/pgss.max=100/r%d/base", i%10, i), Seq: i + 1, Commit: "base",
			Config: results.Config{Workload: "select1", Clients: 1 << (i % 10), Settings: map[string]string{"pg_stat_statements.max": "100"}},
			Repeat: i/20 + 1, Status: results.StatusOK, DurationS: 20}
		for j, n := range names {
			r.Metrics.Set(n, 1000+float64(i*13+j)*0.7310585786300049)
		}
		for t := 5; t < 20; t += 5 {
			r.Progress = append(r.Progress, results.Progress{T: float64(t), TPS: 975.324836448041 + float64(i)})
		}
		line, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		recs, _, err := results.DecodeRecords(bytes.NewReader(buf.Bytes()), "cells.jsonl")
		if err != nil || len(recs) != 20000 {
			b.Fatal(len(recs), err)
		}
	}
}
