package pipeline

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

// summaryRun is a run of two commits, 8 interleaved repeats, in cfg,
// whose cells measure what metrics says of a commit and repeat.
func summaryRun(cfg results.Config, metrics func(rng *rand.Rand, commit string) map[string]float64) *analysis.Input {
	rng := rand.New(rand.NewSource(3))
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: results.Builtin,
		Commits: []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "patch"}},
		Configs: []results.Config{cfg}, Options: results.PlanOpts{Repeats: 8, Workloads: []string{cfg.Workload}, Instructions: cfg.Instructions}}
	if cfg.Rate > 0 {
		p.Options.Rates = []float64{cfg.Rate}
	}
	in := &analysis.Input{Plan: p}
	for rep := 1; rep <= 8; rep++ {
		for _, c := range []string{"base", "patch"} {
			id := fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c)
			p.Cells = append(p.Cells, results.Cell{ID: id, Commit: c, Repeat: rep, Config: cfg})
			rec := results.Record{Cell: id, Commit: c, Config: cfg, Repeat: rep, Status: results.StatusOK, DurationS: 10,
				Metrics: results.ValuesOf(metrics(rng, c))}
			if cfg.Instructions {
				rec.Instr = &results.InstrInfo{Method: "valgrind-callgrind", Transactions: 1000}
			}
			in.Records = append(in.Records, rec)
		}
	}
	return in
}

// TestSummaryNamesTheFinding: the console summary of a run names what
// changed in its first 3 lines, whatever the run's primary: an open
// loop's latency_p99_ms (its TPS is the offered rate), a primary the
// run declared, and an instructions-only run's instructions_per_tx; and
// when nothing changed, the primary's answer (same, or unknown with what
// it could not detect).
func TestSummaryNamesTheFinding(t *testing.T) {
	open := results.Config{Workload: "select1", Clients: 4, Rate: 1000, Settings: map[string]string{}}
	instr := results.Config{Workload: "select1", Clients: 1, Instructions: true, Settings: map[string]string{}}
	for _, tc := range []struct {
		name string
		in   *analysis.Input
		o    analysis.Options
		want []string
	}{
		{"open loop", summaryRun(open, func(rng *rand.Rand, c string) map[string]float64 {
			p99 := 2.0
			if c == "patch" {
				p99 = 3.0
			}
			return map[string]float64{"tps": 1000 * (1 + 0.001*rng.NormFloat64()), "latency_p99_ms": p99 * (1 + 0.01*rng.NormFloat64()),
				"latency_avg_ms": 0.5 * (1 + 0.01*rng.NormFloat64())}
		}), analysis.Options{}, []string{"patch vs base: latency_p99_ms +", "% worse"}},
		{"declared primary", summaryRun(open, func(rng *rand.Rand, c string) map[string]float64 {
			p95 := 1.0
			if c == "patch" {
				p95 = 0.8
			}
			return map[string]float64{"tps": 1000 * (1 + 0.001*rng.NormFloat64()), "latency_p95_ms": p95 * (1 + 0.01*rng.NormFloat64()),
				"latency_p99_ms": 2 * (1 + 0.01*rng.NormFloat64())}
		}), analysis.Options{Primary: []string{"latency_p95_ms"}}, []string{"patch vs base: latency_p95_ms -", "% better"}},
		{"instructions only", summaryRun(instr, func(rng *rand.Rand, c string) map[string]float64 {
			v := 33797 * (1 + 3e-6*rng.NormFloat64())
			if c == "patch" {
				v *= 1.05
			}
			return map[string]float64{"instructions_per_tx": v}
		}), analysis.Options{}, []string{"patch vs base: instructions_per_tx +5.0% worse"}},
		// No change: the answer for the primary all the same, where one
		// configuration gives no run-level test ("no change called" said
		// nothing of it).
		{"open loop, noisy", summaryRun(open, func(rng *rand.Rand, c string) map[string]float64 {
			return map[string]float64{"tps": 1000 * (1 + 0.001*rng.NormFloat64()), "latency_p99_ms": 2 * (1 + 0.3*rng.NormFloat64())}
		}), analysis.Options{}, []string{"patch vs base: latency_p99_ms: unknown, could not detect < "}},
		{"open loop, same", summaryRun(open, func(rng *rand.Rand, c string) map[string]float64 {
			return map[string]float64{"tps": 1000 * (1 + 0.001*rng.NormFloat64()), "latency_p99_ms": 2 * (1 + 0.002*rng.NormFloat64())}
		}), analysis.Options{}, []string{"patch vs base: latency_p99_ms: same within ±10%"}},
		{"instructions only, same", summaryRun(instr, func(rng *rand.Rand, c string) map[string]float64 {
			return map[string]float64{"instructions_per_tx": 33797 * (1 + 3e-6*rng.NormFloat64())}
		}), analysis.Options{}, []string{"patch vs base: instructions_per_tx: same within ±0.1%"}},
	} {
		rep, err := analysis.Analyze(tc.in, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var out bytes.Buffer
		Summary(&out, "/results/run", rep)
		head := strings.Join(strings.Fields(strings.Join(strings.SplitN(out.String(), "\n", 4)[:3], "\n")), " ")
		for _, w := range tc.want {
			if !strings.Contains(head, w) {
				t.Errorf("%s: the summary's first 3 lines lack %q:\n%s", tc.name, w, out.String())
			}
		}
		if strings.Contains(head, "tps") {
			t.Errorf("%s: the summary's first 3 lines answer for tps, not the run's primary:\n%s", tc.name, out.String())
		}
	}
}
