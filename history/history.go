// Package history is the analysis of the stored runs, run when they are
// read: the store keeps what a run is (plans, cells, commits,
// annotations), and history rebuilds a run's analysis input from it,
// judges it (analysis.Analyze) and keeps the judgement in the store as a
// cache tagged with analysis.Version. A reader (the dashboard, abtest
// history, nightly's past runs) that finds a run's cache missing or of
// another version judges the run again (Refresh), so a change to the
// statistics needs no import again.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// version is the analysis version the cache is read and written as:
// analysis.Version, replaced by tests to play a change of statistics.
var version = analysis.Version

// judgements counts the runs judged, for tests.
var judgements atomic.Int64

// Input rebuilds the analysis input of the run that ref names (see
// store.ResolveRun) from the store alone: each shard's plan as it was
// written and the cells of every shard, merged as analysis.Load merges
// the shards' directories, so the verdicts equal those of the files.
// The cells' series stay in the files (a warning says so); profiles are
// read from the shards' directories when this host can see them.
func Input(ctx context.Context, st *store.Store, ref string) (*analysis.Input, error) {
	run, err := st.ResolveRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	in, err := input(ctx, st, run)
	if err != nil {
		return nil, err
	}
	in.Warnings = append(in.Warnings, fmt.Sprintf("analysed from the store %s (run %s): the cells' samples, progress, final pg_stat_statements state and probe counters are in the results directories only", st.Where(), run))
	return in, nil
}

// input merges run's stored shards.
func input(ctx context.Context, st *store.Store, run string) (*analysis.Input, error) {
	shards, err := st.Shards(ctx, run)
	if err != nil {
		return nil, err
	}
	in := make([]analysis.Shard, len(shards))
	for i, sh := range shards {
		in[i] = analysis.Shard{Dir: sh.Dir, Plan: sh.Plan, Records: sh.Records}
	}
	return analysis.Merge(in)
}

// Judge analyses run from the store under o. A run the store cannot
// rebuild or the analysis refuses is bad input (exit 2); a store that
// fails is an infrastructure failure.
func Judge(ctx context.Context, st *store.Store, run string, o analysis.Options) (*analysis.Report, error) {
	in, err := input(ctx, st, run)
	if err != nil {
		return nil, err
	}
	judgements.Add(1)
	return analysis.Analyze(in, o)
}

// Refresh judges again every run whose cached judgement is missing or
// of another analysis version, and stores the judgements. It returns a
// warning for each run that could not be analysed (its cache then says
// failed, with why).
func Refresh(ctx context.Context, st *store.Store) ([]string, error) {
	stale, err := st.Stale(ctx, version)
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, run := range stale {
		_, w, err := refresh(ctx, st, run)
		if err != nil {
			return warnings, err
		}
		warnings = append(warnings, w...)
	}
	return warnings, nil
}

// refresh judges run under the store's options (analysis.Options{}) and
// caches the judgement; it returns how many verdict rows it stored.
func refresh(ctx context.Context, st *store.Store, run string) (int, []string, error) {
	cells, err := st.CellCount(ctx, run)
	if err != nil {
		return 0, nil, err
	}
	rep, err := Judge(ctx, st, run, analysis.Options{})
	var warnings []string
	j := &store.Judged{Version: version, Cells: cells}
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage {
			return 0, nil, err
		}
		// A run the store cannot analyse could not answer: cached as
		// failed, with why, until the statistics change.
		j.Gate, j.GateDetail = results.GateFailed, "not analysable from the store: "+text.OneLine(err.Error())
		warnings = append(warnings, fmt.Sprintf("run %s: no verdicts: %s", run, text.OneLine(err.Error())))
	} else {
		judged(rep, j)
	}
	if _, err := st.PutJudged(ctx, run, j); err != nil {
		return 0, warnings, err
	}
	return len(j.Verdicts), warnings, nil
}

// judged fills j from rep: its rows, pooled tests, answers, gate and
// variance components.
func judged(rep *analysis.Report, j *store.Judged) {
	j.Verdicts = verdicts(rep)
	for _, g := range rep.Geomeans {
		var detect *float64
		if g.DetectablePct > 0 {
			detect = analysis.Finite(g.DetectablePct)
		}
		j.Geomeans = append(j.Geomeans, store.Geomean{Commit: g.Commit, Metric: g.Metric, Ratio: analysis.Finite(g.Ratio),
			Lo: analysis.Finite(g.Lo), Hi: analysis.Finite(g.Hi), P: analysis.Finite(g.P), Verdict: g.Verdict, Configs: g.Configs,
			MinEffectPct: analysis.Finite(g.MinEffectPct), DetectablePct: detect})
	}
	j.Answers = answers(rep)
	gate := rep.Gate()
	j.Gate = analysis.GateStatus(gate)
	if gate != nil {
		j.GateDetail = text.OneLine(gate.Error())
	}
	noise := rep.Noise
	if noise == nil {
		noise = []analysis.Components{}
	}
	// Components encode a number that is not finite as null.
	data, err := json.Marshal(noise)
	if err != nil {
		data = []byte("[]")
	}
	j.Noise = string(data)
}

// verdicts are rep's rows, one per commit but the baseline, as the
// store keeps them.
func verdicts(rep *analysis.Report) []store.Verdict {
	gated := map[[3]string]bool{}
	for _, c := range rep.Changes {
		gated[[3]string{c.Commit, c.Config, c.Metric}] = c.Gated
	}
	var out []store.Verdict
	for _, row := range rep.Rows {
		var base *analysis.Stat
		for i := range row.Stats {
			if row.Stats[i].Commit == rep.Baseline {
				base = &row.Stats[i]
			}
		}
		for _, s := range row.Stats {
			if s.Commit == rep.Baseline {
				continue
			}
			v := store.Verdict{Commit: s.Commit, Config: row.Config, Metric: row.Metric, Verdict: s.Verdict, N: s.N,
				Gated: gated[[3]string{s.Commit, row.Config, row.Metric}], Note: s.Note, Role: s.Role()}
			if base != nil && base.N > 0 {
				v.BaselineMedian = analysis.Finite(base.Median)
			}
			if s.N > 0 {
				v.Median, v.Lo, v.Hi = analysis.Finite(s.Median), analysis.Finite(s.Lo), analysis.Finite(s.Hi)
			}
			if base != nil && base.N > 0 && s.N > 0 {
				v.DeltaPct, v.P = analysis.Finite(s.DeltaPct), analysis.Finite(s.P)
				v.DeltaLo, v.DeltaHi = analysis.Finite(s.DeltaLo), analysis.Finite(s.DeltaHi)
				if s.DetectablePct > 0 {
					v.DetectablePct = analysis.Finite(s.DetectablePct)
				}
			}
			out = append(out, v)
		}
	}
	return out
}

// fresh judges run when its cache is missing or of another version.
func fresh(ctx context.Context, st *store.Store, run string) error {
	v, err := st.JudgedBy(ctx, run)
	if err != nil || v == version {
		return err
	}
	_, _, err = refresh(ctx, st, run)
	return err
}
