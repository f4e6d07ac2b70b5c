package main

import (
	"cmp"
	"context"
	"errors"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/store"
)

func historyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "a metric's trend in one configuration over the stored runs, with its change points",
		UsageText: "abtest history --metric tps --configuration select1/c16 [--since 30d] [--json] [--store URL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "metric", Usage: "`METRIC`, e.g. tps"},
			&cli.StringFlag{Name: "configuration", Usage: "`CONFIG`uration: its id, or a prefix only one has (select1/c16)"},
			&cli.StringFlag{Name: "since", Usage: "only runs of the last `AGE` (30d, 12h) or since a date (2025-01-31)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.String("metric") == "" || cmd.String("configuration") == "" {
				return exitcode.BadInputf("history: --metric and --configuration are required")
			}
			since, err := store.ParseSince(cmd.String("since"), env.Now())
			if err != nil {
				return err
			}
			s, err := openStore(ctx, cmd, env)
			if err != nil {
				return err
			}
			defer s.Close()
			ser, err := history.Trend(ctx, s, store.HistoryQuery{Metric: cmd.String("metric"), Config: cmd.String("configuration"), Since: since})
			if errors.Is(err, store.ErrUnknown) || (err == nil && len(ser.Points) == 0) {
				err = cmp.Or(s.CheckNames(ctx, cmd.String("metric"), cmd.String("configuration")), err)
			}
			if err != nil {
				return err
			}
			return printResult(env, cmd, ser, ser.WriteText)
		},
	}
}
