package main

import (
	"context"
	"time"

	"github.com/google/pprof/driver"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/perf"
)

func perfCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "perf",
		Usage: "CPU profiles of a cluster: record (perf → pprof), report, compare, view",
		Commands: []*cli.Command{
			{
				Name:      "record",
				Usage:     "perf record -g on a cluster's processes, written as a pprof profile",
				UsageText: "abtest perf record [NAME | -p PORT] [-d SECONDS] [-F HZ] [-o FILE] [--keep-raw]",
				Flags: []cli.Flag{
					worktreeFlag("cluster `NAME` started by abtest, or the first argument"),
					&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "or a local server's `PORT` (PGHOST/PGUSER from the environment)"},
					&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 10, Usage: "`SECONDS` to record"},
					&cli.IntFlag{Name: "freq", Aliases: []string{"F"}, Value: perf.DefaultHz, Usage: "sampling frequency `HZ`"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "profile.pb.gz", Usage: "profile `FILE`"},
					&cli.BoolFlag{Name: "keep-raw", Usage: "keep perf.data beside the profile"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfRecord(ctx, cmd, env) },
			},
			{
				Name:      "report",
				Usage:     "top functions of a profile, flat and cumulative",
				UsageText: "abtest perf report FILE [--top N] [--cum]",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "top", Value: 20, Usage: "`N` functions"},
					&cli.BoolFlag{Name: "cum", Usage: "sort by cumulative time"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return exitcode.BadInputf("perf report: give one profile FILE")
					}
					return perf.ReportFile(env.Stdout, cmd.Args().First(), int(cmd.Int("top")), cmd.Bool("cum"))
				},
			},
			{
				Name:      "compare",
				Usage:     "per-function change from BASE to NEW, per transaction when counts are given; writes a diff profile",
				UsageText: "abtest perf compare BASE NEW [--per-tx TXBASE,TXNEW] [--top N] [-o DIFF]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "per-tx", Usage: "transactions in each profile's window `TXBASE,TXNEW`"},
					&cli.IntFlag{Name: "top", Value: 20, Usage: "`N` functions"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "diff.pb.gz", Usage: "diff profile `FILE` (pprof -diff_base convention)"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfCompare(cmd, env) },
			},
			{
				Name:      "view",
				Usage:     "pprof's web UI (flame graph, top, source) on 127.0.0.1",
				UsageText: "abtest perf view FILE [--diff-base BASE] [--http 127.0.0.1:0]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "diff-base", Usage: "show FILE relative to `BASE`"},
					&cli.StringFlag{Name: "http", Value: "127.0.0.1:0", Usage: "`ADDR` to serve on (loopback only)"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runPerfView(ctx, cmd, env, nil) },
			},
		},
	}
}

func runPerfRecord(ctx context.Context, cmd *cli.Command, env *Env) error {
	ws, err := openWorkspace(cmd, env)
	if err != nil {
		return err
	}
	name, err := worktreeName(cmd, false)
	if err != nil {
		return err
	}
	pids, err := ws.ServerProcesses(ctx, name, int(cmd.Int("port")), env.Getenv("PGHOST"), env.Getenv("PGUSER"))
	if err != nil {
		return err
	}
	res, err := perf.RecordFile(ctx, runner(cmd, env), perf.FileOptions{
		Processes: pids, Duration: time.Duration(cmd.Int("duration")) * time.Second, Hz: int(cmd.Int("freq")),
		Out: cmd.String("output"), KeepRaw: cmd.Bool("keep-raw"),
	})
	if res != nil {
		res.WriteSummary(env.Stdout)
	}
	return err
}

func runPerfCompare(cmd *cli.Command, env *Env) error {
	if cmd.Args().Len() != 2 {
		return exitcode.BadInputf("perf compare: give BASE and NEW profiles")
	}
	o := perf.CompareOptions{Base: cmd.Args().Get(0), New: cmd.Args().Get(1), Top: int(cmd.Int("top")), Output: cmd.String("output")}
	if s := cmd.String("per-tx"); s != "" {
		var err error
		if o.TxBase, o.TxNew, err = perf.ParsePerTx(s); err != nil {
			return err
		}
	}
	return perf.CompareFiles(env.Stdout, o)
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
