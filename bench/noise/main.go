// Command noise prints the variance components (analysis.NoiseOf) of
// A/A runs, one row per run and configuration: where the noise of a
// timed metric is, within a cell or between cells, with each
// component's 95 % interval. bench/noise.sh runs one A/A matrix per
// factor (pinning, restarts, ASLR, huge pages, warm-up) and calls it.
// For runs of long cells it also splits each cell's per-second TPS into
// 3 s windows: their spread is what cells would differ by if their
// connections and backends were kept from one cell to the next.
//
//	go run ./bench/noise LABEL=RESULTS_DIR [LABEL=RESULTS_DIR …]
package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: noise LABEL=RESULTS_DIR [LABEL=RESULTS_DIR …]")
		os.Exit(2)
	}
	fmt.Println("| factor | configuration | median tps | within-second % [95 %] | between cells % [95 %] | block log ratio % [95 %] | per-cell part % | 3 s windows of one cell % | paired n |")
	fmt.Println("|---|---|---:|---|---|---|---:|---:|---:|")
	for _, arg := range os.Args[1:] {
		label, dir, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "noise: %q: want LABEL=RESULTS_DIR\n", arg)
			os.Exit(2)
		}
		if err := row(label, dir); err != nil {
			fmt.Fprintf(os.Stderr, "noise: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

func row(label, dir string) error {
	plan, err := results.ReadPlan(dir)
	if err != nil {
		return err
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		return err
	}
	med, win := medians(recs), windows(recs, 3)
	for _, c := range analysis.NoiseOf(plan, recs) {
		fmt.Printf("| %s | %s | %.0f | %s | %s | %s | %.1f | %s | %d |\n", label, c.Config, med[c.Config], comp(c.Within), comp(c.Between), comp(c.Paired), c.CellPct, win[c.Config], c.Paired.DF+1)
	}
	return nil
}

// medians is each configuration's median tps over its ok cells.
func medians(recs []results.Record) map[string]float64 {
	by := map[string][]float64{}
	for _, r := range recs {
		if r.Status != results.StatusOK {
			continue
		}
		if v, ok := r.Metrics.Get(results.MetricTPS); ok {
			by[r.Config.ID()] = append(by[r.Config.ID()], v)
		}
	}
	out := map[string]float64{}
	for k, v := range by {
		out[k] = analysis.Median(v)
	}
	return out
}

// windows is, per configuration, the spread (sd of logs, %) of the
// means of consecutive n-second windows of one cell's per-second TPS
// around that cell's mean, pooled over cells with at least 4 windows;
// "—" without them.
func windows(recs []results.Record, n int) map[string]string {
	ss, df := map[string]float64{}, map[string]int{}
	for _, r := range recs {
		if r.Status != results.StatusOK || len(r.Progress)/n < 4 {
			continue
		}
		var logs []float64
		for i := 0; i+n <= len(r.Progress); i += n {
			sum := 0.0
			for _, p := range r.Progress[i : i+n] {
				sum += p.TPS
			}
			if sum > 0 {
				logs = append(logs, math.Log(sum/float64(n)))
			}
		}
		mean := 0.0
		for _, l := range logs {
			mean += l / float64(len(logs))
		}
		for _, l := range logs {
			ss[r.Config.ID()] += (l - mean) * (l - mean)
		}
		df[r.Config.ID()] += len(logs) - 1
	}
	out := map[string]string{}
	for _, r := range recs {
		id := r.Config.ID()
		out[id] = "—"
		if df[id] > 0 {
			out[id] = fmt.Sprintf("%.2f", 100*math.Sqrt(ss[id]/float64(df[id])))
		}
	}
	return out
}

func comp(c analysis.Component) string {
	return fmt.Sprintf("%.2f [%.2f, %.2f]", c.Pct, c.Lo, c.Hi)
}
