package workload

import (
	"context"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/results"
)

// TestSampledLatencyKeepsPercentiles: the latency log's budget per
// second of window (issue 27) samples a demo-like cell (select1, 8
// clients, 3 s) at a few percent; its percentiles must stay those of
// the full log. A real pgbench logs every transaction; pgbench's own
// sampling (a draw per transaction) is replayed on that log at the rate
// the cell would run at, 20 times: every draw keeps MinLatencyPairs
// pairs, and its p50 and p99 sit where they should in the full log.
//
// That is judged by rank, not by value: a sampled percentile's rank in
// the full log's intervals, against the standard error of a quantile
// of n pairs, √(p(1−p)/n). A closed loop's intervals have a gap in their
// tail (scheduler stalls), and where ~1 % of them are stalls the full
// log's p99 sits on its edge: in one CI run at 43 000 tx/s (300 pairs a
// draw) the draws' p99 were either −48 to −54 % or −6 to +67 % of the
// full log's, a median of 48 % off, while in rank every one was within
// the error its 300 pairs allow. A sampler that kept fewer pairs, or
// kept them with a bias (the first lines, the fast clients), is caught:
// the median draw's |z| must be under 1.5 (0.67 expected), for p50 and
// p99 alike, and no draw's rank may be one that unbiased sampling gives
// less often than a normal variable lies 4.5 standard errors out
// (drawP), by the exact binomial law of its rank (rankTailP): the
// normal one is far too thin in p99's tail at 300 pairs, where about 3
// lie above it. A draw of 323 pairs in a warm suite (s16f) put p99 at
// rank 0.9579, z −4.53, which the binomial law gives in 1.1e-3 of
// draws: about 1 in 50 runs of 20 draws failed so.
//
// Then a real cell at that rate logs within its budget and still
// reports p50 and p99: a fixed 100 000 lines a cell logged five times
// the budget.
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
	ivs := all.Intervals()
	p50, _, p99, _, ok := Percentiles(ivs) // sorts ivs
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
	var z50, z99 []float64
	for i := range 20 {
		var sampled TxLog
		for _, tx := range all.tx {
			if rng.Float64() < rate {
				sampled.tx = append(sampled.tx, tx)
			}
		}
		lat := sampled.Intervals()
		s50, _, s99, _, _ := Percentiles(lat)
		r50, r99 := midRank(ivs, 1000*s50), midRank(ivs, 1000*s99)
		e50, e99 := zOfRank(r50, 0.50, len(lat)), zOfRank(r99, 0.99, len(lat))
		t.Logf("draw %d: %d lines, %d pairs: p50 %.3f ms (%+.1f %%, rank %.4f, z %+.2f), p99 %.3f ms (%+.1f %%, rank %.4f, z %+.2f)",
			i, sampled.Count(), len(lat), s50, 100*(s50/p50-1), r50, e50, s99, 100*(s99/p99-1), r99, e99)
		if q50, q99 := rankTailP(r50, 0.50, len(lat)), rankTailP(r99, 0.99, len(lat)); len(lat) < MinLatencyPairs || q50 < drawP || q99 < drawP {
			t.Errorf("draw %d: %d pairs, p50 z %+.2f (p %.2g), p99 z %+.2f (p %.2g)", i, len(lat), e50, q50, e99, q99)
		}
		z50, z99 = append(z50, math.Abs(e50)), append(z99, math.Abs(e99))
	}
	sort.Float64s(z50)
	sort.Float64s(z99)
	if m50, m99 := (z50[9]+z50[10])/2, (z99[9]+z99[10])/2; m50 > 1.5 || m99 > 1.5 {
		t.Errorf("median draw: p50 |z| %.2f, p99 |z| %.2f (0.67 expected)", m50, m99)
	}

	cell, err := runner().Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	m := cell.Metrics
	t.Logf("the cell: %s; p50 %.3f ms, p99 %.3f ms", cell.LatencyDetail, m[results.MetricLatencyP50], m[results.MetricLatencyP99])
	// The budget holds at the throughput the rate was chosen for; a
	// window that runs faster logs more in proportion (in a warm suite,
	// s13c, 62 000 tx/s against the 41 590 expected: 9 197 lines
	// against 6 040).
	faster := math.Max(1, m[results.MetricTPS]/s.ExpectedTPS)
	if budget := 1.5 * LoggedTxPerSecond * cell.Observer.WindowS; float64(cell.LoggedTx) > budget*faster {
		t.Errorf("the cell logged %d transactions at %.0f tx/s, its budget is %.0f at the %.0f tx/s expected", cell.LoggedTx, m[results.MetricTPS], budget/1.5, s.ExpectedTPS)
	}
	if m[results.MetricLatencyP50] <= 0 || m[results.MetricLatencyP99] < m[results.MetricLatencyP50] || cell.LatencyDetail == "" {
		t.Errorf("the cell's latency rows: %v (%v)", m, cell.Warnings)
	}
}

// midRank is the share of sorted (ascending) below v, counting those
// equal to it as half: a value's rank in a sample with ties.
func midRank(sorted []float64, v float64) float64 {
	lo, _ := slices.BinarySearch(sorted, v)
	hi := lo
	for hi < len(sorted) && sorted[hi] == v {
		hi++
	}
	return (float64(lo) + float64(hi)) / 2 / float64(len(sorted))
}

// drawP is how rare a draw's percentile rank may be: as rare as a
// normal variable's 4.5 standard errors, two-sided.
const drawP = 6.8e-6

// rankTailP is the two-sided probability, under unbiased sampling of n
// values, of a nearest-rank p quantile at rank (the share of the full
// log below it) or further out: the number of the n values below the
// full log's rank quantile is binomial(n, rank), and the p quantile has
// about p·n of them below it (the analysis' binomial test).
func rankTailP(rank, p float64, n int) float64 {
	return analysis.BinomTwoSided(int(math.Round(p*float64(n))), n, rank)
}

// zOfRank is how many standard errors rank lies from p, for the p
// quantile of n values: √(p(1−p)/n), and half a rank step besides for
// a nearest-rank quantile's rounding.
func zOfRank(rank, p float64, n int) float64 {
	se := math.Sqrt(p*(1-p)/float64(n)) + 0.5/float64(n)
	return (rank - p) / se
}

// TestRankTailP: the exact law of a sampled percentile's rank. s16f's
// draw (323 pairs, p99 at rank 0.9579) is a 1-in-1 000 draw, not the
// 1-in-170 000 its normal z of −4.53 said; the full log's own p99 is
// typical; a sampler that lost the slowest tenth (p99 at rank 0.90) or
// kept only the first lines of a drifting log (p50 at rank 0.35) is
// beyond drawP.
func TestRankTailP(t *testing.T) {
	for _, c := range []struct {
		rank, p float64
		n       int
		lo, hi  float64
	}{
		{0.9579, 0.99, 323, 5e-4, 2e-3},
		{0.99, 0.99, 323, 0.5, 1},
		{0.90, 0.99, 300, 0, drawP},
		{0.35, 0.50, 300, 0, drawP},
		{0.50, 0.50, 300, 0.9, 1},
	} {
		if got := rankTailP(c.rank, c.p, c.n); got < c.lo || got > c.hi {
			t.Errorf("rankTailP(%v, %v, %d) = %.3g, want %.3g to %.3g", c.rank, c.p, c.n, got, c.lo, c.hi)
		}
	}
}
