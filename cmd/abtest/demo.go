package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/demo"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/pipeline"
)

func demoCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "the built-in A/B run: a PostgreSQL tree against itself with pg_stat_statements' USAGE_DEALLOC_PERCENT raised from 5 to 20",
		UsageText: "abtest demo [--source DIR] [-d SECONDS] [-r N]",
		Flags: []cli.Flag{
			storeFlag(),
			sourceFlag(),
			&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: int(demo.Duration / time.Second), Usage: "measured `SECONDS` per cell"},
			&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: demo.Repeats, Usage: "`N` repeats"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runDemo(ctx, cmd, env) },
	}
}

func runDemo(ctx context.Context, cmd *cli.Command, env *Env) error {
	root := config.DemoRoot(env.Getenv("ABTEST_DEMO_DIR"), env.Geteuid() == 0, env.Home)
	defaults := demo.Defaults(env.Home, root)
	cfg, err := loadConfigWith(cmd, env, &defaults)
	if err != nil {
		return err
	}
	if err := demo.CheckSource(cfg); err != nil {
		return err
	}
	d, err := matrix.Seconds(cmd.Int("duration"), "-d")
	if err != nil {
		return err
	}
	run := runner(cmd, env)
	patch, cleanup, err := demo.WritePatch(root, run.DryRun)
	if err != nil {
		return err
	}
	defer cleanup()
	deps, err := newDeps(env, cfg, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "abtest demo: %s HEAD against HEAD + %s, in %s\n", cfg.SourceDir, demo.PatchName, root)
	// The same results directory, and the same refusal of one another
	// run is writing, as matrix without -o.
	plan, dir, err := pipeline.Prepare(ctx, deps, demo.Request(patch, d, int(cmd.Int("repeats")), env.Now().UnixNano()%1_000_000_007), "", cfg.ResultsDir)
	if err != nil {
		return err
	}
	err = runAndReport(ctx, env, cfg, deps, plan, dir, pipeline.RunOptions{})
	fmt.Fprint(env.Stdout, demo.Reuse(&cfg.Config, root))
	return err
}
