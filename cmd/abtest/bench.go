package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/workload"
)

func benchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "run workloads against any running server and measure them",
		UsageText: `abtest bench [-d SECONDS] [-c CLIENTS] [-j THREADS] [-w LIST] [-M simple|extended|prepared]
             [-S SLEEP_MS] [-R RATE] [-C CPUS] [-p PORT] [-h HOST] [-U USER] [--db NAME] [-o DIR] [--json] [-n]
abtest bench --instructions --cluster NAME [-w LIST] [-M PROTO] [-t N] [-o DIR] [--json] [-n]

Connection settings not given as flags come from PGHOST, PGPORT, PGUSER and
PGDATABASE, as with psql: source a cluster's env.sh and run abtest bench.`,
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "duration", Aliases: []string{"d", "T"}, Value: int(workload.DefaultDuration.Seconds()), Usage: "`SECONDS` per workload"},
			&cli.IntFlag{Name: "transactions", Aliases: []string{"t"}, Usage: "run `N` transactions per client instead of -d"},
			&cli.IntFlag{Name: "clients", Aliases: []string{"c"}, Value: workload.DefaultClients, Usage: "pgbench `CLIENTS`"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "pgbench `THREADS`", DefaultText: "one per CPU pgbench may use, at most -c"},
			&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn,slow_churn,within_max", Usage: "comma-separated `LIST`: select1, churn, slow_churn, within_max, file:PATH; all", Action: allWorkloads},
			&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "query `PROTOCOL`: simple, extended or prepared"},
			&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` after each transaction"},
			&cli.FloatFlag{Name: "rate", Aliases: []string{"R"}, Usage: "open loop: `TPS` scheduled by pgbench (-R)"},
			&cli.StringFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "pin pgbench to `CPUS` (a count or a list such as 2-3)"},
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "server `PORT`", DefaultText: "PGPORT, else 5432"},
			&cli.StringFlag{Name: "host", Aliases: []string{"h"}, Usage: "server `HOST` or socket directory (PGHOST)"},
			&cli.StringFlag{Name: "user", Aliases: []string{"U"}, Usage: "`USER` (PGUSER)"},
			&cli.StringFlag{Name: "db", Usage: "`DATABASE` (PGDATABASE, else benchmark; created when missing)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "keep pgbench's output, scripts, samples and the server log in `DIR`"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON (live lines go to stderr)"},
			&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "pg_stat_statements sampling `INTERVAL`"},
			&cli.DurationFlag{Name: "wait-every", Value: time.Second, Usage: "wait-event sampling `INTERVAL`"},
			&cli.StringFlag{Name: "pgbench", Usage: "the pgbench `PROGRAM` to run", DefaultText: "pgbench on PATH"},
		}, benchInstrFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runBench(ctx, cmd, env)
		},
	}
}

// checkBenchFlags refuses, before anything runs, every value pgbench or
// the samplers cannot take.
func checkBenchFlags(cmd *cli.Command) error {
	most := int(matrix.MaxDuration / time.Second)
	if t := cmd.Int("transactions"); t < 0 || t > 1_000_000_000 {
		return exitcode.BadInputf("-t %d: want 1 to 1000000000 transactions per client", t)
	}
	if d := cmd.Int("duration"); cmd.Int("transactions") == 0 && (d < 1 || d > most) {
		return exitcode.BadInputf("-d %d: want 1 to %d seconds", d, most)
	}
	if p := cmd.Int("port"); cmd.IsSet("port") && (p < 1 || p > 65535) {
		return exitcode.BadInputf("-p %d: want a port number from 1 to 65535", p)
	}
	for _, f := range []string{"sample-every", "wait-every"} {
		if d := cmd.Duration(f); d <= 0 || d > time.Hour {
			return exitcode.BadInputf("--%s %s: want an interval above 0 and at most 1h", f, d)
		}
	}
	for _, f := range []string{"jobs", "sleep"} {
		if n := cmd.Int(f); n < 0 {
			return exitcode.BadInputf("--%s %d: want 0 or more", f, n)
		}
	}
	if r := cmd.Float("rate"); r < 0 || r > 1e9 {
		return exitcode.BadInputf("-R %g: want a rate from 0 to 1e9 TPS", r)
	}
	var names []string
	for _, w := range strings.Split(cmd.String("workloads"), ",") {
		if w = strings.TrimSpace(w); w != "" {
			if slices.Contains(names, w) {
				return exitcode.BadInputf("-w: workload %s given twice", w)
			}
			names = append(names, w)
		}
	}
	return nil
}

func runBench(ctx context.Context, cmd *cli.Command, env *Env) error {
	if err := checkBenchFlags(cmd); err != nil {
		return err
	}
	if cmd.Bool("instructions") {
		return runBenchInstructions(ctx, cmd, env)
	}
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
