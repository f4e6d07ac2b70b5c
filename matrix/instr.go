package matrix

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// Instruction cells (matrix --instructions) count instructions per
// transaction instead of timing a run (see workload.Instructions). The
// cell starts the commit's cluster with the cell's settings (which
// writes them into postgresql.conf, and makes the data directory on a
// first run), stops it, measures on the stopped data directory (the
// measurement starts its own server twice, under valgrind or perf stat)
// and leaves the cluster stopped: the next timed cell's Start restarts
// it. The cluster is held (cluster.Manager.Acquire) across the stop and
// the measurement, so no other abtest starts it meanwhile.
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
	serverLog := filepath.Join(cm.Root, commit.Build, "server.log")
	install := r.installs[commit.Build]
	opts, _, err := r.clusterOptions(cell, install)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	if dir, err := cm.DataDir(commit.Build); err == nil {
		if _, running := cluster.PID(dir); !running {
			r.started[commit.Build] = true // stopped at the end should a step below fail
		}
	}
	st, err := cm.Start(ctx, commit.Build, opts)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	release, err := cm.Acquire(ctx, commit.Build)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	defer release()
	if _, err := cm.Stop(ctx, commit.Build); err != nil {
		return failed(rec, fmt.Errorf("stopping %s before counting instructions: %w", commit.Build, err), serverLog)
	}
	w, err := workload.Resolve(cell.Workload)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	// st.Install is install: the Start above was given it.
	spec := workload.ClusterInstrSpec(st, cm.User, w)
	spec.Protocol, spec.Method, spec.OutDir = r.plan.Options.Protocol, r.instr.method, results.CellDir(r.dir, cell.ID)
	res, err := workload.Instructions(ctx, r.deps.Proc, spec)
	if err != nil {
		return failed(rec, fmt.Errorf("counting instructions: %w", err), serverLog)
	}
	if res == nil { // dry run
		return rec
	}
	rec.Status = results.StatusOK
	rec.Metrics = res.Metrics()
	rec.Instr = &results.InstrInfo{Method: string(res.Method), Transactions: res.Transactions, Seed: res.Seed}
	if res.ProfilePath != "" {
		if rel, err := filepath.Rel(r.dir, res.ProfilePath); err == nil {
			rec.Instr.Profile = rel
		}
	}
	return rec
}

// instrResult is the result of an instruction cell, for its progress
// line.
func instrResult(rec *results.Record) string {
	return fmt.Sprintf("instructions/tx=%.1f (%s, %d tx)", rec.Metrics[results.MetricInstructionsPerTx], rec.Instr.Method, rec.Instr.Transactions)
}
