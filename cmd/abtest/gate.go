package main

import (
	"github.com/urfave/cli/v3"
)

// gateFlags are the gate's flags, the same for analyze and matrix.
func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "gate", Usage: "gate `METRIC` too although it is descriptive or report-only (repeatable)"},
		&cli.BoolFlag{Name: "fail-on-regression", Usage: "exit 1 when a gated metric regresses, 3 when the run could not answer (failed, missing or saturated cells)"},
	}
}
