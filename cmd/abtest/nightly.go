package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/nightly"
	"github.com/pgabtest/abtest/store"
)

func nightlyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "nightly",
		Usage:     "the unattended regression job: fetch, build the branch head, compare with the baseline, keep history",
		UsageText: "abtest [-n] nightly --config nightly.toml [--no-fetch] [--force]",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.BoolFlag{Name: "no-fetch", Usage: "use the remote-tracking branch as it is"},
			&cli.BoolFlag{Name: "force", Usage: "run even when the head has not changed since the last night"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runNightly(ctx, cmd, env) },
	}
}

func runNightly(ctx context.Context, cmd *cli.Command, env *Env) error {
	nc, cfg, err := nightly.Load(cmd.String("config"), env.Home, env.Getenv, flagOverrides(cmd))
	if err != nil {
		return err
	}
	deps, err := newDeps(env, cfg, runner(cmd, env))
	if err != nil {
		return err
	}
	// n-<sha> is the job's name, as b-<sha> is bisect's.
	deps.Quiet, deps.BuildOptions.ReuseFrom = true, nightly.ReuseFrom(nc)
	o := nightly.Options{NoFetch: cmd.Bool("no-fetch"), Force: cmd.Bool("force"), DryRun: cmd.Bool("dry-run")}
	return nightly.Run(ctx, &nightly.Deps{Matrix: deps, Out: env.Stdout, Err: env.Stderr, Record: recorder(cfg), Store: store.Location(cfg.Store, cfg.ResultsDir)}, nc, o)
}
