package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/google/pprof/driver"
	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/perf"
)

func perfCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "perf",
		Usage: "CPU profiles of a cluster: record (perf → pprof), report, compare, view",
		Commands: []*cli.Command{
			{
				Name:         "record",
				Usage:        "perf record -g on a cluster's processes, written as a pprof profile",
				UsageText:    "abtest perf record [-w NAME | -p PORT] [-d SECONDS] [-F HZ] [-o FILE] [--keep-raw]",
				OnUsageError: usageError,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "worktree", Aliases: []string{"w"}, Usage: "cluster `NAME` started by abtest"},
					&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "or a local server's `PORT` (PGHOST/PGUSER from the environment)"},
					&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 10, Usage: "`SECONDS` to record"},
					&cli.IntFlag{Name: "freq", Aliases: []string{"F"}, Value: perf.DefaultHz, Usage: "sampling frequency `HZ`"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "profile.pb.gz", Usage: "profile `FILE`"},
					&cli.BoolFlag{Name: "keep-raw", Usage: "keep perf.data beside the profile"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfRecord(ctx, cmd, env) },
			},
			{
				Name:         "report",
				Usage:        "top functions of a profile, flat and cumulative",
				UsageText:    "abtest perf report FILE [--top N] [--cum]",
				OnUsageError: usageError,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "top", Value: 20, Usage: "`N` functions"},
					&cli.BoolFlag{Name: "cum", Usage: "sort by cumulative time"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return exitcode.BadInputf("perf report: give one profile FILE")
					}
					p, err := profiles.Read(cmd.Args().First())
					if err != nil {
						return err
					}
					profiles.WriteTop(env.Stdout, p, int(cmd.Int("top")), cmd.Bool("cum"))
					return nil
				},
			},
			{
				Name:         "compare",
				Usage:        "per-function change from BASE to NEW, per transaction when counts are given; writes a diff profile",
				UsageText:    "abtest perf compare BASE NEW [--per-tx TXBASE,TXNEW] [--top N] [-o DIFF]",
				OnUsageError: usageError,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "per-tx", Usage: "transactions in each profile's window `TXBASE,TXNEW`"},
					&cli.IntFlag{Name: "top", Value: 20, Usage: "`N` functions"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "diff.pb.gz", Usage: "diff profile `FILE` (pprof -diff_base convention)"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfCompare(cmd, env) },
			},
			{
				Name:         "view",
				Usage:        "pprof's web UI (flame graph, top, source) on 127.0.0.1",
				UsageText:    "abtest perf view FILE [--diff-base BASE] [--http 127.0.0.1:0]",
				OnUsageError: usageError,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "diff-base", Usage: "show FILE relative to `BASE`"},
					&cli.StringFlag{Name: "http", Value: "127.0.0.1:0", Usage: "`ADDR` to serve on (loopback only)"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfView(ctx, cmd, env, nil) },
			},
		},
	}
}

// clusterPIDs returns a function listing the postmaster and its children
// for -w or -p.
func clusterPIDs(ctx context.Context, cmd *cli.Command, env *Env) (func() []int, error) {
	var dataDir string
	switch {
	case cmd.String("worktree") != "":
		cfg, err := loadConfig(cmd, env)
		if err != nil {
			return nil, err
		}
		cm := &cluster.Manager{Root: cfg.DataDir}
		st, err := cm.ReadState(cmd.String("worktree"))
		if err != nil {
			return nil, err
		}
		dataDir = st.DataDir
	case cmd.Int("port") > 0:
		host := env.Getenv("PGHOST")
		conn := fmt.Sprintf("port=%d dbname=postgres sslmode=disable connect_timeout=5", cmd.Int("port"))
		if host != "" {
			conn += " host=" + host
		}
		if u := env.Getenv("PGUSER"); u != "" {
			conn += " user=" + u
		}
		c, err := pgx.Connect(ctx, conn)
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("perf record: cannot connect to port %d: %v", cmd.Int("port"), err))
		}
		defer c.Close(ctx)
		if err := c.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dataDir); err != nil {
			return nil, exitcode.Failure(err)
		}
	default:
		return nil, exitcode.BadInputf("perf record: name the cluster: -w NAME or -p PORT")
	}
	if len(cluster.Processes(dataDir)) == 0 {
		return nil, exitcode.BadInputf("perf record: no running server in %s (its postmaster.pid must be readable here)", dataDir)
	}
	return func() []int { return cluster.Processes(dataDir) }, nil
}

func runPerfRecord(ctx context.Context, cmd *cli.Command, env *Env) error {
	pids, err := clusterPIDs(ctx, cmd, env)
	if err != nil {
		return err
	}
	out, _ := filepath.Abs(cmd.String("output"))
	raw := strings.TrimSuffix(strings.TrimSuffix(out, ".gz"), ".pb") + ".perf.data"
	run := runner(cmd, env)
	res, err := perf.Record(ctx, run, perf.Options{
		Processes: pids, Duration: time.Duration(cmd.Int("duration")) * time.Second, Hz: int(cmd.Int("freq")),
		Raw: raw, KeepRaw: cmd.Bool("keep-raw"), Log: strings.TrimSuffix(raw, ".perf.data") + ".perf.log",
	})
	if err != nil || run.DryRun {
		return err
	}
	if err := profiles.Write(res.Profile, out); err != nil {
		return exitcode.Failure(err)
	}
	graphs := "call graphs"
	if !res.CallGraphs {
		graphs = "flat only (no frame pointers: build with abtest switch -b release --profiling for call graphs)"
	}
	fmt.Fprintf(env.Stdout, "profile: %s (%d samples of %s, %s)\n", out, res.Samples, res.Event, graphs)
	if res.Unparsed > 0 {
		fmt.Fprintf(env.Stdout, "warning: %d lines of perf script could not be read\n", res.Unparsed)
	}
	return nil
}

func runPerfCompare(cmd *cli.Command, env *Env) error {
	if cmd.Args().Len() != 2 {
		return exitcode.BadInputf("perf compare: give BASE and NEW profiles")
	}
	base, err := profiles.Read(cmd.Args().Get(0))
	if err != nil {
		return err
	}
	cur, err := profiles.Read(cmd.Args().Get(1))
	if err != nil {
		return err
	}
	var txb, txn float64
	if s := cmd.String("per-tx"); s != "" {
		a, b, ok := strings.Cut(s, ",")
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if !ok || err1 != nil || err2 != nil || x <= 0 || y <= 0 {
			return exitcode.BadInputf("--per-tx %q: want TXBASE,TXNEW, two positive transaction counts", s)
		}
		txb, txn = x, y
	}
	ds := profiles.Compare(base, cur, txb, txn)
	n := int(cmd.Int("top"))
	fmt.Fprintf(env.Stdout, "%12s %12s %12s %7s  %s\n", "base", "new", "delta", "z", "function")
	for i, d := range ds {
		if i == n {
			break
		}
		fmt.Fprintf(env.Stdout, "%12.1f %12.1f %+12.1f %+7.1f  %s (%s)\n", d.Base, d.New, d.Diff, d.Z, d.Name, d.Unit)
	}
	diff, err := profiles.Diff(base, cur, txb, txn)
	if err != nil {
		return exitcode.Failure(err)
	}
	if err := profiles.Write(diff, cmd.String("output")); err != nil {
		return exitcode.Failure(err)
	}
	fmt.Fprintf(env.Stdout, "diff profile: %s (abtest perf view %s)\n", cmd.String("output"), cmd.String("output"))
	return nil
}

// runPerfView serves pprof's web UI. serve, when set, replaces the HTTP
// server (tests call the handlers and return).
func runPerfView(ctx context.Context, cmd *cli.Command, env *Env, serve func(*driver.HTTPServerArgs) error) error {
	if cmd.Args().Len() != 1 {
		return exitcode.BadInputf("perf view: give one profile FILE")
	}
	return perf.View(ctx, perf.ViewOptions{
		File: cmd.Args().First(), DiffBase: cmd.String("diff-base"), Addr: cmd.String("http"),
		Out: env.Stdout, Err: env.Stderr, Serve: serve,
	})
}
