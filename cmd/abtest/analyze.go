package main

import (
	"context"
	"runtime/debug"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/report"
)

func analyzeCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "statistics, verdicts and the report of one or more results directories (shards merge)",
		ArgsUsage: "DIR…",
		UsageText: `abtest analyze DIR… [-o FILE] [--format md|text|json|bench] [--baseline LABEL] [--alpha 0.01]
               [--threshold METRIC=PCT]… [--gate METRIC]… [--fail-on-regression]
abtest analyze --store URL --run ID|seed:N [options]   (a run's shards from the results store)`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to `FILE`", DefaultText: "stdout; plots go beside it"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "`FORMAT`: md, text (plain, for a terminal or a mail), json, or bench (benchstat -col commit; with -o DIR/, one file per commit for plain benchstat)"},
			&cli.StringFlag{Name: "baseline", Usage: "commit `LABEL` to compare against", DefaultText: "the first of -k"},
			&cli.FloatFlag{Name: "alpha", Value: 0.01, Usage: "significance `LEVEL`"},
			&cli.StringSliceFlag{Name: "threshold", Usage: "minimum effect `METRIC=PCT` (repeatable)"},
			storeFlag(),
			&cli.StringFlag{Name: "run", Usage: "analyse the stored run `ID` (or a prefix of it, or seed:N) from the store instead of directories"},
		}, gateFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			dirs := cmd.Args().Slice()
			switch {
			case len(dirs) == 0 && !cmd.IsSet("run"):
				return exitcode.BadInputf("analyze: give at least one results directory, or --run ID for a run in the store")
			case len(dirs) > 0 && cmd.IsSet("run"):
				return exitcode.BadInputf("analyze: give results directories or --run ID, not both")
			}
			o, err := analysisOptions(cmd)
			if err != nil {
				return err
			}
			if err := analysis.CheckFormat(cmd.String("format")); err != nil {
				return err
			}
			// Big result sets (10⁵ cells) are mostly garbage from JSON
			// decoding: a soft limit makes the GC keep the peak down.
			debug.SetMemoryLimit(400 << 20)
			in, err := loadInput(ctx, cmd, env, dirs)
			if err != nil {
				return err
			}
			rep, err := analysis.Analyze(in, o)
			if err != nil {
				return err
			}
			if err := rep.Output(env.Stdout, cmd.String("format"), cmd.String("output"), env.Stderr); err != nil {
				return err
			}
			return report.Gate(rep, cmd.Bool("fail-on-regression"))
		},
	}
}

// loadInput reads the results directories, or with --run the run from
// the store.
func loadInput(ctx context.Context, cmd *cli.Command, env *Env, dirs []string) (*analysis.Input, error) {
	if !cmd.IsSet("run") {
		return analysis.Load(dirs...)
	}
	s, err := openStore(ctx, cmd, env)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Input(ctx, cmd.String("run"))
}

func analysisOptions(cmd *cli.Command) (analysis.Options, error) {
	th, err := analysis.ParseThresholds(cmd.StringSlice("threshold"))
	return analysis.Options{Baseline: cmd.String("baseline"), Alpha: cmd.Float("alpha"), Thresholds: th, Gate: cmd.StringSlice("gate")}, err
}

// gateFlags are the gate's flags, the same for analyze and matrix.
func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "gate", Usage: "gate `METRIC` too although it is descriptive or report-only (repeatable)"},
		&cli.BoolFlag{Name: "fail-on-regression", Usage: "exit 1 when a gated metric regresses, 3 when the run could not answer (failed, missing or saturated cells)"},
	}
}
