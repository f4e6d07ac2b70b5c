// Package gatesim makes synthetic runs for simulating the whole gate:
// a plan and its cells with the full metric set, at the designs users
// run (configurations × repeats), with a chosen TPS effect and noise:
// Gaussian, bimodal, or resampled from the interleaved blocks of a real
// recorded run (Blocks). The analysis tests and bench/power judge them
// with analysis.Analyze, so what is measured is the verdict a user would
// get, not one part of the statistics alone.
package gatesim

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/pgabtest/abtest/results"
)

// Noise is the cell-to-cell spread of TPS.
type Noise struct {
	// CV is the spread as a fraction (0.02: 2 %).
	CV float64
	// Bimodal: a cell lands in one of two modes ±CV·0.92 apart from the
	// centre with equal chance, plus a small Gaussian (0.4·CV): the
	// scheduling modes a 2-core VM shows. The total spread is CV.
	Bimodal bool
	// Real, when set, replaces CV and Bimodal: each block's two cells
	// are one real block's, drawn with replacement (Blocks.draw).
	Real *Blocks
}

func (n Noise) String() string {
	switch {
	case n.Real != nil:
		return n.Real.String()
	case n.Bimodal:
		return fmt.Sprintf("%g%% bimodal", 100*n.CV)
	}
	return fmt.Sprintf("%g%%", 100*n.CV)
}

// Design is one synthetic run: Configs configurations (workloads ×
// client counts), Repeats interleaved blocks, the candidate's TPS scaled
// by 1+Effect in every configuration.
type Design struct {
	Configs, Repeats int
	Effect           float64
	Noise            Noise
	// Only, when above 0, puts the effect on the first Only
	// configurations alone (−15 % on one of 24, say).
	Only int
	// Full adds the rest of the metric set a pgbench cell carries
	// (latencies, CPU per transaction, WAL, pg_stat_statements, wait
	// time), each with the noise seen on this project's VMs; otherwise
	// only tps and latency_avg_ms.
	Full bool
	// FailedCells is the share of cells with sporadic failed
	// transactions (1–3), in both arms alike.
	FailedCells float64
	// Instructions adds, per workload of the design, an instruction
	// configuration measured once per commit (matrix --instructions): a
	// count of 33 796.8 instructions per transaction with the 0.001 %
	// run-to-run spread valgrind showed here, the candidate's scaled by
	// 1+InstrEffect.
	Instructions bool
	InstrEffect  float64
}

// Run draws one run of d: its plan and records.
func Run(rng *rand.Rand, d Design) (*results.Plan, []results.Record) {
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: results.Builtin,
		Commits: []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "patch"}},
		Options: results.PlanOpts{Repeats: d.Repeats}}
	var recs []results.Record
	wls := []string{"select1", "churn", "slow_churn", "within_max"}
	for i := range d.Configs {
		cfg := results.Config{Workload: wls[i%len(wls)], Clients: 1 << (i / len(wls))}
		p.Configs = append(p.Configs, cfg)
		level := 20000 * (1 + float64(i%5))
		effect := d.Effect
		if d.Only > 0 && i >= d.Only {
			effect = 0
		}
		for rep := 1; rep <= d.Repeats; rep++ {
			var block [2]float64
			if d.Noise.Real != nil {
				block = d.Noise.Real.draw(rng, i)
			}
			for k, c := range []string{"base", "patch"} {
				id := fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c)
				p.Cells = append(p.Cells, results.Cell{ID: id, Commit: c, Repeat: rep, Config: cfg})
				var tps float64
				if d.Noise.Real != nil {
					tps = level * block[k]
				} else {
					tps = level * d.Noise.draw(rng)
				}
				if c == "patch" {
					tps *= 1 + effect
				}
				m := map[string]float64{results.MetricTPS: tps, results.MetricLatencyAvg: 1000 * float64(cfg.Clients) / tps}
				if d.Full {
					full(rng, m, cfg, tps/level)
				}
				if d.FailedCells > 0 {
					m[results.MetricFailedTx] = 0
					if rng.Float64() < d.FailedCells {
						m[results.MetricFailedTx] = float64(1 + rng.Intn(3))
					}
				}
				recs = append(recs, results.Record{Cell: id, Commit: c, Config: results.Config{Workload: cfg.Workload, Clients: cfg.Clients},
					Repeat: rep, Status: results.StatusOK, Metrics: results.ValuesOf(m), LatencyMethod: "intervals"})
			}
		}
	}
	if d.Instructions {
		recs = instructions(rng, d, p, wls[:min(d.Configs, len(wls))], recs)
	}
	return p, recs
}

// instructions adds d's instruction configurations, one run per commit.
func instructions(rng *rand.Rand, d Design, p *results.Plan, wls []string, recs []results.Record) []results.Record {
	p.Options.Instructions, p.Options.InstrRepeats = true, 1
	for _, w := range wls {
		cfg := results.Config{Workload: w, Clients: 1, Instructions: true}
		p.Configs = append(p.Configs, cfg)
		for _, c := range []string{"base", "patch"} {
			id := fmt.Sprintf("%s/r1/%s", cfg.ID(), c)
			p.Cells = append(p.Cells, results.Cell{ID: id, Commit: c, Repeat: 1, Config: cfg})
			count := 33796.8 * (1 + 1e-5*rng.NormFloat64())
			if c == "patch" {
				count *= 1 + d.InstrEffect
			}
			recs = append(recs, results.Record{Cell: id, Commit: c, Config: cfg, Repeat: 1, Status: results.StatusOK,
				Metrics: results.ValuesOf(map[string]float64{results.MetricInstructionsPerTx: count})})
		}
	}
	return recs
}

func (n Noise) draw(rng *rand.Rand) float64 {
	if !n.Bimodal {
		return 1 + n.CV*rng.NormFloat64()
	}
	mode := 0.92 * n.CV
	if rng.Intn(2) == 0 {
		mode = -mode
	}
	return 1 + mode + 0.4*n.CV*rng.NormFloat64()
}

// full adds the metrics besides TPS, with no change between the arms:
// latencies follow the cell's speed (rel) with noise of their own, the
// tails more; WAL is 0 on select1 with sporadic background records;
// pg_stat_statements counts are constant on select1 and churn's
// deallocations vary.
func full(rng *rand.Rand, m map[string]float64, cfg results.Config, rel float64) {
	g := func(cv float64) float64 { return math.Max(0.01, 1+cv*rng.NormFloat64()) }
	base := 1000 * float64(cfg.Clients) / 20000
	m[results.MetricLatencyP50] = base / rel * g(0.03)
	m[results.MetricLatencyP95] = 2 * base / rel * g(0.08)
	m[results.MetricLatencyP99] = 4 * base / rel * g(0.15)
	m[results.MetricLatencyMax] = 50 * base * g(0.4)
	m[results.MetricServerCPUPerTx] = 4e-5 * g(0.03)
	m[results.MetricDBTimePct] = 40 * g(0.1)
	m[results.MetricPGSSEntries] = 5000
	m[results.MetricStatementsPerTx] = 1
	m[results.MetricRowsPerTx] = 1
	if cfg.Workload == "select1" {
		m[results.MetricPGSSDeallocs] = 0
		m[results.MetricWALRecordsPerTx], m[results.MetricWALBytesPerTx] = 0, 0
		if rng.Float64() < 0.1 {
			m[results.MetricWALRecordsPerTx], m[results.MetricWALBytesPerTx] = 0.0001*g(0.5), 0.01*g(0.5)
		}
		return
	}
	m[results.MetricPGSSDeallocs] = math.Round(100 * g(0.05))
	m[results.MetricWALRecordsPerTx] = 1.5 * g(0.01)
	m[results.MetricWALBytesPerTx] = 150 * g(0.4)
	m[results.MetricWALFPIPerTx] = 0.05 * g(0.5)
}

// Upto keeps of a run the cells of each configuration up to its own
// number of blocks (by configuration ID), as a run of --until-decided
// that gave some configurations more blocks than others has them; the
// plan's repeats stay the planned ones.
func Upto(p *results.Plan, recs []results.Record, blocks map[string]int) (*results.Plan, []results.Record) {
	q := *p
	q.Cells = nil
	for _, c := range p.Cells {
		if c.Repeat <= blocks[c.Config.ID()] {
			q.Cells = append(q.Cells, c)
		}
	}
	var out []results.Record
	for _, r := range recs {
		if r.Repeat <= blocks[r.Config.ID()] {
			out = append(out, r)
		}
	}
	return &q, out
}
