package matrix

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// BuildEstimate is what one build of a plan is expected to take.
type BuildEstimate struct {
	Build string
	build.Estimate
	// Extensions say what becomes of each extension in the build (a
	// prebuilt install has them alone, no Estimate).
	Extensions []string
}

// EstimateBuilds estimates the plan's builds without changing anything:
// a build whose worktree is in place and whose fingerprint is installed
// costs nothing (cached); the others are warm or cold by the build
// records of this machine (build.Builder.Estimate), and warm when an
// earlier build of the plan compiles the same commit (the demo's patched
// build after its base). Prebuilt
// installations are left out.
func EstimateBuilds(ctx context.Context, deps *Deps, p *results.Plan) []BuildEstimate {
	var out []BuildEstimate
	seen, compiled := map[string]bool{}, map[string]bool{}
	o := buildOptions(deps.BuildOptions, p.Options)
	for i := range p.Commits {
		c := &p.Commits[i]
		if seen[c.Build] {
			continue
		}
		seen[c.Build] = true
		if c.Install != "" {
			if len(p.Options.Extensions) > 0 {
				out = append(out, BuildEstimate{Build: c.Build, Extensions: extensionLines(ctx, deps, p.Options.Extensions, c, c.Install, "")})
			}
			continue
		}
		fp, inPlace := "", false
		var reuse *build.Estimate
		if prov, err := deps.Worktrees.Info(ctx, c.Build); err == nil {
			dir, _ := deps.Worktrees.Dir(c.Build)
			if current(prov, c) {
				fp, _ = deps.Builder.Fingerprint(ctx, prov, dir, o)
				if e, ok := deps.Builder.Reuses(ctx, prov, dir, o); ok {
					reuse = &e
				}
			}
			// A worktree of another commit or patches is reset in
			// place, its build directory kept (Run).
			inPlace = build.Configured(dir)
		}
		e := deps.Builder.Estimate(c.Build, c.SHA, fp, o, compiled[c.SHA], inPlace)
		if reuse != nil && e.Kind != build.Cached {
			e = *reuse
		}
		if e.Kind != build.Cached {
			compiled[c.SHA] = true // ccache has it for the next build of sha
		}
		be := BuildEstimate{Build: c.Build, Estimate: e}
		if len(p.Options.Extensions) > 0 {
			install, _ := deps.Builder.InstallDir(c.Build)
			if e.Kind != build.Cached {
				fp = ""
			}
			be.Extensions = extensionLines(ctx, deps, p.Options.Extensions, c, install, fp)
		}
		out = append(out, be)
	}
	return out
}

// PrintPlan is -n: the plan, cell by cell, its builds, and how long it
// will take, builds included.
func PrintPlan(w io.Writer, p *results.Plan, dir string, builds []BuildEstimate) {
	fmt.Fprintf(w, "# plan: %d cells, shard %s, order %s (seed %d), results in %s\n", len(p.Cells), p.Shard, p.Options.Order, p.Options.Seed, dir)
	for _, c := range p.Commits {
		what := c.What()
		fmt.Fprintf(w, "# commit %s: %s (build %s)\n", c.Label, what, c.Build)
	}
	printBuildOptions(w, buildOptions(build.Options{}, p.Options))
	var bd time.Duration
	kinds := map[string]int{}
	for _, b := range builds {
		if b.Kind != "" {
			fmt.Fprintf(w, "# build %s: %s\n", b.Build, b.Estimate)
		}
		for _, e := range b.Extensions {
			fmt.Fprintf(w, "# %s\n", e)
		}
		bd += b.Duration
		kinds[b.Kind]++
	}
	printDeclares(w, p.Options)
	PrintPreflight(w, p)
	for _, c := range p.Cells {
		if c.RateUnit == results.PerOp {
			// What pgbench is offered, the rate over the cell's
			// operations per transaction.
			fmt.Fprintf(w, "%4d %s  (pgbench -R %s)\n", c.Seq, c.ID, results.FormatRate(p.Options.TxRate(c.Config)))
			continue
		}
		fmt.Fprintf(w, "%4d %s\n", c.Seq, c.ID)
	}
	instr := ""
	if p.Options.Instructions {
		instr = fmt.Sprintf("; about %s per instruction cell", InstrCellTime(p))
	}
	var ks []string
	for _, k := range []string{build.Cached, build.InPlace, build.Warm, build.Cold} {
		if kinds[k] > 0 {
			ks = append(ks, fmt.Sprintf("%d %s", kinds[k], k))
		}
	}
	if len(ks) == 0 {
		ks = []string{"none to build"}
	}
	cells := Estimate(p)
	timed := fmt.Sprintf("%.0f s measured + %.0f s warm-up per cell, plus ", p.Options.DurationS, p.Options.WarmupS)
	if p.Options.InstructionsOnly {
		timed = ""
	}
	fmt.Fprintf(w, "# estimate: %s = builds %s (%s) + cells %s (%sabout %s of orchestration, %s a cluster's first start, %s a restart%s)\n",
		(bd + cells).Round(time.Second), bd.Round(time.Second), strings.Join(ks, ", "), cells.Round(time.Second), timed, Overhead, ClusterSetup, Restart, instr)
	if p.Options.UntilDecided {
		cells, d := WorstCase(p)
		fmt.Fprintf(w, "# until decided: at most %d cells, %s (up to %d repeats, a look every %d blocks", cells, (d + bd).Round(time.Second), p.Options.MaxRepeats, max(1, p.Options.UntilStep))
		if p.Options.BudgetS > 0 {
			fmt.Fprintf(w, ", extra blocks within %s", time.Duration(p.Options.BudgetS*float64(time.Second)))
		}
		fmt.Fprintln(w, ")")
	}
}

// printDeclares prints what the workload files declare of themselves.
func printDeclares(w io.Writer, o results.PlanOpts) {
	for _, name := range slices.Sorted(maps.Keys(o.Declares)) {
		d := o.Declares[name]
		var says []string
		if d.Primary != "" {
			says = append(says, "primary "+d.Primary+" (open loop)")
		}
		if d.OpsPerTx != "" {
			says = append(says, "operations per transaction "+d.OpsPerTx)
		}
		fmt.Fprintf(w, "# workload %s declares %s\n", text.OneLine(name), strings.Join(says, ", "))
	}
}

// printBuildOptions prints the builds' options beside the type, if any.
func printBuildOptions(w io.Writer, o build.Options) {
	opts := []string{string(o.Type)}
	if o.Profiling {
		opts = append(opts, "--profiling")
	}
	for _, m := range o.MesonOpts {
		opts = append(opts, "--meson-opt "+m)
	}
	for _, c := range o.ConfigureOpts {
		opts = append(opts, "--configure-opt "+c)
	}
	if len(opts) > 1 {
		fmt.Fprintf(w, "# build options: %s\n", strings.Join(opts, " "))
	}
}
