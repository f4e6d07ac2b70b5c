package gatesim

// Synthetic open-loop sweeps: seed 000's design, offered rates × a
// :batch variable of one workload file, judged by latency percentiles
// because the committed rate is the offered one.

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"

	"github.com/pgabtest/abtest/results"
)

// Sweep is one synthetic open-loop run of two commits.
type Sweep struct {
	// Rates are the offered rates (transactions/s), Batches the values
	// of :batch (operations a transaction), Repeats the blocks.
	Rates   []float64
	Batches []int
	Repeats int
	// Capacity is the operations a second the server keeps up with: a
	// point offering more (rate × batch) saturates in all but ~3 % of
	// its cells, a point under it in Stall of them (a cell that stalled
	// for a few seconds, as one did in issue 40's A/A sweep).
	Capacity float64
	Stall    float64
	// P99 is latency_p99_ms's noise: blocks resampled from real cells
	// (BlocksOfMetric); Effect scales the candidate's p99 by 1+Effect.
	P99    *Blocks
	Effect float64
	// Declared, when set, is a metric the workload file declares its
	// primary (-- abtest:primary): lower is better, report tier, each
	// cell's value 10 × its p99 with noise of its own.
	Declared string
}

// SweepWorkload is the workload a Sweep's cells run.
const SweepWorkload = "file:heartbeat.sql"

// RunSweep draws one run of s: its plan and records.
func RunSweep(rng *rand.Rand, s Sweep) (*results.Plan, []results.Record) {
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: results.Builtin,
		Commits: []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "base"}},
		Options: results.PlanOpts{Repeats: s.Repeats, Rates: s.Rates}}
	if s.Declared != "" {
		p.Metrics = append(append(results.Metrics(nil), results.Builtin...), results.Metric{Name: s.Declared, Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport})
		p.Options.Declares = map[string]results.WorkloadDeclares{SweepWorkload: {Primary: s.Declared, OpsPerTx: ":batch"}}
	}
	var recs []results.Record
	i := 0
	for _, b := range s.Batches {
		for _, rate := range s.Rates {
			cfg := results.Config{Workload: SweepWorkload, Clients: 4, Rate: rate, Vars: map[string]string{"batch": strconv.Itoa(b)}}
			p.Configs = append(p.Configs, cfg)
			over := rate*float64(b) > s.Capacity
			for rep := 1; rep <= s.Repeats; rep++ {
				block := s.P99.draw(rng, i)
				for k, c := range []string{"base", "patch"} {
					id := fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c)
					p.Cells = append(p.Cells, results.Cell{ID: id, Commit: c, Repeat: rep, Config: cfg})
					recs = append(recs, sweepCell(rng, s, cfg, id, c, rep, over, block[k]))
				}
			}
			i++
		}
	}
	return p, recs
}

// sweepCell is one cell of a sweep: held, or saturated (committing
// what capacity allows, its p99 seconds).
func sweepCell(rng *rand.Rand, s Sweep, cfg results.Config, id, commit string, rep int, over bool, noise float64) results.Record {
	b, _ := strconv.Atoi(cfg.Vars["batch"])
	p99 := (1 + 0.3*float64(b)) * noise
	if commit == "patch" {
		p99 *= 1 + s.Effect
	}
	tps := cfg.Rate * (1 + 0.002*rng.NormFloat64())
	sat := over && rng.Float64() > 0.03 || !over && rng.Float64() < s.Stall
	if sat {
		tps = math.Min(tps, s.Capacity/float64(b)) * (0.3 + 0.5*rng.Float64())
		p99 = 1000 * (1 + 4*rng.Float64())
	}
	m := map[string]float64{results.MetricTPS: tps, results.MetricOfferedTPS: cfg.Rate, results.MetricLatencyAvg: p99 / 4 * (1 + 0.05*rng.NormFloat64()),
		results.MetricLatencyP50: p99 / 8 * (1 + 0.05*rng.NormFloat64()), results.MetricLatencyP99: p99, results.MetricFailedTx: 0}
	if s.Declared != "" {
		m[s.Declared] = 10 * p99 * (1 + 0.05*rng.NormFloat64())
	}
	rec := results.Record{Cell: id, Commit: commit, Config: cfg, Repeat: rep, Status: results.StatusOK, Metrics: results.ValuesOf(m), LatencyMethod: "pgbench", Saturated: sat}
	if sat {
		rec.Saturation = &results.Saturation{Reason: "the backlog passed 5 s"}
	}
	return rec
}
