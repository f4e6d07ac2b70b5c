package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/results"
)

// BenchmarkPutCells100k stores bench/gen100k's 100 000 cells into a new
// SQLite store, the records read before the clock starts and no
// analysis: the inserts and the commit alone, the import's longest
// thread (BenchmarkImport100k). ABTEST_BENCH_100K names gen100k's
// directory.
func BenchmarkPutCells100k(b *testing.B) {
	dir := os.Getenv("ABTEST_BENCH_100K")
	if dir == "" {
		b.Skip("ABTEST_BENCH_100K is not set: give it a directory go run ./bench/gen100k DIR wrote")
	}
	ctx := context.Background()
	src, err := openSource(dir)
	if err != nil {
		b.Fatal(err)
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := Open(ctx, filepath.Join(b.TempDir(), DefaultFile))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := procfs.SelfCPU()
		if n, _, err := s.putRunCells(ctx, RunID(src.plan), src, recs, nil); err != nil || n != 100000 {
			b.Fatalf("stored %d cells, %v", n, err)
		}
		s.Close()
		cpu += procfs.SelfCPU() - cpu0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
