package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/store"
)

// storeFlag is --store, the override of the config's store key.
func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "results database: postgres://… `URL` or a SQLite file", DefaultText: "results_dir/abtest.db"}
}

// openStore opens the store that --store, the config's store key, or
// the default (results_dir/abtest.db) names; only store import creates
// a SQLite file that is missing.
//
// The configuration is read through the root command: history and
// annotate have a --config of their own (a benchmark configuration), so
// the config file is given before the command (abtest --config FILE
// history …).
func openStore(ctx context.Context, cmd *cli.Command, env *Env) (*store.Store, error) {
	cfg, err := loadConfig(cmd.Root(), env)
	if err != nil {
		return nil, err
	}
	loc := cfg.Store
	if cmd.IsSet("store") {
		loc = cmd.String("store")
	}
	return store.OpenFor(ctx, store.Location(loc, cfg.ResultsDir), cmd.Name == "import")
}

// printResult prints v as indented JSON under --json, else as text.
func printResult(env *Env, cmd *cli.Command, v any, text func(io.Writer)) error {
	if !cmd.Bool("json") {
		text(env.Stdout)
		return nil
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func storeCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "store",
		Usage: "the results database",
		Commands: []*cli.Command{{
			Name:      "import",
			Usage:     "load results directories into the store (again is harmless: a cell is stored once)",
			ArgsUsage: "DIR…",
			Flags:     []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "json", Usage: "print JSON"}},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Len() == 0 {
					return exitcode.BadInputf("store import: give at least one results directory")
				}
				// Before openStore creates a missing SQLite file.
				if err := store.CheckPlansOf(cmd.Args().Slice()...); err != nil {
					return err
				}
				s, err := openStore(ctx, cmd, env)
				if err != nil {
					return err
				}
				defer s.Close()
				var w, warn io.Writer = env.Stdout, env.Stderr
				if cmd.Bool("json") {
					w, warn = nil, nil
				}
				all, err := history.ImportAll(ctx, s, cmd.Args().Slice(), w, warn)
				if err != nil || !cmd.Bool("json") {
					return err
				}
				return json.NewEncoder(env.Stdout).Encode(all)
			},
		}},
	}
}
