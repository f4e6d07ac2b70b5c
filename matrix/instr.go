package matrix

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// Instruction cells (matrix --instructions) count instructions per
// transaction instead of timing a run (see workload.Instructions). A
// cell runs on the matrix's own cluster of its build (ClusterName, as
// timed cells do; never the user's cluster of the same name) in a quiet
// period (cluster.Manager.Quiesce): held first, started with the cell's
// settings (which writes them into postgresql.conf, and makes the data
// directory on a first run), stopped; the measurement then starts its
// own server twice on the stopped data directory, under valgrind or
// perf stat. The cluster is left stopped: the next timed cell's Start
// restarts it, and the run's end stops it like any cluster the run
// started (markStarted, leaveClusters). The cluster's log of the quiet
// period is kept in the cell's directory, as a timed cell's is.
//
// The method is chosen once per run, so that every cell of a run is
// counted the same way; on a host with neither a PMU nor valgrind the
// instruction cells are skipped, with one line, and stay missing from
// cells.jsonl (the analysis reports them as incomplete).

// instrState is the run's instruction method, decided at its first
// instruction cell.
type instrState struct {
	decided bool
	method  workload.InstrMethod
	// skip says why instruction cells are skipped ("" when they run).
	skip string
}

// decideInstr picks the run's method once, printing one line when there
// is none.
func (r *run) decideInstr(ctx context.Context) {
	s := &r.instr
	if s.decided {
		return
	}
	s.decided = true
	m, err := workload.DetectInstrMethod(ctx, r.deps.Proc)
	if err != nil {
		s.skip = err.Error()
		r.deps.warnf("--instructions: %v; instruction cells are skipped", err)
		return
	}
	s.method = m
}

// instrCell measures instruction cell into rec; it returns nil when the
// host cannot count instructions (the cell is skipped, not recorded).
func (r *run) instrCell(ctx context.Context, cell results.Cell, rec *results.Record) *results.Record {
	r.decideInstr(ctx)
	if r.instr.skip != "" {
		return nil
	}
	rec.Instructions = true
	rec.DurationS = 0
	commit, _ := r.plan.Commit(cell.Commit)
	cm := r.deps.Clusters
	name := ClusterName(commit.Build)
	serverLog := cm.LogFile(name)
	opts, _, err := r.clusterOptions(cell, r.installs[commit.Build])
	if err != nil {
		return failed(rec, err, serverLog)
	}
	w, err := workload.Resolve(cell.Workload)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	// Recorded before the quiet period starts it: stopped at the end
	// should a step below fail with the server up.
	if err := r.markStarted(name); err != nil {
		return failed(rec, err, serverLog)
	}
	var res *workload.InstrResult
	_, err = cm.Quiesce(ctx, name, opts, func(st *cluster.State) error {
		// st.Install is the cell's install: the Start was given it.
		spec := workload.ClusterInstrSpec(st, cm.User, w)
		spec.Protocol, spec.Method, spec.OutDir = r.plan.Options.Protocol, r.instr.method, results.CellDir(r.dir, cell.ID)
		spec.Transactions = r.plan.Options.InstrTransactions
		var err error
		if res, err = workload.Instructions(ctx, r.deps.Proc, spec); err != nil {
			return fmt.Errorf("counting instructions: %w", err)
		}
		return nil
	})
	r.keepServerLog(rec, serverLog, cell)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	if res == nil { // dry run
		return rec
	}
	rec.Status = results.StatusOK
	rec.Metrics = results.ValuesOf(res.Metrics())
	rec.Instr = &results.InstrInfo{Method: string(res.Method), Transactions: res.Transactions, Seed: res.Seed}
	if res.ProfilePath != "" {
		if rel, err := filepath.Rel(r.dir, res.ProfilePath); err == nil {
			rec.Instr.Profile = rel
		}
	}
	return rec
}

// keepServerLog copies what the cluster logged during the cell into the
// cell's directory, as a timed cell keeps its server log (artifact
// server_log).
func (r *run) keepServerLog(rec *results.Record, serverLog string, cell results.Cell) {
	if r.deps.Proc.DryRun {
		return
	}
	dir := results.CellDir(r.dir, cell.ID)
	if err := safefile.MkdirAll(dir, 0o755); err != nil {
		return
	}
	dst := filepath.Join(dir, "server.log")
	if !cluster.CopyLogSince(serverLog, dst, rec.StartedAt) {
		return
	}
	if rel, err := filepath.Rel(r.dir, dst); err == nil {
		if rec.Artifacts == nil {
			rec.Artifacts = map[string]string{}
		}
		rec.Artifacts["server_log"] = rel
	}
}

// instrResult is the result of an instruction cell, for its progress
// line.
func instrResult(rec *results.Record) string {
	return fmt.Sprintf("instructions/tx=%.1f (%s, %d tx)", rec.Metrics.Value(results.MetricInstructionsPerTx), rec.Instr.Method, rec.Instr.Transactions)
}
