package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/pipeline"
)

func analyzeCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "statistics, verdicts and the report of one or more results directories (shards merge)",
		ArgsUsage: "DIR…",
		UsageText: `abtest analyze DIR… [-o DIR] [--format md|text|json|bench] [--baseline LABEL] [--alpha 0.01]
               [--threshold METRIC=PCT]… [--bar threshold|auto] [--gate METRIC]… [--primary METRIC]… [--fail-on-regression [--allow-unknown]]
abtest analyze --store URL --run ID|seed:N [options]   (a run's shards from the results store)`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report into `DIR` (report.md and plots/, report.txt or report.json; a FILE is deprecated)", DefaultText: "stdout"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "`FORMAT`: md, text (plain, for a terminal or a mail), json, or bench (benchstat -col commit; with -o DIR/, one file per commit for plain benchstat)"},
			&cli.StringFlag{Name: "baseline", Usage: "commit `LABEL` to compare against", DefaultText: "the first of -k"},
			&cli.FloatFlag{Name: "alpha", Value: 0.01, Usage: "significance `LEVEL`"},
			&cli.StringSliceFlag{Name: "threshold", Usage: "minimum effect `METRIC=PCT` (repeatable): the bar a change must pass and a same must fit"}, &cli.StringFlag{Name: "bar", Value: "threshold", Usage: "`RULE` of the bars: threshold (each metric's, never widened by noise: an interval too wide for it is unknown, exit 3 under --fail-on-regression) or auto (widened by the baseline's spread, said in the summary)"},
			storeFlag(),
			&cli.StringFlag{Name: "run", Usage: "analyse the stored run `ID` (or a prefix of it, or seed:N) from the store instead of directories"},
		}, gateFlagSet()...),
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
			in, err := loadInput(ctx, cmd, env, dirs)
			if err != nil {
				return err
			}
			return pipeline.Analyze(in, o, gateFlags(cmd), cmd.String("format"), cmd.String("output"), env.Stdout, env.Stderr)
		},
	}
}

// loadInput reads the results directories, or with --run the run from
// the store.
func loadInput(ctx context.Context, cmd *cli.Command, env *Env, dirs []string) (*analysis.Input, error) {
	if !cmd.IsSet("run") {
		return analysis.LoadFor(cmd.String("format"), cmd.String("output"), dirs...)
	}
	s, err := openStore(ctx, cmd, env)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return history.Input(ctx, s, cmd.String("run"))
}

func analysisOptions(cmd *cli.Command) (analysis.Options, error) {
	o, err := gateFlags(cmd).Options()
	if err != nil {
		return o, err
	}
	o.Baseline, o.Alpha = cmd.String("baseline"), cmd.Float("alpha")
	if err := analysis.CheckAlpha(o.Alpha); err != nil { // 0 here is given, not the Options default
		return o, err
	}
	if o.Thresholds, o.Bar, err = analysis.ParseBars(cmd.StringSlice("threshold"), cmd.String("bar")); err != nil {
		return o, err
	}
	return o, pipeline.BeforeAnalyze(cmd.String("format"), cmd.String("output"))
}

// gateFlags are the gate's flags as given.
func gateFlags(cmd *cli.Command) pipeline.GateFlags {
	return pipeline.GateFlags{Gate: cmd.StringSlice("gate"), Primary: cmd.StringSlice("primary"), Fail: cmd.Bool("fail-on-regression"), AllowUnknown: cmd.Bool("allow-unknown")}
}

// gateFlagSet are the gate's flags, the same for analyze and matrix.
func gateFlagSet() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "gate", Usage: "gate `METRIC` too although it is descriptive or report-only (repeatable)"},
		&cli.StringSliceFlag{Name: "primary", Usage: "the primary `METRIC`s the gate answers for first (repeatable, or a comma list)", DefaultText: "tps; instructions_per_tx for instruction cells"},
		&cli.BoolFlag{Name: "fail-on-regression", Usage: "exit 1 when a gated metric regresses, 3 when the run could not answer (failed, missing or saturated cells, or a primary whose answer is unknown: could not answer, needs r ≥ N)"},
		&cli.BoolFlag{Name: "allow-unknown", Usage: "with --fail-on-regression: exit 0, with one line, when only the primary's answer is unknown (a regression or missing cells still fail)"},
	}
}
