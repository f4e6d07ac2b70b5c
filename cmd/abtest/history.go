package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/store"
)

func historyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "history",
		Usage:        "a metric's trend in one configuration over the stored runs, with its change points",
		UsageText:    "abtest history --metric tps --config select1/c16 [--since 30d] [--json] [--store URL]",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "metric", Usage: "`METRIC`, e.g. tps"},
			&cli.StringFlag{Name: "config", Usage: "`CONFIG`uration: its id, or a prefix only one has (select1/c16)"},
			&cli.StringFlag{Name: "since", Usage: "only runs of the last `AGE` (30d, 12h) or since a date (2025-01-31)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.String("metric") == "" || cmd.String("config") == "" {
				return exitcode.BadInputf("history: --metric and --config are required")
			}
			since, err := parseSince(cmd.String("since"), time.Now())
			if err != nil {
				return err
			}
			s, err := openStore(ctx, cmd, env)
			if err != nil {
				return err
			}
			defer s.Close()
			ser, err := s.History(ctx, store.HistoryQuery{Metric: cmd.String("metric"), Config: cmd.String("config"), Since: since})
			if err != nil {
				return err
			}
			if cmd.Bool("json") {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ser)
			}
			writeHistory(env, ser)
			return nil
		},
	}
}

func writeHistory(env *Env, ser *store.Series) {
	un := len(ser.Unexpected())
	fmt.Fprintf(env.Stdout, "# %s %s: %d points, %d change points (%d unexpected)\n", ser.Metric, ser.Config, len(ser.Points), len(ser.ChangePoints), un)
	at := map[int]store.ChangePoint{}
	for _, cp := range ser.ChangePoints {
		at[cp.Index] = cp
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "time\trun\tcommit\tsha\t%s\tn\t\n", ser.Metric)
	for i, p := range ser.Points {
		mark := ""
		if cp, ok := at[i]; ok {
			if cp.Expected {
				mark = fmt.Sprintf("<- change %+.1f%% (expected: %s)", cp.DeltaPct, cp.Note)
			} else {
				mark = fmt.Sprintf("<- CHANGE %+.1f%% p=%.3f", cp.DeltaPct, cp.P)
			}
		}
		sha := p.SHA
		if len(sha) > 12 {
			sha = sha[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.6g\t%d\t%s\n", p.Time.UTC().Format("2006-01-02 15:04"), p.Run, p.Commit, sha, p.Value, p.N, mark)
	}
	tw.Flush()
}

// parseSince reads --since: an age in days (30d) or any Go duration
// (12h), or a date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, exitcode.BadInputf("--since %q: want an age (30d, 12h) or a date (2025-01-31)", s)
}
