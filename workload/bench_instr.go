package workload

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/perf/profiles"
)

// InstrBench is `abtest bench --instructions`: the instructions per
// transaction of each workload, counted on an abtest cluster's data
// directory by servers Instructions starts itself.
type InstrBench struct {
	// Cluster names the abtest cluster (abtest switch NAME).
	Cluster string
	// Workloads is a comma-separated list (ResolveList).
	Workloads    string
	Protocol     string
	Transactions int
	// OutDir keeps each workload's counts and profile in OutDir/NAME;
	// empty makes a temporary directory the server's account can enter.
	OutDir string
}

// CountInstructions runs b on cm's cluster b.Cluster, the user's
// explicit choice, in a quiet period (cluster.Manager.Quiesce): held so
// that no other abtest starts it meanwhile, started with its own
// recorded options (brought up to date: a rebuilt install restarts it)
// and stopped; it is left stopped, said on notice when it ran before.
// Nothing is returned in a dry run.
func CountInstructions(ctx context.Context, run *proc.Runner, cm *cluster.Manager, b InstrBench, notice io.Writer) ([]*InstrResult, error) {
	ws, err := ResolveList(b.Workloads)
	if err != nil {
		return nil, err
	}
	prev, err := cm.ReadState(b.Cluster)
	if err != nil {
		return nil, exitcode.BadInputf("--cluster %s: %v (abtest switch %s starts one)", b.Cluster, err, b.Cluster)
	}
	dir, err := instrOutDir(b.OutDir, run.DryRun)
	if err != nil {
		return nil, err
	}
	var out []*InstrResult
	stopped, err := cm.Quiesce(ctx, b.Cluster, cluster.OptionsOf(prev), func(st *cluster.State) error {
		for _, w := range ws {
			s := ClusterInstrSpec(st, cm.User, w)
			s.Protocol, s.Transactions, s.OutDir = b.Protocol, b.Transactions, filepath.Join(dir, w.Name)
			res, err := Instructions(ctx, run, s)
			if err != nil {
				return fmt.Errorf("%s: %w", w.Name, err)
			}
			if res != nil {
				out = append(out, res)
			}
		}
		return nil
	})
	if stopped {
		fmt.Fprintf(notice, "bench: stopped cluster %s to count instructions; it stays stopped (abtest switch %s starts it)\n", b.Cluster, b.Cluster)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClusterInstrSpec is the measurement of w on the (stopped) cluster st,
// its server run as u: install, library path, directories, port, role
// and database are the cluster's.
func ClusterInstrSpec(st *cluster.State, u *proc.User, w Workload) InstrSpec {
	return InstrSpec{
		Install: st.Install, Env: []string{"LD_LIBRARY_PATH=" + build.LibDir(st.Install)},
		DataDir: st.DataDir, SocketDir: st.SocketDir, Port: st.Port, RunAs: u,
		User: cluster.SuperUser, Database: cluster.Database, Workload: w,
	}
}

// instrOutDir is dir, or a new directory under the system's temporary
// one that the server's account can enter (it writes its counts there).
func instrOutDir(dir string, dryRun bool) (string, error) {
	if dir != "" || dryRun {
		return filepath.Abs(dir)
	}
	dir, err := safefile.MkdirTemp(os.TempDir(), "abtest-instructions-")
	if err != nil {
		return "", exitcode.Failure(err)
	}
	return dir, exitcode.Failure(os.Chmod(dir, 0o755))
}

// WriteInstr prints instructions per transaction, the method and the
// top functions of each result.
func WriteInstr(w io.Writer, out []*InstrResult) {
	fmt.Fprintln(w, "=== Instructions per transaction ===")
	for _, res := range out {
		fmt.Fprintf(w, "  %-15s %.1f instr/tx (%s, %d transactions, seed %d, %.1f s)\n", res.Workload, res.PerTx, res.Method, res.Transactions, res.Seed, res.WallS)
		if res.Profile == nil {
			continue
		}
		fmt.Fprintf(w, "    profile: %s (abtest perf view); top functions, instructions per transaction:\n", res.ProfilePath)
		fs, _ := profiles.Funcs(res.Profile, false)
		for _, f := range fs[:min(10, len(fs))] {
			fmt.Fprintf(w, "    %12.1f %6.2f%%  %s\n", float64(f.Flat)/float64(res.Transactions), f.FlatPct, f.Name)
		}
	}
}

// CheckInstructions refuses the settings of b that an instruction count
// on cluster cannot honour: it runs one client for a fixed number of
// transactions, closed loop, on a server it starts itself (so on an
// abtest cluster, not any port). given reports whether a setting was
// given by its flag's long name (rate, clients, sleep, port, host).
func (b *Bench) CheckInstructions(cluster string, given func(flag string) bool) error {
	switch {
	case cluster == "":
		return exitcode.BadInputf("--instructions: name an abtest cluster with --cluster NAME (abtest switch NAME makes one): instructions are counted on a server abtest starts itself under valgrind")
	case given("rate"):
		return exitcode.BadInputf("--instructions with -R: an instruction count runs a fixed number of transactions, closed loop; drop -R")
	case b.Clients > 1 && given("clients"):
		return exitcode.BadInputf("--instructions with -c %d: instructions are counted for one client; drop -c", b.Clients)
	case b.Threads > 1:
		return exitcode.BadInputf("--instructions with -j %d: one client needs one thread; drop -j", b.Threads)
	case len(b.Vars) > 0:
		return exitcode.BadInputf("--instructions with --var: an instruction count runs the workload as it is; drop --var")
	case given("sleep"):
		return exitcode.BadInputf("--instructions with -S: think time adds no instructions; drop -S")
	case given("port") || given("host"):
		return exitcode.BadInputf("--instructions: -p and --host name a running server; instructions are counted on --cluster NAME's data directory")
	}
	return nil
}

// ExpandAll replaces "all" in a -w list by every built-in workload (the
// bash harness's -w all).
func ExpandAll(list string) string {
	var out []string
	for _, item := range strings.Split(list, ",") {
		if strings.TrimSpace(item) == "all" {
			out = append(out, Names...)
		} else {
			out = append(out, item)
		}
	}
	return strings.Join(out, ",")
}
