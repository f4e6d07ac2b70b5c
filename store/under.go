package store

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// GatedRun is a stored run whose results directory lies under a
// directory (RunsUnder), with its commits and its gate.
type GatedRun struct {
	Run     string    `json:"run"`
	Created time.Time `json:"created"`
	Dir     string    `json:"dir"`
	// Baseline is the label of the run's baseline; Commits its commits.
	Baseline string   `json:"baseline"`
	Commits  []Commit `json:"commits"`
	// Status is analysis.GateStatus of the run's report as the store
	// analyses it (the caller's gate options): regression, failed (cells
	// missing: the run could not answer), unanswered (every cell there,
	// but the primary's answer unknown) or ok, by the one rule of
	// analysis.Report.Gate. Failed says why a failed run could not
	// answer.
	Status results.GateStatus `json:"status"`
	Failed string             `json:"failed,omitempty"`
	// Regressions are the run's gated comparisons for the worse
	// (analysis.Report.Regressions), every commit's.
	Regressions []analysis.Change `json:"regressions,omitempty"`
}

// RunsUnder returns the runs whose results directories lie under dir,
// oldest first, each with its status: its report's gate (Report.Gate)
// under o.
func (s *Store) RunsUnder(ctx context.Context, dir string, o analysis.Options) ([]GatedRun, error) {
	ri, runs, err := s.runsUnder(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]GatedRun, 0, len(runs))
	for _, r := range runs {
		gr := GatedRun{Run: r, Created: ri.created[r], Dir: ri.dir[r], Baseline: ri.baseline[r], Commits: ri.commits[r]}
		if err := s.judge(ctx, &gr, o); err != nil {
			return nil, err
		}
		out = append(out, gr)
	}
	return out, nil
}

// SeriesUnder returns, for each metric, its series in every
// configuration of the runs under dir (those RunsUnder returns), with
// change points and annotations as History has them; configurations
// without a value of the metric are left out.
func (s *Store) SeriesUnder(ctx context.Context, dir string, metrics []string) ([]*Series, error) {
	ri, _, err := s.runsUnder(ctx, dir)
	if err != nil {
		return nil, err
	}
	keys, err := s.SeriesKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Series
	for _, k := range keys {
		if !slices.Contains(metrics, k.Metric) {
			continue
		}
		ser, err := s.history(ctx, HistoryQuery{Metric: k.Metric, Config: k.Config}, k.Config, &ri.runIndex)
		if err != nil {
			return nil, err
		}
		if len(ser.Points) > 0 {
			out = append(out, ser)
		}
	}
	return out, nil
}

// dirIndex is the run index cut down to the runs under one directory.
type dirIndex struct {
	runIndex
	dir map[string]string
}

// runsUnder returns the index of the runs with a shard under dir, and
// those runs oldest first.
func (s *Store) runsUnder(ctx context.Context, dir string) (*dirIndex, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	prefix := filepath.Clean(abs) + string(filepath.Separator)
	rows, err := s.db.QueryContext(ctx, "SELECT run_id, dir FROM run_shards ORDER BY run_id, shard")
	if err != nil {
		return nil, nil, s.fail("reading runs under "+dir, err)
	}
	under := map[string]string{}
	for rows.Next() {
		var run, d string
		if err := rows.Scan(&run, &d); err != nil {
			rows.Close()
			return nil, nil, s.fail("reading runs under "+dir, err)
		}
		if _, ok := under[run]; !ok && strings.HasPrefix(filepath.Clean(d), prefix) {
			under[run] = d
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, s.fail("reading runs under "+dir, err)
	}
	ri, err := s.runIndex(ctx)
	if err != nil {
		return nil, nil, err
	}
	var runs []string
	for id := range ri.created {
		if _, ok := under[id]; !ok {
			delete(ri.created, id)
			continue
		}
		runs = append(runs, id)
	}
	slices.SortFunc(runs, func(a, b string) int {
		if c := ri.created[a].Compare(ri.created[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return &dirIndex{runIndex: *ri, dir: under}, runs, nil
}

// judge gives gr the status Report.Gate gives its run, analysed from
// the store as its verdicts were: a run that cannot be analysed from
// the store could not answer either.
func (s *Store) judge(ctx context.Context, gr *GatedRun, o analysis.Options) error {
	in, err := s.input(ctx, s.db, gr.Run)
	var rep *analysis.Report
	if err == nil {
		rep, err = analysis.Analyze(in, o)
	}
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage {
			return err
		}
		gr.Status, gr.Failed = results.GateFailed, "not analysable from the store: "+text.OneLine(err.Error())
		return nil
	}
	gate := rep.Gate()
	gr.Status = analysis.GateStatus(gate)
	switch gr.Status {
	case results.GateFailed:
		gr.Failed = text.OneLine(gate.Error())
	case results.GateRegression:
		gr.Regressions = rep.Regressions
	}
	return nil
}
