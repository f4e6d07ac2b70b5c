package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/worktree"
)

func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Usage: "build and install: `TYPE` release, debug or debug_noassert"},
		&cli.StringSliceFlag{Name: "meson-opt", Usage: "extra meson `OPTION` such as -Dfoo=bar (repeatable)"},
		&cli.StringSliceFlag{Name: "configure-opt", Usage: "extra configure `OPTION` for trees without meson.build (repeatable)"},
		&cli.BoolFlag{Name: "profiling", Usage: "keep frame pointers and symbols, so perf records call graphs"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		&cli.BoolFlag{Name: "force", Usage: "rebuild even when nothing changed"},
	}
}

// buildFlag is switch's build flag name, for another command.
func buildFlag(name string) cli.Flag {
	for _, f := range buildFlags() {
		if f.Names()[0] == name {
			return f
		}
	}
	panic("no build flag " + name)
}

func buildOptions(cmd *cli.Command, cfg *config.Loaded) (build.Options, error) {
	t, err := build.ParseType(cmd.String("build"))
	if err != nil {
		return build.Options{}, err
	}
	return build.Options{
		Type:          t,
		MesonOpts:     cmd.StringSlice("meson-opt"),
		ConfigureOpts: cmd.StringSlice("configure-opt"),
		Profiling:     cmd.Bool("profiling"),
		NoCCache:      cmd.Bool("no-ccache") || !cfg.CCache,
		Contrib:       cfg.Contrib,
		Force:         cmd.Bool("force"),
	}, nil
}

// runBuild builds worktree name. The builder stops every cluster running
// the install's binaries before it installs over them (the cluster
// manager owns that rule); they are started again afterwards with their
// settings, on the new build: cluster.Start keeps the data directory
// when the build's catalog version matches it and makes it anew (with a
// message) when it does not.
func runBuild(ctx context.Context, env *Env, cfg *config.Loaded, run *proc.Runner, wt *worktree.Manager, name string, o build.Options) (*build.Result, error) {
	prov, err := wt.Info(ctx, name)
	if err != nil {
		return nil, err
	}
	dir, _ := wt.Dir(name)
	cm, err := clusters(cfg, run, env)
	if err != nil {
		return nil, err
	}
	cm.Log = env.Stdout
	b := &build.Builder{
		WorktreesRoot: cfg.WorktreesDir,
		InstallRoot:   cfg.InstallDir,
		Run:           run,
		Servers:       cm,
		User:          cm.User, // as root, the server's account builds
	}
	res, err := b.BuildShown(ctx, progress.Console(env.Stdout, false, env.Now), prov, dir, o)
	if err != nil || run.DryRun {
		return res, err
	}
	for _, c := range res.Stopped {
		st, err := cm.ReadState(c)
		if err != nil {
			return res, err
		}
		if _, err := cm.Start(ctx, c, cluster.OptionsOf(st)); err != nil {
			return res, err
		}
	}
	return res, nil
}
