package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/worktree"
)

// Status is what `abtest status --json` prints.
type Status struct {
	Source    string                 `json:"source"`
	Worktrees []*worktree.Provenance `json:"worktrees"`
}

func statusCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "status",
		Usage:        "show worktrees: commit, patches, uncommitted changes",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			sourceFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
			}
			wt := worktrees(cfg, runner(cmd, env))
			list, err := wt.List(ctx)
			if err != nil {
				return err
			}
			st := Status{Source: cfg.SourceDir, Worktrees: list}
			if st.Worktrees == nil {
				st.Worktrees = []*worktree.Provenance{}
			}
			if cmd.Bool("json") {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(env.Stdout, "source:    %s\nworktrees: %s\n", cfg.SourceDir, cfg.WorktreesDir)
			if len(list) == 0 {
				fmt.Fprintln(env.Stdout, "no worktrees; create one with: abtest switch -c COMMIT -w NAME")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCOMMIT\tREF\tPATCHES\tDIRTY\tSUBJECT")
			for _, p := range list {
				patches := "-"
				if len(p.Patches) > 0 {
					patches = ""
					for i, pa := range p.Patches {
						if i > 0 {
							patches += ","
						}
						patches += filepath.Base(pa.File)
					}
				}
				dirty := "no"
				if p.Dirty {
					dirty = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.SHA[:12], p.Ref, patches, dirty, p.Subject)
			}
			return tw.Flush()
		},
	}
}
