package main

import (
	"github.com/pgabtest/abtest/internal/report"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
)

// gateFlags are the gate's flags, the same for analyze and matrix.
func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "gate", Usage: "gate `METRIC` too although it is descriptive or report-only (repeatable)"},
		&cli.BoolFlag{Name: "fail-on-regression", Usage: "exit 1 when a gated metric regresses, 3 when the run could not answer (failed, missing or saturated cells)"},
	}
}

// gate is report.Gate.
func gate(rep *analysis.Report, fail bool) error { return report.Gate(rep, fail) }
