// Command untildecided estimates by simulation, through analysis.Analyze
// and Report.Undecided exactly as the matrix calls them, how many cells
// --until-decided needs to decide a TPS change at this host's noise,
// against the fixed number of repeats that reaches the same power
// (issue 13). The noise is this 2-core VM's: TPS CV ~6 % between cells,
// bimodal (each cell lands in one of two modes ±5.5 %, plus 2.5 %
// Gaussian), one configuration, α = 0.01, TPS threshold 2 %.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

func main() {
	runs := flag.Int("runs", 200, "simulated runs per design")
	effect := flag.Float64("effect", -0.03, "true TPS change of the candidate")
	r0 := flag.Int("r", 8, "planned repeats (the first look; matrix -r's default)")
	step := flag.Int("step", 0, "blocks per extra look; 0: -r, as matrix --until-decided does")
	maxR := flag.Int("max-repeats", 200, "most repeats")
	cellWall := flag.Duration("cell", 35300*time.Millisecond, "wall time of one cell: matrix's default 30 s measured and 5 s warm-up, plus 0.2–0.4 s of restart and probes (measured on 1–3 s cells at load ~8)")
	modes := flag.Float64("mode", 0.055, "the two modes of a cell's TPS, ± this fraction")
	sd := flag.Float64("sd", 0.025, "Gaussian noise of a cell's TPS around its mode, a fraction")
	flag.Parse()
	if *step == 0 {
		*step = *r0
	}

	rng := rand.New(rand.NewSource(1))
	cell := func(mult float64) float64 {
		mode := *modes
		if rng.Intn(2) == 0 {
			mode = -mode
		}
		return 50000 * mult * (1 + mode + *sd*rng.NormFloat64())
	}
	// Sequential: the planned repeats, then Step more blocks while the
	// configuration is undecided.
	seq := analysis.Options{Sequential: analysis.Sequential{Step: *step, MaxRepeats: *maxR}}
	var cells, worse, same int
	start := time.Now()
	for range *runs {
		in := newInput(*r0)
		add(in, *r0, cell, *effect)
		for {
			r, v := verdict(in, seq)
			if len(r.Undecided()) == 0 {
				cells += len(in.Records)
				switch v {
				case results.Worse:
					worse++
				case results.Same:
					same++
				}
				break
			}
			add(in, *step, cell, *effect)
		}
	}
	power := float64(worse) / float64(*runs)
	meanCells := float64(cells) / float64(*runs)
	fmt.Printf("until-decided: %d runs, %.1f %% change, r=%d step=%d max=%d: worse in %.1f %%, same in %.1f %%, mean %.0f cells (%.1f h at %v a cell) [%.1fs]\n",
		*runs, 100**effect, *r0, *step, *maxR, 100*power, 100*float64(same)/float64(*runs), meanCells, meanCells*cellWall.Hours(), *cellWall, time.Since(start).Seconds())

	// Fixed n of the same power: the smallest number of repeats whose
	// power reaches the sequential design's.
	for n := *r0; n <= 2**maxR; n++ {
		w := 0
		for range *runs {
			in := newInput(n)
			add(in, n, cell, *effect)
			if _, v := verdict(in, analysis.Options{}); v == results.Worse {
				w++
			}
		}
		if p := float64(w) / float64(*runs); p >= power {
			fmt.Printf("fixed n: %d repeats (%d cells, %.1f h) reach %.1f %% power; until-decided used %.0f %% of those cells\n",
				n, 2*n, float64(2*n)*cellWall.Hours(), 100*p, 100*meanCells/float64(2*n))
			return
		}
	}
	fmt.Printf("fixed n: no n up to %d reaches %.1f %% power\n", 2**maxR, 100*power)
}

// verdict analyses in as the matrix does and returns the report and the
// candidate's TPS verdict.
func verdict(in *analysis.Input, o analysis.Options) (*analysis.Report, results.Verdict) {
	r, err := analysis.Analyze(in, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for _, row := range r.Rows {
		if row.Metric == results.MetricTPS {
			return r, row.Stats[1].Verdict
		}
	}
	return r, results.Unknown
}

func newInput(repeats int) *analysis.Input {
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: results.Builtin,
		Commits: []results.Commit{{Label: "base", Build: "b"}, {Label: "patch", Build: "p"}},
		Configs: []results.Config{{Workload: "select1", Clients: 8}}, Options: results.PlanOpts{Repeats: repeats}}
	return &analysis.Input{Plan: p}
}

// add appends n interleaved blocks, planned and measured.
func add(in *analysis.Input, n int, cell func(float64) float64, effect float64) {
	cfg := in.Plan.Configs[0]
	first := len(in.Records)/2 + 1
	for rep := first; rep < first+n; rep++ {
		for _, c := range []string{"base", "patch"} {
			mult := 1.0
			if c == "patch" {
				mult = 1 + effect
			}
			id := fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c)
			in.Plan.Cells = append(in.Plan.Cells, results.Cell{ID: id, Commit: c, Repeat: rep, Config: cfg})
			in.Records = append(in.Records, results.Record{Cell: id, Commit: c, Config: results.Config{Workload: cfg.Workload, Clients: cfg.Clients},
				Repeat: rep, Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: cell(mult)})})
		}
	}
}
