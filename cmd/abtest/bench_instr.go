package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v3"

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
