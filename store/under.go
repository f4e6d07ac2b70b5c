package store

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RunUnder is a stored run whose results directory lies under a
// directory (RunsUnder), with its commits.
type RunUnder struct {
	Run     string
	Created time.Time
	Dir     string
	// Baseline is the label of the run's baseline; Commits its commits.
	Baseline string
	Commits  []Commit
}

// RunsUnder returns the runs whose results directories lie under dir,
// oldest first (history.RunsUnder judges them).
func (s *Store) RunsUnder(ctx context.Context, dir string) ([]RunUnder, error) {
	ri, runs, err := s.runsUnder(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]RunUnder, 0, len(runs))
	for _, r := range runs {
		out = append(out, RunUnder{Run: r, Created: ri.created[r], Dir: ri.dir[r], Baseline: ri.baseline[r], Commits: ri.commits[r]})
	}
	return out, nil
}

// SeriesUnder returns, for each metric, its series in every
// configuration of the runs under dir (those RunsUnder returns), with
// annotations as History has them (history.SeriesUnder adds the change
// points); configurations without a value of the metric are left out.
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
