// Command gen100k writes a synthetic results directory of 100 000 cells
// (2 commits × 4 workloads × 10 client counts × 5 pg_stat_statements.max
// values × 250 repeats), for bench/analyze.sh; -repeats 13 writes a
// run of 5 200 cells, a realistic big one.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/workload"
)

func main() {
	repeats := flag.Int("repeats", 250, "repeats of each of the 400 configurations and 2 commits")
	flag.Parse()
	if flag.NArg() != 1 || *repeats < 1 {
		fmt.Fprintln(os.Stderr, "usage: gen100k [-repeats N] DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	commits := []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "patch"}}
	o := matrix.Request{
		Workloads: []string{"select1", "churn", "slow_churn", "within_max"},
		Axes: map[string][]string{"clients": {"1,2,4,8,16,32,64,128,256,512"},
			"settings": {"pg_stat_statements.max=100,500,1000,5000,10000"}},
		Repeats: *repeats, Duration: 20 * time.Second, Order: matrix.ABBA,
	}
	p, err := matrix.PlanFor(o, commits)
	if err != nil {
		panic(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	data, _ := json.Marshal(p)
	if err := os.WriteFile(filepath.Join(dir, results.PlanFile), data, 0o644); err != nil {
		panic(err)
	}
	f, err := os.Create(filepath.Join(dir, results.CellsFile))
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewSource(1))
	for _, c := range p.Cells {
		m := map[string]float64{}
		for _, def := range results.Builtin[:12] {
			m[def.Name] = 1000 * (1 + 0.02*rng.NormFloat64())
		}
		rec := results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: results.Config{Workload: c.Workload, Clients: c.Clients, Settings: c.Settings},
			Repeat: c.Repeat, Status: results.StatusOK, DurationS: 20, Metrics: results.ValuesOf(m),
			Progress: []workload.Progress{{T: 5, TPS: m[results.MetricTPS]}, {T: 10, TPS: m[results.MetricTPS]}, {T: 15, TPS: m[results.MetricTPS]}}}
		line, _ := json.Marshal(rec)
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	f.Close()
}
