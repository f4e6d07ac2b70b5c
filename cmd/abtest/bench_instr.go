package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/perf/profiles"
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
	ws, err := workload.ResolveList(cmd.String("workloads"))
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	run := runner(cmd, env)
	cm, err := newWorkspace(cmd, env, cfg).Clusters()
	if err != nil {
		return err
	}
	name := cmd.String("cluster")
	st, err := cm.ReadState(name)
	if err != nil {
		return exitcode.BadInputf("--cluster %s: %v (abtest switch -w %s starts one)", name, err, name)
	}
	release, err := cm.Acquire(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if stopped, err := cm.Stop(ctx, name); err != nil {
		return err
	} else if stopped {
		fmt.Fprintf(env.Stderr, "bench: stopped cluster %s to count instructions; it stays stopped (abtest switch -w %s starts it)\n", name, name)
	}
	dir, err := instrOutDir(cmd, run)
	if err != nil {
		return err
	}
	var out []*workload.InstrResult
	for _, w := range ws {
		res, err := workload.Instructions(ctx, run, benchInstrSpec(cmd, st, cm.User, w, dir))
		if err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		if res != nil {
			out = append(out, res)
		}
	}
	if run.DryRun {
		return nil
	}
	return printInstr(cmd, env, out)
}

// instrOutDir is -o, or a new directory under the system's temporary
// one that the server's account can enter (it writes its counts there).
func instrOutDir(cmd *cli.Command, run *proc.Runner) (string, error) {
	if dir := cmd.String("output"); dir != "" || run.DryRun {
		return filepath.Abs(cmd.String("output"))
	}
	dir, err := os.MkdirTemp("", "abtest-instructions-")
	if err != nil {
		return "", exitcode.Failure(err)
	}
	return dir, exitcode.Failure(os.Chmod(dir, 0o755))
}

func benchInstrSpec(cmd *cli.Command, st *cluster.State, u *proc.User, w workload.Workload, dir string) workload.InstrSpec {
	return workload.InstrSpec{
		Install: st.Install, Env: []string{"LD_LIBRARY_PATH=" + cluster.LibDir(st.Install)},
		DataDir: st.DataDir, SocketDir: st.SocketDir, Port: st.Port, RunAs: u,
		User: cluster.SuperUser, Database: cluster.Database, Workload: w,
		Protocol: cmd.String("protocol"), Transactions: int(cmd.Int("transactions")),
		OutDir: filepath.Join(dir, w.Name),
	}
}

// printInstr prints instructions per transaction, the method and the
// top functions of each workload (or JSON).
func printInstr(cmd *cli.Command, env *Env, out []*workload.InstrResult) error {
	if cmd.Bool("json") {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintln(env.Stdout, "=== Instructions per transaction ===")
	for _, res := range out {
		fmt.Fprintf(env.Stdout, "  %-15s %.1f instr/tx (%s, %d transactions, seed %d, %.1f s)\n", res.Workload, res.PerTx, res.Method, res.Transactions, res.Seed, res.WallS)
		if res.Profile == nil {
			continue
		}
		fmt.Fprintf(env.Stdout, "    profile: %s (abtest perf view); top functions, instructions per transaction:\n", res.ProfilePath)
		fs, _ := profiles.Funcs(res.Profile, false)
		for _, f := range fs[:min(10, len(fs))] {
			fmt.Fprintf(env.Stdout, "    %12.1f %6.2f%%  %s\n", float64(f.Flat)/float64(res.Transactions), f.FlatPct, f.Name)
		}
	}
	return nil
}
