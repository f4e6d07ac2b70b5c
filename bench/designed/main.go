// Command designed checks issue 43's must-show by simulation on real
// noise: from a recorded A/A run of this host (bench/noise.sh's base,
// say) it takes the design analysis.DesignFor picks for a ±2 % answer
// (the one a run without -d and -r gets, pipeline.Prepare), then judges
// runs of that design whose blocks are drawn from the recorded ones
// (gatesim.Blocks, scaled to the designed cell length by the run's own
// variance components), A/A and with the candidate's TPS −5 % in every
// configuration, as `--fail-on-regression` would: the share of runs
// that exit 0 (same within ±2 %), 1 (regression) and 3 (unanswered),
// also at −2 % (the bar: exit 0 there is the equivalence level's risk),
// and the wall time of the design's cells.
//
//	go run ./bench/designed [-runs 1000] [-seed 1] DIR
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/gatesim"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

func main() {
	runs := flag.Int("runs", 1000, "simulated runs per change")
	seed := flag.Int64("seed", 1, "random seed")
	bar := flag.Float64("bar", 2, "the bar, in %")
	minutes := flag.Float64("minutes", 0, "also judge the runs of the designed cell length that fit in this many minutes of cells")
	until := flag.Bool("until-decided", false, "also judge the design under --until-decided: its repeats planned, one look more at twice them for what is undecided")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: designed [-runs N] [-seed N] RESULTS_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *runs, *seed, *bar, *minutes, *until); err != nil {
		fmt.Fprintln(os.Stderr, "designed:", err)
		os.Exit(1)
	}
}

func run(dir string, runs int, seed int64, bar, minutes float64, until bool) error {
	p, err := results.ReadPlan(dir)
	if err != nil {
		return err
	}
	recs, _, err := results.ReadRecordsNoProgress(dir) // NoiseOf reads the TPS spread it keeps
	if err != nil {
		return err
	}
	comps := analysis.NoiseOf(p, recs)
	overhead := p.Options.WarmupS + matrix.Overhead.Seconds()
	d, ok := analysis.DesignFor(comps, bar, 0.01, overhead, len(p.Commits))
	if !ok {
		return fmt.Errorf("%s: no paired spread to design from", dir)
	}
	// The recorded blocks are of the run's cell length; the design's
	// spread at its own, by the components' model, the largest ratio
	// of the configurations (the noisier side).
	f := 1.0
	for _, c := range comps {
		if r := c.SecondsFor(d.Seconds) / c.SecondsFor(p.Options.DurationS); !math.IsNaN(r) {
			f = math.Max(f, r)
		}
		fmt.Printf("%s: within %.2f %%, between %.2f %%, paired %.2f %%, per-cell part %.2f %%, seconds ρ %.2f\n", c.Config, c.Within.Pct, c.Between.Pct, c.Paired.Pct, c.CellPct, c.Rho)
	}
	blocks, err := gatesim.ReadBlocks(dir)
	if err != nil {
		return err
	}
	noise := gatesim.Noise{Real: blocks.Scaled(f)}
	cells := d.Repeats * len(comps) * len(p.Commits)
	wall := float64(cells) * (d.Seconds + overhead) / 60
	fmt.Printf("design for ±%g%%: %gs cells × r %d (%d cells, about %.1f min; noise scaled ×%.2f from the recorded %gs cells)\n", bar, d.Seconds, d.Repeats, cells, wall, f, p.Options.DurationS)
	rng := rand.New(rand.NewSource(seed))
	judge(rng, noise, len(comps), d.Repeats, runs)
	if minutes > 0 {
		r := int(minutes * 60 / (float64(len(comps)*len(p.Commits)) * (d.Seconds + overhead)))
		fmt.Printf("within %g min: %gs cells × r %d\n", minutes, d.Seconds, r)
		judge(rng, noise, len(comps), r, runs)
	}
	if until {
		fmt.Printf("--until-decided: r %d planned, up to r %d\n", d.Repeats, 2*d.Repeats)
		judgeUntil(rng, noise, len(comps), d.Repeats, runs, d.Seconds+overhead, len(p.Commits))
	}
	return nil
}

// judgeUntil is judge for a run under --until-decided as the matrix
// makes it: r0 blocks planned, then, for the configurations the analysis
// calls undecided, r0 more (the plan's look every -r up to twice -r),
// judged with the looks' α spending; it also prints the share answered
// within 10 minutes and the 90th percentile of the cells' minutes.
func judgeUntil(rng *rand.Rand, noise gatesim.Noise, configs, r0, runs int, cellS float64, commits int) {
	for _, effect := range []float64{0, -0.02, -0.05} {
		var exits [4]int
		var mins []float64
		for range runs {
			sp, srecs := gatesim.Run(rng, gatesim.Design{Configs: configs, Repeats: 2 * r0, Effect: effect, Noise: noise})
			sp.Options.UntilDecided, sp.Options.Repeats, sp.Options.UntilStep, sp.Options.MaxRepeats = true, r0, r0, 2*r0
			first, firstRecs := upTo(sp, srecs, r0, nil)
			r := analyze(first, firstRecs)
			cells := len(firstRecs)
			if und := r.Undecided(); len(und) > 0 {
				more, moreRecs := upTo(sp, srecs, r0, und)
				cells = len(moreRecs)
				r = analyze(more, moreRecs)
			}
			mins = append(mins, float64(cells)*cellS/60)
			exits[min(3, exitcode.Code(r.Gate()))]++
		}
		slices.Sort(mins)
		in10 := 0
		for _, m := range mins {
			if m <= 10 {
				in10++
			}
		}
		pc := func(n int) string { return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(runs)) }
		fmt.Printf("  TPS %+.0f %%: exit 0 %s, exit 1 %s, exit 3 %s; minutes of cells median %.1f, 90th percentile %.1f; within 10 min %s (%d commits)\n",
			100*effect, pc(exits[0]), pc(exits[1]), pc(exits[3]), mins[len(mins)/2], mins[len(mins)*9/10], pc(in10), commits)
	}
}

// upTo is the plan and records of sp's first r0 repeats, and of the
// later ones of the configurations in more.
func upTo(sp *results.Plan, recs []results.Record, r0 int, more []string) (*results.Plan, []results.Record) {
	keep := func(c results.Config, rep int) bool { return rep <= r0 || slices.Contains(more, c.ID()) }
	p := *sp
	p.Cells = nil
	for _, c := range sp.Cells {
		if keep(c.Config, c.Repeat) {
			p.Cells = append(p.Cells, c)
		}
	}
	var out []results.Record
	for _, r := range recs {
		if keep(r.Config, r.Repeat) {
			out = append(out, r)
		}
	}
	return &p, out
}

// analyze is the analysis the matrix's Decider and the gate run.
func analyze(p *results.Plan, recs []results.Record) *analysis.Report {
	r, err := analysis.Analyze(&analysis.Input{Plan: p, Records: recs}, analysis.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "designed:", err)
		os.Exit(1)
	}
	return r
}

// judge prints the exits of runs A/A, at the bar (−2 % TPS: an exit 0
// there is a "same" for a change of exactly the bar, what the
// equivalence level risks) and at −5 % TPS, of configs
// configurations × repeats blocks drawn from noise.
func judge(rng *rand.Rand, noise gatesim.Noise, configs, repeats, runs int) {
	for _, effect := range []float64{0, -0.02, -0.05} {
		var one, three, zero int
		for range runs {
			sp, srecs := gatesim.Run(rng, gatesim.Design{Configs: configs, Repeats: repeats, Effect: effect, Noise: noise})
			r := analyze(sp, srecs)
			switch exitcode.Code(r.Gate()) {
			case exitcode.Regression:
				one++
			case exitcode.OK:
				zero++
			default:
				three++
			}
		}
		pc := func(n int) string { return fmt.Sprintf("%d (%.1f %%)", n, 100*float64(n)/float64(runs)) }
		fmt.Printf("  TPS %+.0f %%: exit 0 %s, exit 1 %s, exit 3 %s of %d runs\n", 100*effect, pc(zero), pc(one), pc(three), runs)
	}
}
