package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/exitcode"
)

func dashboardCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "dashboard",
		Usage:     "write the static dashboard (runs, compare pages, trends) from the store; it opens from disk",
		UsageText: "abtest dashboard -o DIR [--store URL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "site `DIR`"},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out := cmd.String("output")
			if out == "" {
				return exitcode.BadInputf("dashboard: -o DIR is required")
			}
			s, err := openStore(ctx, cmd, env)
			if err != nil {
				return err
			}
			defer s.Close()
			site, err := dashboard.Write(ctx, s, out, dashboard.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%d runs, %d trends: open %s\n", len(site.Runs), len(site.Trends), site.Index)
			return nil
		},
	}
}

func serveCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "write the dashboard and serve it on the loopback interface until interrupted",
		UsageText: "abtest serve [--addr 127.0.0.1:8080] [-o DIR] [--store URL]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "loopback `HOST:PORT`"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "site `DIR`", DefaultText: "a temporary directory"},
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := dashboard.CheckAddr(cmd.String("addr")); err != nil {
				return err
			}
			s, err := openStore(ctx, cmd, env)
			if err != nil {
				return err
			}
			return dashboard.WriteAndServe(ctx, s, cmd.String("output"), cmd.String("addr"), func(dir, addr string) {
				fmt.Fprintf(env.Stdout, "serving %s on http://%s/ (interrupt to stop)\n", dir, addr)
			})
		},
	}
}
