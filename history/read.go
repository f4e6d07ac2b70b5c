package history

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// changePoints adds to ser its change points (analysis.ChangePoints, a
// function of the series alone), marked expected where an annotation
// names their commit.
func changePoints(ser *store.Series) {
	xs := make([]float64, len(ser.Points))
	for i, p := range ser.Points {
		xs[i] = p.Value
	}
	for _, cp := range analysis.ChangePoints(xs, analysis.ChangePointOptions{}) {
		ser.AddChangePoint(cp.Index, cp.DeltaPct, cp.P)
	}
}

// Trend returns the trend of one metric in one configuration over the
// stored runs (store.History) with its change points.
func Trend(ctx context.Context, st *store.Store, q store.HistoryQuery) (*store.Series, error) {
	ser, err := st.History(ctx, q)
	if err != nil {
		return nil, err
	}
	changePoints(ser)
	return ser, nil
}

// AllTrends returns the series of every key with their change points,
// reading the runs once.
func AllTrends(ctx context.Context, st *store.Store, keys []store.SeriesKey) ([]*store.Series, error) {
	series, err := st.AllHistory(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, ser := range series {
		changePoints(ser)
	}
	return series, nil
}

// SeriesUnder returns, for each metric, its series in every
// configuration of the runs under dir (store.SeriesUnder) with their
// change points.
func SeriesUnder(ctx context.Context, st *store.Store, dir string, metrics []string) ([]*store.Series, error) {
	series, err := st.SeriesUnder(ctx, dir, metrics)
	if err != nil {
		return nil, err
	}
	for _, ser := range series {
		changePoints(ser)
	}
	return series, nil
}

// GatedRun is a stored run whose results directory lies under a
// directory (RunsUnder), with its commits and its gate.
type GatedRun struct {
	Run     string    `json:"run"`
	Created time.Time `json:"created"`
	Dir     string    `json:"dir"`
	// Baseline is the label of the run's baseline; Commits its commits.
	Baseline string         `json:"baseline"`
	Commits  []store.Commit `json:"commits"`
	// Status is analysis.GateStatus of the run's report as it is judged
	// now from the store (the caller's gate options): regression, failed
	// (cells missing: the run could not answer), unanswered (every cell
	// there, but the primary's answer unknown) or ok, by the one rule of
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
// under o, judged now from the store.
func RunsUnder(ctx context.Context, st *store.Store, dir string, o analysis.Options) ([]GatedRun, error) {
	runs, err := st.RunsUnder(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]GatedRun, 0, len(runs))
	for _, r := range runs {
		gr := GatedRun{Run: r.Run, Created: r.Created, Dir: r.Dir, Baseline: r.Baseline, Commits: r.Commits}
		rep, err := Judge(ctx, st, r.Run, o)
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage {
				return nil, err
			}
			gr.Status, gr.Failed = results.GateFailed, "not analysable from the store: "+text.OneLine(err.Error())
			out = append(out, gr)
			continue
		}
		gate := rep.Gate()
		gr.Status = analysis.GateStatus(gate)
		switch gr.Status {
		case results.GateFailed:
			gr.Failed = text.OneLine(gate.Error())
		case results.GateRegression:
			gr.Regressions = rep.Regressions
		}
		out = append(out, gr)
	}
	return out, nil
}

// ImportAll imports dirs in order (store.Import), saying on w one line per
// directory and on warn each warning; nil writers are silent.
//
// A directory whose plan holds a text the store does not take
// (store.CheckShown) is refused before any directory is imported.
func ImportAll(ctx context.Context, st *store.Store, dirs []string, w, warn io.Writer) ([]store.ImportStats, error) {
	if err := store.CheckPlansOf(dirs...); err != nil {
		return nil, err
	}
	var all []store.ImportStats
	for _, d := range dirs {
		stats, err := st.Import(ctx, d)
		if err != nil {
			return all, err
		}
		all = append(all, stats)
		if w != nil {
			fmt.Fprintf(w, "%s: run %s: %d cells stored, %d already there\n", d, stats.Run, stats.Cells, stats.Present)
		}
		for _, m := range stats.Warnings {
			if warn != nil {
				fmt.Fprintf(warn, "warning: %s\n", m)
			}
		}
	}
	return all, nil
}

// Record imports finished results directories into the store at loc,
// one line each on w: every matrix, nightly and bisect run is in the
// database as well as in its files. The files are the truth and are
// complete before this runs; a store that cannot be reached is an
// error that says where the files are. With no dirs it records nothing
// and checks the store (store.Check), as a run does before its first
// cell.
func Record(ctx context.Context, loc string, w io.Writer, dirs ...string) error {
	if len(dirs) == 0 {
		return store.Check(ctx, loc)
	}
	st, err := store.Open(ctx, loc)
	if err != nil {
		return fmt.Errorf("the results are in %s, but %w", strings.Join(dirs, ", "), err)
	}
	defer st.Close()
	for _, d := range dirs {
		stats, err := st.Import(ctx, d)
		if err != nil {
			return fmt.Errorf("the results are in %s, but %w", d, err)
		}
		fmt.Fprintf(w, "store: run %s: %d cells stored (%d already there)\n", stats.Run, stats.Cells, stats.Present)
	}
	return nil
}
