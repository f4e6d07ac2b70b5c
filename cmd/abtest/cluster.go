package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safepath"
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

// wantsCluster reports whether switch was asked to start a cluster.
func wantsCluster(cmd *cli.Command) bool {
	for _, f := range []string{"pgss-max", "port", "set", "cpus", "max-clients", "listen", "data-checksums", "install", "recreate-cluster"} {
		if cmd.IsSet(f) {
			return true
		}
	}
	return false
}

// serverUser is the account that runs PostgreSQL: nil when abtest is not
// root, else --run-as / run_as / postgres.
func serverUser(cfg *config.Loaded, env *Env) (*proc.User, error) {
	if env.Geteuid() != 0 {
		return nil, nil
	}
	name := cfg.RunAs
	if name == "" {
		name = "postgres"
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		return nil, exitcode.BadInputf("abtest runs as root and PostgreSQL refuses to; the account %q to run it as does not exist: pass --run-as USER (set by %s)", name, cfg.SourceOf("run_as"))
	}
	if u.UID == 0 {
		return nil, exitcode.BadInputf("--run-as %s: the account is root; PostgreSQL needs an unprivileged one", name)
	}
	return u, nil
}

func clusters(cfg *config.Loaded, run *proc.Runner, env *Env) (*cluster.Manager, error) {
	u, err := serverUser(cfg, env)
	if err != nil {
		return nil, err
	}
	return &cluster.Manager{
		Root:         cfg.DataDir,
		Run:          run,
		User:         u,
		StartTimeout: time.Duration(cfg.StartTimeout) * time.Second,
		Log:          env.Stdout,
	}, nil
}

// installFor returns the installation for name: --install, the config's
// [installs] table, the build under $PG_INSTALL_DIR, or else the one the
// cluster's state recorded (a cluster started once with --install keeps
// it without being told again).
func installFor(cmd *cli.Command, cfg *config.Loaded, name string) string {
	if dir := cmd.String("install"); dir != "" {
		abs, _ := filepath.Abs(dir)
		return abs
	}
	if dir, ok := cfg.Installs[name]; ok {
		return dir
	}
	built := filepath.Join(cfg.InstallDir, name)
	if _, err := os.Stat(filepath.Join(built, "bin", "postgres")); err == nil {
		return built
	}
	if st, err := (&cluster.Manager{Root: cfg.DataDir}).ReadState(name); err == nil && st.Install != "" {
		return st.Install
	}
	return built
}

// clusterOptions turns switch's flags into cluster.Options.
func clusterOptions(cmd *cli.Command, install string) (cluster.Options, error) {
	o := cluster.Options{
		Install:       install,
		PgssMax:       int(cmd.Int("pgss-max")),
		MaxClients:    int(cmd.Int("max-clients")),
		Listen:        cmd.String("listen"),
		DataChecksums: cmd.Bool("data-checksums"),
		Recreate:      cmd.Bool("recreate-cluster"),
	}
	switch p := cmd.String("port"); p {
	case "":
	case "auto":
		o.AutoPort = true
	default:
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return o, exitcode.BadInputf("-p %q: want a port number (1-65535) or auto", p)
		}
		o.Port = n
	}
	if o.PgssMax < 100 {
		return o, exitcode.BadInputf("-m %d: pg_stat_statements.max must be at least 100", o.PgssMax)
	}
	if o.MaxClients < 1 {
		return o, exitcode.BadInputf("--max-clients %d: want at least 1", o.MaxClients)
	}
	for _, s := range cmd.StringSlice("set") {
		st, err := cluster.ParseSetting(s)
		if err != nil {
			return o, err
		}
		o.Settings = append(o.Settings, st)
	}
	if spec := cmd.String("cpus"); spec != "" {
		online, err := cluster.OnlineCPUs()
		if err != nil {
			return o, exitcode.Failure(err)
		}
		if o.CPUs, err = cluster.ParseCPUs(spec, online); err != nil {
			return o, err
		}
	}
	return o, nil
}

// removeInstall removes $PG_INSTALL_DIR/NAME (never a prebuilt one).
func removeInstall(cfg *config.Loaded, run *proc.Runner, name string) error {
	dir := filepath.Join(cfg.InstallDir, name)
	if err := safepath.CheckRemovable(cfg.InstallDir, dir); err != nil {
		return exitcode.BadInput(fmt.Errorf("removing install %s: %w", name, err))
	}
	return exitcode.Failure(run.RemoveAll(dir))
}

func envCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "env",
		Usage:        "print a cluster's env.sh, for eval \"$(abtest env -w NAME)\"",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "worktree", Aliases: []string{"w"}, Usage: "cluster `NAME`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name, err := requireName(cmd)
			if err != nil {
				return err
			}
			if err := safepath.CheckName(name); err != nil {
				return exitcode.BadInput(err)
			}
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
			}
			cm := &cluster.Manager{Root: cfg.DataDir, Run: runner(cmd, env)}
			data, err := os.ReadFile(cm.EnvFile(name))
			if errors.Is(err, os.ErrNotExist) {
				return exitcode.BadInputf("cluster %s has no env.sh (%s); start it with: abtest switch -w %s", name, cm.EnvFile(name), name)
			}
			if err != nil {
				return exitcode.Failure(err)
			}
			_, err = env.Stdout.Write(data)
			return err
		},
	}
}
