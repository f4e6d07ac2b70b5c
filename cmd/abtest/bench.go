package main

import (
	"context"
	"io"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

func benchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "run workloads against any running server and measure them",
		UsageText: `abtest bench [-d SECONDS] [-c CLIENTS] [-w LIST] [-p PORT] [--host HOST] [options]
abtest bench --instructions --cluster NAME [-w LIST] [-M PROTO] [-t N] [-o DIR] [--json] [-n]`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "duration", Aliases: []string{"d", "T"}, Value: int(workload.DefaultDuration.Seconds()), Usage: "`SECONDS` per workload"},
			&cli.IntFlag{Name: "transactions", Aliases: []string{"t"}, Usage: "run `N` transactions per client instead of -d"},
			&cli.IntFlag{Name: "warmup", Value: int(workload.BenchWarmup.Seconds()), Usage: "unmeasured `SECONDS` before each workload; a closed loop's sizes its latency log (0: none)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "pgbench `THREADS`", DefaultText: "one per CPU pgbench may use, at most -c"},
			&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn,slow_churn,within_max", Usage: "comma-separated `LIST`: select1, churn, slow_churn, within_max, file:PATH; all", Action: allWorkloads},
			&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "query `PROTOCOL`: simple, extended or prepared"},
			&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` after each transaction"},
			&cli.StringFlag{Name: "pgbench-cpus", Usage: "pin pgbench to `CPUS` (a count or a list such as 2-3)"},
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "server `PORT`", DefaultText: "PGPORT, else 5432"},
			&cli.StringFlag{Name: "host", Usage: "server `HOST` or socket directory (PGHOST)"},
			&cli.StringFlag{Name: "user", Aliases: []string{"U"}, Usage: "`USER` (PGUSER)"},
			&cli.StringFlag{Name: "db", Usage: "`DATABASE` (PGDATABASE, else benchmark; created when missing)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "keep pgbench's output, scripts, samples and the server log in `DIR`"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON (live lines go to stderr)"},
			&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "pg_stat_statements sampling `INTERVAL`"},
			&cli.DurationFlag{Name: "wait-every", Value: time.Second, Usage: "wait-event sampling `INTERVAL`"},
			&cli.FloatFlag{Name: "expected-tps", Usage: "the `TPS` expected (a warm-up's), which sizes the latency log's sampling rate", DefaultText: "unknown: an upper bound"},
			&cli.StringFlag{Name: "pgbench", Usage: "the pgbench `PROGRAM` to run", DefaultText: "pgbench on PATH"},
			// --instructions' own flags
			&cli.BoolFlag{Name: "instructions", Usage: "count instructions per transaction (one client, -t transactions, default 2000) on abtest's cluster --cluster NAME, which is stopped for it and left stopped"},
			&cli.StringFlag{Name: "cluster", Usage: "abtest cluster `NAME` (abtest switch NAME) for --instructions"},
			runAsFlag(),
		}, axisFlags("cpus")...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runBench(ctx, cmd, env)
		},
	}
}

// benchRequest turns bench's flags into a workload.Bench: of the axis
// flags, those of what bench runs (-c, -R, --var), one value each.
func benchRequest(cmd *cli.Command, env *Env) (workload.Bench, error) {
	b := workload.Bench{
		Conn:    workload.Conn{Host: cmd.String("host"), Port: int(cmd.Int("port")), User: cmd.String("user"), Database: cmd.String("db")},
		Seconds: int(cmd.Int("duration")), Transactions: int(cmd.Int("transactions")), WarmupS: int(cmd.Int("warmup")), Threads: int(cmd.Int("jobs")), Protocol: cmd.String("protocol"), SleepMS: int(cmd.Int("sleep")),
		ExpectedTPS: cmd.Float("expected-tps"), SampleEvery: cmd.Duration("sample-every"), WaitEvery: cmd.Duration("wait-every"),
		Pgbench: cmd.String("pgbench"), Workloads: env.Getwd.Items(cmd.String("workloads")), OutDir: env.Getwd.Path(cmd.String("output")),
	}
	if p := cmd.Int("port"); cmd.IsSet("port") && (p < 1 || p > 65535) {
		return b, exitcode.BadInputf("-p %d: want a port number from 1 to 65535", p)
	}
	e, err := results.OneEffects(axisValues(cmd, env), "bench takes one -c, -R and --var of the axes (on a server as it is)", "clients", "rate", "vars")
	if b.Clients, b.Rate, b.Vars = e.Clients, e.Rate, e.Vars; err == nil && e.RateUnit == results.PerOp {
		err = exitcode.BadInputf("-R …ops: bench offers transactions a second; rates in a workload's operations are abtest matrix's")
	}
	if err == nil {
		err = b.Check()
	}
	if spec := cmd.String("pgbench-cpus"); err == nil && spec != "" && !cmd.Bool("instructions") {
		b.CPUs, err = cluster.PickCPUs(spec)
	}
	return b, err
}

func runBench(ctx context.Context, cmd *cli.Command, env *Env) error {
	b, err := benchRequest(cmd, env)
	if err != nil {
		return err
	}
	if cmd.Bool("instructions") {
		return runBenchInstructions(ctx, cmd, env, &b)
	}
	specs, err := b.Specs()
	if err != nil {
		return err
	}
	var live io.Writer = env.Stdout
	if cmd.Bool("json") {
		live = env.Stderr
	}
	r := &workload.Runner{Proc: runner(cmd, env), Out: live, Getenv: env.Getenv}
	results, err := r.Bench(ctx, specs, time.Duration(b.WarmupS)*time.Second)
	if err != nil || r.Proc.DryRun {
		return err
	}
	return printResult(env, cmd, results, func(w io.Writer) { workload.WriteTPSSummary(w, results) })
}

// instrTransactionsFlag is N of each instruction cell (matrix, bisect).
func instrTransactionsFlag() cli.Flag {
	return &cli.IntFlag{Name: "instr-transactions", Value: workload.DefaultInstrTransactions, Usage: "transactions `N` of an instruction cell (counted at N and 2N, the difference kept)"}
}

// runBenchInstructions counts each workload's instructions per
// transaction on cluster --cluster.
func runBenchInstructions(ctx context.Context, cmd *cli.Command, env *Env, b *workload.Bench) error {
	if err := b.CheckInstructions(cmd.String("cluster"), cmd.IsSet); err != nil {
		return err
	}
	ws, err := openWorkspace(cmd, env)
	if err != nil {
		return err
	}
	cm, err := ws.Clusters()
	if err != nil {
		return err
	}
	out, err := workload.CountInstructions(ctx, ws.Run, cm, workload.InstrBench{
		Cluster: cmd.String("cluster"), Workloads: cmd.String("workloads"), Protocol: cmd.String("protocol"),
		Transactions: int(cmd.Int("transactions")), OutDir: cmd.String("output"),
	}, env.Stderr)
	if err != nil || ws.Run.DryRun {
		return err
	}
	return printResult(env, cmd, out, func(w io.Writer) { workload.WriteInstr(w, out) })
}
