// Command power prints the gate's power table (issue 21): synthetic runs
// of r ∈ {8, 12, 16} repeats × {1, 4, 24} configurations × TPS effects
// −3/−5/−10/−15 % × noise 2 % and 6 % bimodal, each judged whole by
// analysis.Analyze with the full metric set, and the share of runs whose
// gate (--fail-on-regression) exits 1 for TPS. Then the A/A figures: the
// false alarms over 24 configurations with sporadic failed transactions,
// the coverage of the 95 % intervals, and the power at the stated MDE.
//
//	go run ./bench/power [-runs 100] [-seed 1]
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/testing/gatesim"
	"github.com/pgabtest/abtest/results"
)

func main() {
	runs := flag.Int("runs", 100, "runs per cell of the table")
	seed := flag.Int64("seed", 1, "random seed")
	only := flag.Bool("instructions", false, "print only the designs users run, without and with --instructions")
	local := flag.Bool("localized", false, "print only the localized table: a change in one configuration")
	flag.Parse()
	rng := rand.New(rand.NewSource(*seed))
	if *local {
		localized(rng, *runs)
		return
	}
	if *only {
		designs(rng, *runs)
		withInstructions(rng, *runs)
		return
	}
	noises := []gatesim.Noise{{CV: 0.02}, {CV: 0.06, Bimodal: true}}
	effects := []float64{-0.03, -0.05, -0.10, -0.15}
	fmt.Printf("Power: share of %d runs whose gate exits 1 for tps (α = 0.01, full metric set)\n\n", *runs)
	fmt.Printf("| r | configurations | noise | −3 %% | −5 %% | −10 %% | −15 %% |\n|---|---|---|---|---|---|---|\n")
	for _, r := range []int{8, 12, 16} {
		for _, k := range []int{1, 4, 24} {
			for _, nz := range noises {
				fmt.Printf("| %d | %d | %s |", r, k, nz)
				for _, e := range effects {
					fmt.Printf(" %d %% |", 100*power(rng, gatesim.Design{Configs: k, Repeats: r, Effect: e, Noise: nz, Full: true}, *runs) / *runs)
				}
				fmt.Println()
			}
		}
	}
	designs(rng, *runs)
	withInstructions(rng, *runs)
	localized(rng, *runs)
	aa(rng, 10**runs)
	statedMDE(rng, *runs*4)
}

// localized prints the share of runs whose gate exits 1 for tps when
// one configuration alone changed (of 4 and of 24, at −15 % and −5 %),
// the rest unchanged, and the same designs' A/A exits (issue 43: one of
// 24 at −15 % passed in 17 of 40 runs behind a run level of same).
func localized(rng *rand.Rand, runs int) {
	fmt.Printf("\nOne configuration changed, the rest not (%d runs each, full metric set, failed transactions in 1 %% of cells)\n\n", runs)
	fmt.Printf("| configs × r | noise | −5 %% on 1 | −15 %% on 1 | A/A: exit 1 / exit 3 |\n|---|---|---|---|---|\n")
	for _, d := range []struct{ configs, r int }{{4, 8}, {4, 12}, {24, 8}, {24, 12}} {
		for _, nz := range []gatesim.Noise{{CV: 0.02}, {CV: 0.06, Bimodal: true}} {
			at := func(e float64, nz gatesim.Noise) gatesim.Design {
				return gatesim.Design{Configs: d.configs, Repeats: d.r, Effect: e, Only: 1, Noise: nz, Full: true, FailedCells: 0.01}
			}
			fmt.Printf("| %d × %d | %s | %d %% | %d %% |", d.configs, d.r, nz, 100*power(rng, at(-0.05, nz), runs)/runs, 100*power(rng, at(-0.15, nz), runs)/runs)
			aaColumns(rng, runs, func(nz gatesim.Noise) gatesim.Design { return at(0, nz) }, nz)
		}
	}
}

// designs prints, for the designs users run, the share of runs the gate
// calls (exit 1 for tps) and, in A/A runs, the shares that alarm (exit
// 1) and that could not answer (exit 3).
func designs(rng *rand.Rand, runs int) {
	fmt.Printf("\nThe designs users run (%d runs each, full metric set, failed transactions in 1 %% of cells)\n\n", runs)
	fmt.Printf("| design | configs × r | −5 %% at 2 %% | −15 %% at 6 %% bimodal | A/A 2 %%: exit 1 / exit 3 | A/A 6 %% bimodal: exit 1 / exit 3 |\n|---|---|---|---|---|---|\n")
	two, six := gatesim.Noise{CV: 0.02}, gatesim.Noise{CV: 0.06, Bimodal: true}
	for _, d := range []struct {
		name    string
		configs int
		r       int
	}{{"README example", 4, 8}, {"make demo", 2, 12}, {"nightly.example.toml", 4, 12}, {"24 configurations", 24, 8}} {
		at := func(e float64, nz gatesim.Noise) gatesim.Design {
			return gatesim.Design{Configs: d.configs, Repeats: d.r, Effect: e, Noise: nz, Full: true, FailedCells: 0.01}
		}
		fmt.Printf("| %s | %d × %d | %d %% | %d %% |", d.name, d.configs, d.r, 100*power(rng, at(-0.05, two), runs)/runs, 100*power(rng, at(-0.15, six), runs)/runs)
		aaColumns(rng, runs, func(nz gatesim.Noise) gatesim.Design { return at(0, nz) }, two, six)
	}
}

// withInstructions judges the designs users run with --instructions: an
// instruction cell per workload and commit, measured once. It shows that
// one run per commit calls a +0.2 % instruction change every time, that
// an A/A count never alarms, and that the instruction tests cost the TPS
// verdict nothing.
func withInstructions(rng *rand.Rand, runs int) {
	fmt.Printf("\nWith --instructions: one instruction run per commit and workload (%d runs each, full metric set)\n\n", runs)
	fmt.Printf("| design | configs × r | tps −5 %% at 2 %% | instr +0.2 %% called | A/A 2 %%: exit 1 / exit 3 | A/A 6 %% bimodal: exit 1 / exit 3 |\n|---|---|---|---|---|---|\n")
	two, six := gatesim.Noise{CV: 0.02}, gatesim.Noise{CV: 0.06, Bimodal: true}
	for _, d := range []struct {
		name       string
		configs, r int
	}{{"README example", 4, 8}, {"make demo", 2, 12}, {"24 configurations", 24, 8}} {
		at := func(e, ie float64, nz gatesim.Noise) gatesim.Design {
			return gatesim.Design{Configs: d.configs, Repeats: d.r, Effect: e, Noise: nz, Full: true, FailedCells: 0.01, Instructions: true, InstrEffect: ie}
		}
		instr := 0
		for range runs {
			r := analyze(rng, at(0, 0.002, two))
			if slices.ContainsFunc(r.Regressions, func(c analysis.Change) bool { return c.Metric == results.MetricInstructionsPerTx }) {
				instr++
			}
		}
		fmt.Printf("| %s | %d × %d | %d %% | %d %% |", d.name, d.configs, d.r, 100*power(rng, at(-0.05, 0, two), runs)/runs, 100*instr/runs)
		aaColumns(rng, runs, func(nz gatesim.Noise) gatesim.Design { return at(0, 0, nz) }, two, six)
	}
}

// aaColumns prints, for each noise, the share of A/A runs of design aa
// whose gate fails as a regression (exit 1) and as unanswered (exit 3),
// and ends the row.
func aaColumns(rng *rand.Rand, runs int, aa func(gatesim.Noise) gatesim.Design, noises ...gatesim.Noise) {
	for _, nz := range noises {
		alarms, unanswered := 0, 0
		for range runs {
			switch g := analyze(rng, aa(nz)).Gate(); {
			case errors.Is(g, analysis.ErrRegression):
				alarms++
			case errors.Is(g, analysis.ErrUnanswered):
				unanswered++
			}
		}
		fmt.Printf(" %d %% / %d %% |", 100*alarms/runs, 100*unanswered/runs)
	}
	fmt.Println()
}

// analyze judges one synthetic run.
func analyze(rng *rand.Rand, d gatesim.Design) *analysis.Report {
	p, recs := gatesim.Run(rng, d)
	r, err := analysis.Analyze(&analysis.Input{Plan: p, Records: recs}, analysis.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return r
}

// power counts the runs whose gate exits 1 for a tps regression.
func power(rng *rand.Rand, d gatesim.Design, runs int) int {
	called := 0
	for range runs {
		r := analyze(rng, d)
		if errors.Is(r.Gate(), analysis.ErrRegression) && slices.ContainsFunc(r.Regressions, func(c analysis.Change) bool { return c.Metric == results.MetricTPS }) {
			called++
		}
	}
	return called
}

// aa prints the A/A figures of 24 configurations at -r 8, the full
// metric set and sporadic failed transactions in 1 % of cells.
func aa(rng *rand.Rand, runs int) {
	var gated, anyCalled, failed, unanswered, covered, intervals, geoOut, geo int
	for range runs {
		r := analyze(rng, gatesim.Design{Configs: 24, Repeats: 8, Noise: gatesim.Noise{CV: 0.02}, Full: true, FailedCells: 0.01})
		if len(r.Regressions) > 0 {
			gated++
		}
		if slices.ContainsFunc(r.Changes, func(c analysis.Change) bool { return c.Verdict == results.Better || c.Verdict == results.Worse }) {
			anyCalled++
		}
		if slices.ContainsFunc(r.Changes, func(c analysis.Change) bool { return c.Metric == results.MetricFailedTx }) {
			failed++
		}
		if errors.Is(r.Gate(), analysis.ErrUnanswered) {
			unanswered++
		}
		for _, row := range r.Rows {
			if row.Metric != results.MetricTPS {
				continue
			}
			st := row.Stats[1]
			if !math.IsInf(st.DeltaLo, 0) && !math.IsNaN(st.DeltaLo) {
				intervals++
				if st.DeltaLo <= 0 && st.DeltaHi >= 0 {
					covered++
				}
			}
		}
		for _, g := range r.Geomeans {
			geo++
			if g.Lo > 1 || g.Hi < 1 {
				geoOut++
			}
		}
	}
	fmt.Printf("\nA/A, %d runs of 24 configurations × 8 repeats, 2 %% noise, full metric set, failed transactions in 1 %% of cells:\n", runs)
	fmt.Printf("  gated false alarms %d (%.1f %%); runs printing any better/worse %d (%.1f %%); failed_tx called %d; unanswered %d\n",
		gated, pc(gated, runs), anyCalled, pc(anyCalled, runs), failed, unanswered)
	fmt.Printf("  per-configuration 95 %% intervals of tps covering 0: %d of %d (%.1f %%); run-level 95 %% interval excluding 1: %d of %d (%.1f %%)\n",
		covered, intervals, pc(covered, intervals), geoOut, geo, pc(geoOut, geo))
}

// statedMDE measures the power at the change the report says it could
// have detected: A/A runs of one configuration at -r 12 and 6 % bimodal
// noise state their MDE; runs with that effect are then called.
func statedMDE(rng *rand.Rand, runs int) {
	d := gatesim.Design{Configs: 1, Repeats: 12, Noise: gatesim.Noise{CV: 0.06, Bimodal: true}}
	var mdes []float64
	for range runs {
		r := analyze(rng, d)
		for _, row := range r.Rows {
			if row.Metric == results.MetricTPS && row.Stats[1].Verdict == results.Unknown {
				mdes = append(mdes, row.Stats[1].DetectablePct)
			}
		}
	}
	slices.Sort(mdes)
	mde := mdes[len(mdes)/2]
	d.Effect = -mde / 100
	called := power(rng, d, runs)
	fmt.Printf("\nStated MDE (1 configuration, r = 12, 6 %% bimodal): median %.2f %% over %d A/A runs; runs with a −%.2f %% change called worse: %d of %d (%.0f %%)\n",
		mde, len(mdes), mde, called, runs, pc(called, runs))
}

func pc(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * float64(a) / float64(b)
}
