// Package history is the analysis of the stored runs, run when they are
// read: the store keeps what a run is (plans, cells, commits,
// annotations), and history rebuilds a run's analysis input from it and
// judges it (analysis.Analyze) each time a reader (the dashboard,
// nightly's past runs) asks. Nothing of a judgement is stored, so a
// change to the statistics needs no import again.
package history

import (
	"context"
	"fmt"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/store"
)

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
	return analysis.Analyze(in, o)
}
