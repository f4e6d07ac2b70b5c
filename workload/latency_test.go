package workload

import (
	"context"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/results"
)

// TestSampledLatencyKeepsPercentiles: the latency log's budget per
// second of window (issue 27) samples a demo-like cell (select1, 8
// clients, 3 s) at a few percent; its percentiles must stay those of
// the full log. A real pgbench logs every transaction; pgbench's own
// sampling (a draw per transaction) is replayed on that log at the rate
// the cell would run at, 20 times: every draw keeps MinLatencyPairs
// pairs, and the median draw's p50 is within 8 % and p99 within 30 %
// of the full log's, each draw's p50 within 20 % (at 17 500 tx/s under
// load, 660 pairs a draw: median 3.9 % and 12 %, worst 9 % and 25 %;
// at 40 000 tx/s a 3 s cell keeps 300 pairs, half as many). Then a real cell at
// that rate logs within its budget and still reports p50 and p99: a
// fixed 100 000 lines a cell logged five times the budget.
func TestSampledLatencyKeepsPercentiles(t *testing.T) {
	st, install := startCluster(t, 5000)
	w, _ := Builtin("select1")
	s := spec(st, install, w)
	s.Clients, s.Threads, s.Duration = 8, 2, 3*time.Second
	s.SampleEvery = 5 * time.Second
	full := s
	full.ExpectedTPS = 1 // 3 transactions expected: everything is logged
	full.OutDir, full.KeepTxLog = t.TempDir(), true
	res, err := runner().Run(context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if res.SamplingRate != 1 {
		t.Fatalf("sampling rate %v, want the full log", res.SamplingRate)
	}
	// Reading the log is measuring's cost: abtest's part of the run
	// counts it, with the sampler's work besides. Read it again, three
	// times, for what it costs: the least of them, since the process's
	// CPU is shared with other tests' goroutines (one read took 75 ms
	// where the run's whole part was 55 ms). Uncounted, the log would
	// leave the sampler's few milliseconds, so half tells them apart.
	var all TxLog
	reread := time.Duration(math.MaxInt64)
	logs, _ := filepath.Glob(filepath.Join(full.OutDir, "txlog.*"))
	for range 3 {
		all = TxLog{}
		cpu := procfs.SelfCPU()
		for _, f := range logs {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			all.ReadTxLog(fh)
			fh.Close()
		}
		reread = min(reread, procfs.SelfCPU()-cpu)
	}
	p50, _, p99, _, ok := Percentiles(all.Intervals())
	if !ok || all.Count() < 10000 {
		t.Fatalf("the full log: %d transactions", all.Count())
	}
	t.Logf("reading %d lines: %v; abtest's part of the run %.1f ms", all.Count(), reread, 1000*res.Observer.AbtestS)
	if res.Observer.AbtestS < reread.Seconds()/2 {
		t.Errorf("abtest's part of the run %.1f ms, reading its log again %v: the log is not counted", 1000*res.Observer.AbtestS, reread)
	}
	// The cell's rate, as after a warm-up that ran at this cell's TPS.
	s.ExpectedTPS = res.Summary.TPS
	rate := samplingRate(s)
	t.Logf("full log: %d transactions at %.0f tx/s, p50 %.3f ms, p99 %.3f ms; the cell's rate %.4f", all.Count(), res.Summary.TPS, p50, p99, rate)
	rng := rand.New(rand.NewSource(1))
	var d50, d99 []float64
	for i := range 20 {
		var sampled TxLog
		for _, tx := range all.tx {
			if rng.Float64() < rate {
				sampled.tx = append(sampled.tx, tx)
			}
		}
		lat := sampled.Intervals()
		s50, _, s99, _, _ := Percentiles(lat)
		e50, e99 := math.Abs(s50/p50-1), math.Abs(s99/p99-1)
		t.Logf("draw %d: %d lines, %d pairs: p50 %.3f ms (%+.1f %%), p99 %.3f ms (%+.1f %%)", i, sampled.Count(), len(lat), s50, 100*(s50/p50-1), s99, 100*(s99/p99-1))
		if len(lat) < MinLatencyPairs || e50 > 0.20 {
			t.Errorf("draw %d: %d pairs, p50 %.1f %% off", i, len(lat), 100*e50)
		}
		d50, d99 = append(d50, e50), append(d99, e99)
	}
	sort.Float64s(d50)
	sort.Float64s(d99)
	if d50[10] > 0.08 || d99[10] > 0.30 {
		t.Errorf("median draw: p50 %.1f %% off, p99 %.1f %% off", 100*d50[10], 100*d99[10])
	}

	cell, err := runner().Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	m := cell.Metrics
	t.Logf("the cell: %s; p50 %.3f ms, p99 %.3f ms", cell.LatencyDetail, m[results.MetricLatencyP50], m[results.MetricLatencyP99])
	if budget := 1.5 * LoggedTxPerSecond * cell.Observer.WindowS; float64(cell.LoggedTx) > budget {
		t.Errorf("the cell logged %d transactions, its budget is %.0f", cell.LoggedTx, budget/1.5)
	}
	if m[results.MetricLatencyP50] <= 0 || m[results.MetricLatencyP99] < m[results.MetricLatencyP50] || cell.LatencyDetail == "" {
		t.Errorf("the cell's latency rows: %v (%v)", m, cell.Warnings)
	}
}
