package workload

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/internal/procfs"
)

// BenchmarkTxLog: what abtest does with a demo cell's latency log after
// its window (issue 27: it counts in the observer's cost): 2 threads'
// files of 3 000 lines each (LoggedTxPerSecond over 3 s), read, paired
// and ranked.
func BenchmarkTxLog(b *testing.B) {
	dir := b.TempDir()
	rng := rand.New(rand.NewSource(1))
	for th := range 2 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("txlog.%d", 100+th)))
		if err != nil {
			b.Fatal(err)
		}
		no := make([]int, 8)
		for i := range 3000 {
			c := th*4 + rng.Intn(4)
			no[c] += 1 + rng.Intn(20)
			fmt.Fprintf(f, "%d %d %d 0 %d %d\n", c, no[c], rng.Intn(400), 1796027471+i/1000, rng.Intn(1000000))
		}
		f.Close()
	}
	b.ResetTimer()
	cpu := procfs.SelfCPU()
	for range b.N {
		txlog, _ := readTxLogs(filepath.Join(dir, "txlog"), true)
		Percentiles(txlog.Intervals())
	}
	// CPU time, the observer's measure: wall time here is the load's.
	b.ReportMetric(float64(procfs.SelfCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
