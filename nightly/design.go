package nightly

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// printDesign is -n's plan of a night whose source cannot be read (no
// clone yet, no such remote branch): the night's cells, head against
// the baseline, from the configuration alone, so that a missing clone
// does not hide what a night would run. The refusal follows it.
func printDesign(w io.Writer, nc *config.Nightly) {
	commits := []results.Commit{
		{Label: BaseLabel, Ref: nc.Baseline, Build: BuildPrefix + "<baseline>"},
		{Label: HeadLabel, Ref: nc.Remote + "/" + nc.Branch, Build: BuildPrefix + "<head>"},
	}
	p, err := matrix.PlanFor(Request(nc, "head", "base", 0), commits)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "# the night's plan, from its configuration alone (source_dir %s could not be read):\n", nc.SourceDir)
	matrix.PrintPlan(w, p, filepath.Join(nc.Root, "runs", "<time>-<head>"), nil)
	for _, r := range analysis.PlanReach(p, gateOptions(nc)) {
		fmt.Fprintf(w, "# %s\n", r)
	}
}
