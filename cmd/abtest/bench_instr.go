package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/workload"
)

// benchInstrFlags are bench's flags for --instructions.
func benchInstrFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "instructions", Usage: "count instructions per transaction (one client, -t transactions, default 2000) on abtest's cluster --cluster NAME, which is stopped for it and left stopped"},
		&cli.StringFlag{Name: "cluster", Usage: "abtest cluster `NAME` (abtest switch -w NAME) for --instructions"},
		runAsFlag(),
	}
}

// checkBenchInstr refuses what an instruction count cannot honour: it
// runs one client for a fixed number of transactions, closed loop, on a
// server it starts itself (so on an abtest cluster, not any port).
func checkBenchInstr(cmd *cli.Command) error {
	switch {
	case cmd.String("cluster") == "":
		return exitcode.BadInputf("--instructions: name an abtest cluster with --cluster NAME (abtest switch -w NAME makes one): instructions are counted on a server abtest starts itself under valgrind")
	case cmd.IsSet("rate"):
		return exitcode.BadInputf("--instructions with -R: an instruction count runs a fixed number of transactions, closed loop; drop -R")
	case cmd.Int("clients") > 1 && cmd.IsSet("clients"):
		return exitcode.BadInputf("--instructions with -c %d: instructions are counted for one client; drop -c", cmd.Int("clients"))
	case cmd.Int("jobs") > 1:
		return exitcode.BadInputf("--instructions with -j %d: one client needs one thread; drop -j", cmd.Int("jobs"))
	case cmd.IsSet("sleep"):
		return exitcode.BadInputf("--instructions with -S: think time adds no instructions; drop -S")
	case cmd.IsSet("port") || cmd.IsSet("host"):
		return exitcode.BadInputf("--instructions: -p and --host name a running server; instructions are counted on --cluster NAME's data directory")
	}
	return nil
}

// runBenchInstructions counts each workload's instructions per
// transaction on cluster --cluster.
func runBenchInstructions(ctx context.Context, cmd *cli.Command, env *Env) error {
	if err := checkBenchInstr(cmd); err != nil {
		return err
	}
	if _, err := workload.ResolveList(cmd.String("workloads")); err != nil {
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
	if cmd.Bool("json") {
		return printJSON(env, out)
	}
	workload.WriteInstr(env.Stdout, out)
	return nil
}
