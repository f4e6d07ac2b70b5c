package main

import (
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// gateFlags are the gate's flags, the same for analyze and matrix.
func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "gate", Usage: "gate `METRIC` too although it is descriptive or report-only (repeatable)"},
		&cli.BoolFlag{Name: "fail-on-regression", Usage: "exit 1 when a gated metric regresses, 3 when the run could not answer (failed, missing or saturated cells)"},
	}
}

// gate is the run's answer as an exit code when asked for one
// (--fail-on-regression): analysis.Report.Gate decides, so a candidate
// whose cells all failed exits 3, never 0.
func gate(rep *analysis.Report, fail bool) error {
	if !fail {
		return nil
	}
	return rep.Gate()
}

// checkGate refuses a --gate metric the plan does not define, before
// anything runs.
func checkGate(plan *results.Plan, names []string) error {
	for _, name := range names {
		if _, ok := plan.Metrics.Get(name); !ok {
			return exitcode.BadInputf("--gate %s: unknown metric; known: %s", name, strings.Join(plan.Metrics.Names(), ", "))
		}
	}
	return nil
}
