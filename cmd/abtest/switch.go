package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/worktree"
)

func switchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "switch",
		Usage: "manage one named worktree, its build and its cluster",
		UsageText: `abtest switch -c COMMIT -w NAME        create or move a worktree (detached)
abtest switch -w NAME --patch FILE...   apply patches (git diff, or git format-patch/mbox)
abtest switch -w NAME -b TYPE           build and install (TYPE release|debug|debug_noassert)
abtest switch -w NAME [-m N] [-p PORT|auto] [--set GUC=VAL]... [-C CPUS] [--install DIR]
                                        start NAME's cluster (initdb first when needed)
abtest switch -w NAME --recreate-cluster
abtest switch -w NAME --stop
abtest switch --remove -w NAME          stop the cluster, remove worktree, install and data`,
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "worktree", Aliases: []string{"w"}, Usage: "worktree `NAME` ([A-Za-z0-9._-], up to 64)"},
			&cli.StringFlag{Name: "commit", Aliases: []string{"c"}, Usage: "`REF` to check out: branch, tag, sha, HEAD~3, …"},
			&cli.StringSliceFlag{Name: "patch", Usage: "apply patch `FILE` (repeatable, applied in order)"},
			&cli.BoolFlag{Name: "remove", Usage: "stop the cluster and remove worktree, install and data"},
			sourceFlag(),
		}, append(buildFlags(), clusterFlags()...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runSwitch(ctx, cmd, env)
		},
	}
}

func runSwitch(ctx context.Context, cmd *cli.Command, env *Env) error {
	name, err := requireName(cmd)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	run := runner(cmd, env)
	wt := worktrees(cfg, run)
	if _, err := wt.Dir(name); err != nil {
		return exitcode.BadInput(err)
	}
	commit, patches := cmd.String("commit"), cmd.StringSlice("patch")
	remove, stop, buildType := cmd.Bool("remove"), cmd.Bool("stop"), cmd.String("build")
	startCluster := wantsCluster(cmd) || (commit == "" && len(patches) == 0 && buildType == "" && !remove && !stop)

	if remove || stop {
		if commit != "" || len(patches) > 0 || buildType != "" || wantsCluster(cmd) || remove && stop {
			return exitcode.BadInputf("switch: --remove and --stop take only -w NAME")
		}
	}
	// Validate every flag before anything changes on disk.
	var bopts build.Options
	if buildType != "" {
		if bopts, err = buildOptions(cmd, cfg); err != nil {
			return err
		}
	} else {
		for _, f := range []string{"meson-opt", "configure-opt", "profiling", "no-ccache", "force"} {
			if cmd.IsSet(f) && !(f == "force" && stop) {
				return exitcode.BadInputf("switch: --%s needs -b TYPE", f)
			}
		}
	}
	var copts cluster.Options
	if startCluster {
		if copts, err = clusterOptions(cmd, installFor(cmd, cfg, name)); err != nil {
			return err
		}
	}

	if remove || stop {
		return removeOrStop(ctx, env, cfg, run, wt, name, remove, cmd.Bool("force"))
	}
	if err := moveAndPatch(ctx, env, run, wt, name, commit, patches); err != nil {
		return err
	}
	if buildType != "" {
		if _, err := runBuild(ctx, env, cfg, run, wt, name, bopts); err != nil {
			return err
		}
	}
	if startCluster {
		cm, err := clusters(cfg, run, env)
		if err != nil {
			return err
		}
		st, err := cm.Start(ctx, name, copts)
		if err != nil {
			return err
		}
		if !run.DryRun {
			fmt.Fprintf(env.Stdout, "source %s\n", st.EnvFile)
		}
	}
	return nil
}

// removeOrStop is switch --remove (cluster, install and worktree) or
// --stop.
func removeOrStop(ctx context.Context, env *Env, cfg *config.Loaded, run *proc.Runner, wt *worktree.Manager, name string, remove, force bool) error {
	cm, err := clusters(cfg, run, env)
	if err != nil {
		return err
	}
	if remove {
		if err := cm.Remove(ctx, name); err != nil {
			return err
		}
		if err := removeInstall(cfg, run, name); err != nil {
			return err
		}
		if err := wt.Remove(ctx, name); err != nil {
			return err
		}
		if !run.DryRun {
			fmt.Fprintf(env.Stdout, "%s: removed cluster, install and worktree\n", name)
		}
		return nil
	}
	stop := cm.Stop
	if force {
		// --stop --force: even while a matrix measures on it.
		stop = cm.ForceStop
	}
	stopped, err := stop(ctx, name)
	if err != nil || run.DryRun {
		return err
	}
	if stopped {
		fmt.Fprintf(env.Stdout, "cluster %s: stopped\n", name)
	} else {
		fmt.Fprintf(env.Stdout, "cluster %s: not running\n", name)
	}
	return nil
}

// moveAndPatch puts worktree name at commit (when given) and applies
// patches.
func moveAndPatch(ctx context.Context, env *Env, run *proc.Runner, wt *worktree.Manager, name, commit string, patches []string) error {
	if commit != "" {
		res, err := wt.Switch(ctx, name, commit)
		if err != nil {
			return err
		}
		if !run.DryRun {
			switch res.Action {
			case "moved":
				fmt.Fprintf(env.Stdout, "worktree %s: moved %s -> %s %s (%s)\n", name, matrix.Short(res.From), matrix.Short(res.Commit.SHA), res.Commit.Subject, res.Dir)
			default:
				fmt.Fprintf(env.Stdout, "worktree %s: %s at %s %s (%s)\n", name, res.Action, matrix.Short(res.Commit.SHA), res.Commit.Subject, res.Dir)
			}
		}
	}
	if len(patches) == 0 {
		return nil
	}
	applied, err := wt.Apply(ctx, name, patches)
	if err != nil {
		return err
	}
	for _, p := range applied {
		if !run.DryRun {
			fmt.Fprintf(env.Stdout, "worktree %s: applied %s (%d commit(s), sha256 %s) %s\n", name, p.File, len(p.Commits), matrix.Short(p.SHA256), p.Subject)
		}
	}
	return nil
}
