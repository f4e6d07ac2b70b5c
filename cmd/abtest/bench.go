package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/workload"
)

func benchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "run workloads against any running server and measure them",
		UsageText: `abtest bench [-d SECONDS] [-c CLIENTS] [-j THREADS] [-w LIST] [-M simple|extended|prepared]
             [-S SLEEP_MS] [-R RATE] [-C CPUS] [-p PORT] [-h HOST] [-U USER] [--db NAME] [-o DIR] [--json] [-n]

Connection settings not given as flags come from PGHOST, PGPORT, PGUSER and
PGDATABASE, as with psql: source a cluster's env.sh and run abtest bench.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: int(workload.DefaultDuration.Seconds()), Usage: "`SECONDS` per workload"},
			&cli.IntFlag{Name: "transactions", Aliases: []string{"t"}, Usage: "run `N` transactions per client instead of -d"},
			&cli.IntFlag{Name: "clients", Aliases: []string{"c"}, Value: workload.DefaultClients, Usage: "pgbench `CLIENTS`"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "pgbench `THREADS` (default: one per CPU pgbench may use, at most -c)"},
			&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn,slow_churn,within_max", Usage: "comma-separated `LIST`: select1, churn, slow_churn, within_max, file:PATH"},
			&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "query `PROTOCOL`: simple, extended or prepared"},
			&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` after each transaction"},
			&cli.FloatFlag{Name: "rate", Aliases: []string{"R"}, Usage: "open loop: `TPS` scheduled by pgbench (-R)"},
			&cli.StringFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "pin pgbench to `CPUS` (a count or a list such as 2-3)"},
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "server `PORT` (PGPORT, else 5432)"},
			&cli.StringFlag{Name: "host", Usage: "server `HOST` or socket directory (PGHOST)"},
			&cli.StringFlag{Name: "user", Aliases: []string{"U"}, Usage: "`USER` (PGUSER)"},
			&cli.StringFlag{Name: "db", Usage: "`DATABASE` (PGDATABASE, else benchmark; created when missing)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "keep pgbench's output, scripts, samples and the server log in `DIR`"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON (live lines go to stderr)"},
			&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "pg_stat_statements sampling `INTERVAL`"},
			&cli.DurationFlag{Name: "wait-every", Value: time.Second, Usage: "wait-event sampling `INTERVAL`"},
			&cli.StringFlag{Name: "pgbench", Usage: "the pgbench `PROGRAM` to run (default: pgbench on PATH)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runBench(ctx, cmd, env)
		},
	}
}

func runBench(ctx context.Context, cmd *cli.Command, env *Env) error {
	ws, err := workload.ResolveList(cmd.String("workloads"))
	if err != nil {
		return err
	}
	base := workload.Spec{
		Conn: workload.Conn{
			Host: cmd.String("host"), Port: int(cmd.Int("port")), User: cmd.String("user"), Database: cmd.String("db"),
		},
		Duration:     time.Duration(cmd.Int("duration")) * time.Second,
		Transactions: int(cmd.Int("transactions")),
		Clients:      int(cmd.Int("clients")),
		Threads:      int(cmd.Int("jobs")),
		Protocol:     cmd.String("protocol"),
		SleepMS:      int(cmd.Int("sleep")),
		Rate:         cmd.Float("rate"),
		SampleEvery:  cmd.Duration("sample-every"),
		WaitEvery:    cmd.Duration("wait-every"),
		Pgbench:      cmd.String("pgbench"),
	}
	if base.Transactions > 0 {
		base.Duration = 0
	}
	if base.Clients < 1 {
		return exitcode.BadInputf("-c %d: want at least 1 client", base.Clients)
	}
	if spec := cmd.String("cpus"); spec != "" {
		online, err := cluster.OnlineCPUs()
		if err != nil {
			return exitcode.Failure(err)
		}
		if base.CPUs, err = cluster.ParseCPUs(spec, online); err != nil {
			return err
		}
	}
	specs := make([]workload.Spec, len(ws))
	for i, w := range ws {
		specs[i] = base
		specs[i].Workload = w
		if dir := cmd.String("output"); dir != "" {
			specs[i].OutDir = filepath.Join(dir, w.Name)
			specs[i].KeepTxLog = true
		}
		if err := specs[i].Check(); err != nil {
			return err
		}
	}
	var live io.Writer = env.Stdout
	if cmd.Bool("json") {
		live = env.Stderr
	}
	r := &workload.Runner{Proc: runner(cmd, env), Out: live, Getenv: env.Getenv}
	if !r.Proc.DryRun {
		fmt.Fprintf(live, "=== abtest bench ===\nDuration: %s, Clients: %d, Protocol: %s\n", durationText(base), base.Clients, specs[0].Protocol)
	}
	var results []*workload.Result
	for _, s := range specs {
		res, err := r.Run(ctx, s)
		if err != nil {
			return err
		}
		if res != nil {
			results = append(results, res)
		}
	}
	if r.Proc.DryRun {
		return nil
	}
	if cmd.Bool("json") {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	fmt.Fprintln(env.Stdout, "\n=== TPS Summary ===")
	for _, res := range results {
		mark := ""
		if res.Saturated {
			mark = "  (saturated)"
		}
		fmt.Fprintf(env.Stdout, "  %-15s %.0f%s\n", res.Workload, res.Metrics["tps"], mark)
	}
	return nil
}

func durationText(s workload.Spec) string {
	if s.Transactions > 0 {
		return fmt.Sprintf("%d transactions per client", s.Transactions)
	}
	return fmt.Sprintf("%.0fs", s.Duration.Seconds())
}
