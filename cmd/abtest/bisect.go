package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/bisect"
)

func bisectCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "bisect",
		Usage: "find the first commit that changed a metric, by binary search over first-parent history",
		UsageText: `abtest bisect --good REF --bad REF [-w WORKLOAD] [-c CLIENTS] [-C CPUS] [--set GUC=V]… [--var NAME=V]… [--metric tps]
              [--threshold PCT] [-r REPEATS] [--max-repeats N] [-m N] [-d S] [-M PROTO] [-b TYPE] [-o DIR] [-n]`,
		Flags: append(axisFlags(), []cli.Flag{
			storeFlag(),
			&cli.StringFlag{Name: "good", Usage: "a `REF` without the change"},
			&cli.StringFlag{Name: "bad", Usage: "a `REF` with it"},
			&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1", Usage: "the `WORKLOAD`"},
			&cli.StringFlag{Name: "metric", Value: bisect.DefaultMetric, Usage: "the `METRIC` that changed"},
			&cli.FloatFlag{Name: "threshold", Usage: "minimum change in `PCT`", DefaultText: "the metric's own"},
			&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 8, Usage: "`N` repeats per step (see Repeats above)"},
			&cli.IntFlag{Name: "max-repeats", Value: 20, Usage: "give up an inconclusive step after `N` repeats"},
			instrTransactionsFlag(),
			&cli.StringFlag{Name: "pgss-max", Aliases: []string{"m"}, Value: "5000", Usage: "pg_stat_statements.max `N`"},
			&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 10, Usage: "`SECONDS` per cell"},
			&cli.IntFlag{Name: "warmup", Value: 2, Usage: "warm-up `SECONDS`"},
			&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "`PROTOCOL`"},
			&cli.StringFlag{Name: "build", Aliases: []string{"b"}, Value: "release", Usage: "build `TYPE`"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "state and results `DIR`", DefaultText: "$BENCH_RESULTS_DIR/bisect_GOOD_BAD"},
			&cli.StringSliceFlag{Name: "reuse", Usage: "use an install named `PREFIX`… of a step's tree and build options instead of building it (repeatable); do not rebuild those while the bisect runs"},
			sourceFlag(),
			runAsFlag(),
		}...),
		Action: func(ctx context.Context, cmd *cli.Command) error { return runBisect(ctx, cmd, env) },
	}
}

// bisectRequest turns the flags into a bisect.Request (Dir aside).
func bisectRequest(cmd *cli.Command, env *Env) (*bisect.Request, error) {
	return bisect.Options{
		Good: cmd.String("good"), Bad: cmd.String("bad"), Metric: cmd.String("metric"), Threshold: cmd.Float("threshold"),
		Repeats: int(cmd.Int("repeats")), MaxRepeats: int(cmd.Int("max-repeats")), RepeatsGiven: cmd.IsSet("repeats"),
		Matrix: matrixOptions(cmd, env), Reuse: cmd.StringSlice("reuse"),
	}.Request()
}

func runBisect(ctx context.Context, cmd *cli.Command, env *Env) error {
	r, err := bisectRequest(cmd, env)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	mdeps, err := newDeps(env, cfg, runner(cmd, env))
	if err != nil {
		return err
	}
	mdeps.Quiet, mdeps.BuildOptions.ReuseFrom = true, r.ReuseFrom()
	r.Dir = env.Getwd.Path(cmd.String("output"))
	deps := &bisect.Deps{Matrix: mdeps, Out: env.Stdout, Err: env.Stderr, Record: recorder(cfg)}
	return bisect.Execute(ctx, deps, r, cfg.ResultsDir, cmd.Bool("dry-run"))
}
