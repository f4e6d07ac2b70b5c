package matrix

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/results"
)

// PrintPlan is -n: the plan, cell by cell, and how long it will take.
func PrintPlan(w io.Writer, p *results.Plan, dir string) {
	fmt.Fprintf(w, "# plan: %d cells, shard %s, order %s (seed %d), results in %s\n", len(p.Cells), p.Shard, p.Options.Order, p.Options.Seed, dir)
	for _, c := range p.Commits {
		what := c.Ref + " " + Short(c.SHA)
		if c.Install != "" {
			what = "install " + c.Install
		}
		for _, pa := range c.Patches {
			what += " + " + filepath.Base(pa.File)
		}
		fmt.Fprintf(w, "# commit %s: %s (build %s)\n", c.Label, what, c.Build)
	}
	for _, c := range p.Cells {
		fmt.Fprintf(w, "%4d %s\n", c.Seq, c.ID)
	}
	instr := ""
	if p.Options.Instructions {
		instr = fmt.Sprintf("; about %s per instruction cell", InstrCellTime)
	}
	fmt.Fprintf(w, "# estimate: %s (%.0f s measured + %.0f s warm-up per cell, plus about %s of orchestration%s; builds not counted)\n",
		Estimate(p).Round(time.Second), p.Options.DurationS, p.Options.WarmupS, Overhead, instr)
	if p.Options.UntilDecided {
		cells, d := WorstCase(p)
		fmt.Fprintf(w, "# until decided: at most %d cells, %s (up to %d repeats", cells, d.Round(time.Second), p.Options.MaxRepeats)
		if p.Options.BudgetS > 0 {
			fmt.Fprintf(w, ", extra blocks within %s", time.Duration(p.Options.BudgetS*float64(time.Second)))
		}
		fmt.Fprintln(w, ")")
	}
}
