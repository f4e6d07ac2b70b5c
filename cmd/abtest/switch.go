package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
)

func switchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "switch",
		Usage: "create, move, patch or remove a named worktree",
		UsageText: `abtest switch -c COMMIT -w NAME       create or move a worktree (detached)
abtest switch -w NAME --patch FILE...  apply patches (git diff, or git format-patch/mbox)
abtest switch --remove -w NAME        remove the worktree`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "worktree", Aliases: []string{"w"}, Usage: "worktree `NAME` ([A-Za-z0-9._-], up to 64)"},
			&cli.StringFlag{Name: "commit", Aliases: []string{"c"}, Usage: "`REF` to check out: branch, tag, sha, HEAD~3, …"},
			&cli.StringSliceFlag{Name: "patch", Usage: "apply patch `FILE` (repeatable, applied in order)"},
			&cli.BoolFlag{Name: "remove", Usage: "remove the worktree"},
			sourceFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
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
			commit, patches, remove := cmd.String("commit"), cmd.StringSlice("patch"), cmd.Bool("remove")
			if remove {
				if commit != "" || len(patches) > 0 {
					return exitcode.BadInputf("switch: --remove takes only -w NAME")
				}
				if err := wt.Remove(ctx, name); err != nil {
					return err
				}
				if !run.DryRun {
					fmt.Fprintf(env.Stdout, "worktree %s: removed\n", name)
				}
				return nil
			}
			if commit == "" && len(patches) == 0 {
				return exitcode.BadInputf("switch -w %s: nothing to do: pass -c COMMIT, --patch FILE or --remove", name)
			}
			if commit != "" {
				res, err := wt.Switch(ctx, name, commit)
				if err != nil {
					return err
				}
				if !run.DryRun {
					switch res.Action {
					case "moved":
						fmt.Fprintf(env.Stdout, "worktree %s: moved %s -> %s %s (%s)\n", name, res.From[:12], res.Commit.SHA[:12], res.Commit.Subject, res.Dir)
					default:
						fmt.Fprintf(env.Stdout, "worktree %s: %s at %s %s (%s)\n", name, res.Action, res.Commit.SHA[:12], res.Commit.Subject, res.Dir)
					}
				}
			}
			if len(patches) > 0 {
				applied, err := wt.Apply(ctx, name, patches)
				if err != nil {
					return err
				}
				for _, p := range applied {
					if !run.DryRun {
						fmt.Fprintf(env.Stdout, "worktree %s: applied %s (%d commit(s), sha256 %s) %s\n", name, p.File, len(p.Commits), p.SHA256[:12], p.Subject)
					}
				}
			}
			return nil
		},
	}
}
