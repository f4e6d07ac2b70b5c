package main

import (
	"context"
	"slices"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/workspace"
)

func switchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "switch",
		Usage: "manage one named worktree, its build and its cluster (status on stderr; stdout is the started cluster's export lines, for eval)",
		UsageText: `abtest switch NAME -k COMMIT         create or move a worktree (detached)
abtest switch NAME --patch FILE...   apply patches (git diff, or git format-patch/mbox)
abtest switch NAME -b TYPE           build and install (TYPE release|debug|debug_noassert)
abtest switch NAME [-m N] [-p PORT|auto] [--set GUC=VAL]... [-C CPUS] [--install DIR]
                                     start NAME's cluster (initdb first when needed)
abtest switch NAME --recreate-cluster | --stop | --remove
abtest switch --prune                remove socket directories whose cluster is gone`,
		Flags: append([]cli.Flag{
			worktreeFlag("worktree `NAME` ([A-Za-z0-9._-], up to 64), or the first argument"),
			&cli.StringFlag{Name: "commit", Aliases: []string{"k"}, Usage: "`REF` to check out: branch, tag, sha, HEAD~3, …"},
			&cli.StringSliceFlag{Name: "patch", Usage: "apply patch `FILE` (repeatable, applied in order)"},
			&cli.BoolFlag{Name: "remove", Usage: "stop the cluster and remove worktree, install and data"},
			&cli.BoolFlag{Name: "prune", Usage: "remove the socket directories (/tmp/abtest-*) whose cluster is gone"},
			sourceFlag(),
		}, append(buildFlags(), clusterFlags()...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runSwitch(ctx, cmd, env)
		},
	}
}

// switchRequest turns switch's flags into a workspace.Request.
func switchRequest(cmd *cli.Command, env *Env) (workspace.Request, error) {
	name, err := worktreeName(cmd, true)
	r := workspace.Request{
		Name: name, Commit: cmd.String("commit"), Patches: env.Getwd.Paths(cmd.StringSlice("patch")),
		Remove: cmd.Bool("remove"), Stop: cmd.Bool("stop"), Force: cmd.Bool("force"), Prune: cmd.Bool("prune"),
	}
	if err != nil && !r.Prune {
		return r, err
	}
	if t := cmd.String("build"); t != "" {
		r.Build = &workspace.BuildSpec{
			Type: t, MesonOpts: cmd.StringSlice("meson-opt"), ConfigureOpts: cmd.StringSlice("configure-opt"),
			Profiling: cmd.Bool("profiling"), NoCCache: cmd.Bool("no-ccache"), Force: cmd.Bool("force"), Extensions: env.Getwd.Paths(cmd.StringSlice("extension")),
		}
	} else {
		for _, f := range []string{"meson-opt", "configure-opt", "profiling", "no-ccache", "force", "extension"} {
			if cmd.IsSet(f) && !(f == "force" && r.Stop) {
				return r, exitcode.BadInputf("switch: --%s needs -b TYPE", f)
			}
		}
	}
	wantsCluster := slices.ContainsFunc([]string{"pgss-max", "port", "set", "cpus", "max-clients", "listen", "data-checksums", "install", "recreate-cluster"}, cmd.IsSet)
	if wantsCluster || (r.Commit == "" && len(r.Patches) == 0 && r.Build == nil && !r.Remove && !r.Stop && !r.Prune) {
		r.Cluster = &workspace.ClusterSpec{
			Port: cmd.String("port"), PgssMax: int(cmd.Int("pgss-max")), MaxClients: int(cmd.Int("max-clients")),
			Listen: cmd.String("listen"), DataChecksums: cmd.Bool("data-checksums"), Install: env.Getwd.Path(cmd.String("install")),
			Recreate: cmd.Bool("recreate-cluster"), Settings: cmd.StringSlice("set"), CPUs: cmd.String("cpus"),
		}
	}
	return r, nil
}

func runSwitch(ctx context.Context, cmd *cli.Command, env *Env) error {
	r, err := switchRequest(cmd, env)
	if err != nil {
		return err
	}
	ws, err := openWorkspace(cmd, env)
	if err != nil {
		return err
	}
	return ws.Switch(ctx, r)
}

// buildFlags are switch's flags that build and install.
func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Usage: "build and install: `TYPE` release, debug or debug_noassert"},
		&cli.StringSliceFlag{Name: "meson-opt", Usage: "extra meson `OPTION` such as -Dfoo=bar (repeatable)"},
		&cli.StringSliceFlag{Name: "configure-opt", Usage: "extra configure `OPTION` for trees without meson.build (repeatable)"},
		&cli.BoolFlag{Name: "profiling", Usage: "keep frame pointers and symbols, so perf records call graphs"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		&cli.BoolFlag{Name: "force", Usage: "rebuild even when nothing changed"},
		&cli.StringSliceFlag{Name: "extension", Usage: "build the extension source `DIR` with PGXS into the build, after it (repeatable; cached by fingerprint)"},
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
