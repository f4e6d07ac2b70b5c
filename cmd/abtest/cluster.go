package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/workspace"
)

// clusterFlags are switch's flags that start (or restart) a cluster.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "pgss-max", Aliases: []string{"m", "max"}, Usage: "pg_stat_statements.max `N`", Value: cluster.DefaultPgssMax},
		&cli.StringFlag{Name: "port", Aliases: []string{"p"}, Usage: "`PORT` number, or auto for a free one", DefaultText: "the cluster's previous port, else auto"},
		&cli.StringSliceFlag{Name: "set", Usage: "server setting `GUC=VALUE` (repeatable; applied last)"},
		&cli.StringFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "pin the server to `N` CPUs, or a CPU list such as 0-3,8"},
		&cli.IntFlag{Name: "max-clients", Usage: "largest pgbench client count `N` to size max_connections for", Value: 64},
		&cli.StringFlag{Name: "listen", Usage: "listen_addresses `ADDR`", DefaultText: "Unix socket only"},
		&cli.BoolFlag{Name: "data-checksums", Usage: "initdb --data-checksums"},
		&cli.StringFlag{Name: "install", Usage: "run the prebuilt installation in `DIR` (e.g. /usr/lib/postgresql/15)"},
		&cli.BoolFlag{Name: "recreate-cluster", Usage: "initdb again (the data directory is replaced) and start"},
		&cli.BoolFlag{Name: "stop", Usage: "stop the cluster"},
		runAsFlag(),
	}
}

func runAsFlag() cli.Flag {
	return &cli.StringFlag{Name: "run-as", Usage: "unprivileged `USER` for the server when abtest runs as root", DefaultText: "postgres"}
}

func envCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "env",
		Usage: "print a cluster's env.sh, for eval \"$(abtest env NAME)\"",
		Flags: []cli.Flag{
			worktreeFlag("cluster `NAME`, or the first argument"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name, err := worktreeName(cmd, true)
			if err != nil {
				return err
			}
			ws, err := openWorkspace(cmd, env)
			if err != nil {
				return err
			}
			_, _ = ws.Clusters() // starts again what a killed abtest stopped
			data, err := workspace.ReadEnv(ws.Config, env.Geteuid(), name)
			if err != nil {
				return err
			}
			_, err = env.Stdout.Write(data)
			return err
		},
	}
}
