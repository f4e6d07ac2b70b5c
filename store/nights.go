package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"
)

// Exists says whether Open would find a store at location rather than
// create one: a PostgreSQL URL is taken to exist (Open creates only the
// tables there); a SQLite file must.
func Exists(location string) bool {
	if location == "" {
		return false
	}
	if strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://") {
		return true
	}
	_, err := os.Stat(strings.TrimPrefix(location, "sqlite:"))
	return err == nil
}

// Night is one night of a nightly job as the store has it: a run whose
// results directory lies under the job's runs directory.
type Night struct {
	Run     string    `json:"run"`
	Created time.Time `json:"created"`
	Dir     string    `json:"dir"`
	// Head is the sha of the night's head; Base that of its baseline, ""
	// on a night that ran its head alone.
	Head string `json:"head"`
	Base string `json:"base,omitempty"`
	// Failed says why the night could not answer ("" when it could), by
	// the rule of analysis.Report.Gate: a cell that failed or saturated
	// (the commit's repeats are incomplete), or a head comparison left
	// incomplete in a metric its plan does not declare report-only. So
	// it is never a baseline.
	Failed string `json:"failed,omitempty"`
	// Regressions are the head's gated comparisons for the worse, as the
	// store's analysis (default options) judged them: "config metric
	// -x%".
	Regressions []string `json:"regressions,omitempty"`
}

// Nights returns the runs whose results directories lie under dir (a
// nightly job's root/runs), oldest first; head is the label of the
// commit a night tracks (nightly's "head").
func (s *Store) Nights(ctx context.Context, dir, head string) ([]Night, error) {
	ri, runs, err := s.nightRuns(ctx, dir)
	if err != nil {
		return nil, err
	}
	bad, err := s.unusableCells(ctx)
	if err != nil {
		return nil, err
	}
	var out []Night
	for _, r := range runs {
		nt := Night{Run: r, Created: ri.created[r], Dir: ri.dir[r], Failed: bad[r]}
		for _, c := range ri.commits[r] {
			switch {
			case c.Label == head:
				nt.Head = c.SHA
			case c.Label == ri.baseline[r]:
				nt.Base = c.SHA
			}
		}
		if nt.Head == "" {
			continue
		}
		if err := s.judgeNight(ctx, &nt, head); err != nil {
			return nil, err
		}
		out = append(out, nt)
	}
	return out, nil
}

// NightSeries returns, for each metric, its series in every
// configuration of the nights under dir (those Nights returns), with
// change points and annotations as History has them; configurations
// without a value of the metric are left out.
func (s *Store) NightSeries(ctx context.Context, dir string, metrics []string) ([]*Series, error) {
	ri, _, err := s.nightRuns(ctx, dir)
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

// nightIndex is the run index cut down to the runs under one directory.
type nightIndex struct {
	runIndex
	dir map[string]string
}

// nightRuns returns the index of the runs with a shard under dir, and
// those runs oldest first.
func (s *Store) nightRuns(ctx context.Context, dir string) (*nightIndex, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	prefix := filepath.Clean(abs) + string(filepath.Separator)
	rows, err := s.db.QueryContext(ctx, "SELECT run_id, dir FROM run_shards ORDER BY run_id, shard")
	if err != nil {
		return nil, nil, s.fail("reading nights", err)
	}
	under := map[string]string{}
	for rows.Next() {
		var run, d string
		if err := rows.Scan(&run, &d); err != nil {
			rows.Close()
			return nil, nil, s.fail("reading nights", err)
		}
		if _, ok := under[run]; !ok && strings.HasPrefix(filepath.Clean(d), prefix) {
			under[run] = d
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, s.fail("reading nights", err)
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
	return &nightIndex{runIndex: *ri, dir: under}, runs, nil
}

// unusableCells says, by run, why a run's repeats are incomplete: its
// failed and saturated cells.
func (s *Store) unusableCells(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, sum(CASE WHEN status = 'ok' THEN 0 ELSE 1 END), sum(saturated) FROM cells
		GROUP BY run_id HAVING sum(CASE WHEN status = 'ok' AND saturated = 0 THEN 0 ELSE 1 END) > 0`)
	if err != nil {
		return nil, s.fail("reading nights", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var run string
		var failed, saturated int
		if err := rows.Scan(&run, &failed, &saturated); err != nil {
			return nil, s.fail("reading nights", err)
		}
		out[run] = fmt.Sprintf("%d cells failed, %d saturated", failed, saturated)
	}
	return out, s.fail("reading nights", rows.Err())
}

// judgeNight adds to nt what its head's stored verdicts say: an
// incomplete comparison in a metric that is not report-only fails it, a
// gated one for the worse is a regression.
func (s *Store) judgeNight(ctx context.Context, nt *Night, head string) error {
	var defs string
	if err := s.db.QueryRowContext(ctx, s.q("SELECT metric_defs FROM runs WHERE id = ?"), nt.Run).Scan(&defs); err != nil {
		return s.fail("reading night "+nt.Run, err)
	}
	var metrics results.Metrics
	if err := json.Unmarshal([]byte(defs), &metrics); defs != "" && err != nil {
		return fmt.Errorf("night %s: metric definitions: %w", nt.Run, err)
	}
	vs, err := s.Verdicts(ctx, nt.Run)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v.Commit != head {
			continue
		}
		def, ok := metrics.Get(v.Metric)
		switch {
		case v.Verdict == string(results.Incomplete) && nt.Failed == "" && (!ok || def.Tier != results.TierReport):
			nt.Failed = fmt.Sprintf("%s %s incomplete: %s", v.Config, v.Metric, v.Note)
		case v.Gated && v.Verdict == string(results.Worse) && v.DeltaPct != nil:
			nt.Regressions = append(nt.Regressions, fmt.Sprintf("%s %s %+.2f%%", v.Config, v.Metric, *v.DeltaPct))
		}
	}
	return nil
}
