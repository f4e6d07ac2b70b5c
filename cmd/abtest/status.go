package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/workspace"
)

// Status is what `abtest status --json` prints.
type Status = workspace.Status

func statusCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show worktrees (commit, patches, changes) and clusters (running, port, CPUs)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			sourceFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			ws, err := openWorkspace(cmd, env)
			if err != nil {
				return err
			}
			st, err := ws.Status(ctx)
			if err != nil {
				return err
			}
			return printResult(env, cmd, st, func(w io.Writer) { st.WriteText(w) })
		},
	}
}
