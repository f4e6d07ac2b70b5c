package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
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
	// Status is analysis.GateStatus of the night's report as the store
	// analyses it (the job's gate options): regression, failed (cells
	// missing: the run could not answer, so it is never a baseline),
	// unanswered (every cell there, but the primary's answer unknown:
	// never ok, still a baseline) or ok, by the one rule of
	// analysis.Report.Gate. Failed says why a failed night could not
	// answer.
	Status results.GateStatus `json:"status"`
	Failed string             `json:"failed,omitempty"`
	// Regressions are the head's gated comparisons for the worse
	// (analysis.Report.Regressions): "config metric -x%".
	Regressions []string `json:"regressions,omitempty"`
}

// Nights returns the runs whose results directories lie under dir (a
// nightly job's root/runs), oldest first; head is the label of the
// commit a night tracks (nightly's "head"). Each night's status is its
// report's gate (Report.Gate) under o, the job's gate options.
func (s *Store) Nights(ctx context.Context, dir, head string, o analysis.Options) ([]Night, error) {
	ri, runs, err := s.nightRuns(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []Night
	for _, r := range runs {
		nt := Night{Run: r, Created: ri.created[r], Dir: ri.dir[r]}
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
		if err := s.judgeNight(ctx, &nt, head, o); err != nil {
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

// judgeNight gives nt the status Report.Gate gives its run, analysed
// from the store as its verdicts were: a night whose run cannot be
// analysed from the store could not answer either.
func (s *Store) judgeNight(ctx context.Context, nt *Night, head string, o analysis.Options) error {
	in, err := s.input(ctx, s.db, nt.Run)
	var rep *analysis.Report
	if err == nil {
		rep, err = analysis.Analyze(in, o)
	}
	if err != nil {
		if exitcode.Code(err) != exitcode.Usage {
			return err
		}
		nt.Status, nt.Failed = results.GateFailed, "not analysable from the store: "+text.OneLine(err.Error())
		return nil
	}
	gate := rep.Gate()
	nt.Status = analysis.GateStatus(gate)
	switch nt.Status {
	case results.GateFailed:
		nt.Failed = text.OneLine(gate.Error())
	case results.GateRegression:
		for _, c := range rep.Regressions {
			if c.Commit == head {
				nt.Regressions = append(nt.Regressions, c.Line())
			}
		}
	}
	return nil
}
