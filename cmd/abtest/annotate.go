package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/store"
)

func annotateCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "annotate",
		Usage:     "note a commit's expected effect on a metric: its change point is then shown as expected, not as a regression",
		UsageText: `abtest annotate --commit REF --metric M [--configuration C] --note "expected: …" [--store URL]`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "commit", Usage: "`REF`: a stored sha (or a prefix of one), or a commit label or ref of a stored run"},
			&cli.StringFlag{Name: "metric", Usage: "`METRIC`, e.g. tps"},
			&cli.StringFlag{Name: "configuration", Usage: "only this `CONFIG`uration", DefaultText: "every one"},
			&cli.StringFlag{Name: "note", Usage: fmt.Sprintf("the `NOTE`: plain text of at most %d characters (tabs and newlines kept)", store.MaxNote)},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.String("commit") == "" || cmd.String("metric") == "" || cmd.String("note") == "" {
				return exitcode.BadInputf("annotate: --commit, --metric and --note are required")
			}
			s, err := openStore(ctx, cmd, env)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.CheckNames(ctx, cmd.String("metric"), cmd.String("configuration")); err != nil {
				return err
			}
			a, err := s.AnnotateRef(ctx, cmd.String("commit"), cmd.String("metric"), cmd.String("configuration"), cmd.String("note"))
			if err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, a)
			return nil
		},
	}
}
