package bisect

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/pgabtest/abtest/internal/text"
)

// DefaultDir is where a bisection keeps its state and results when no
// directory is given: bisect_GOOD_BAD under resultsDir.
func DefaultDir(resultsDir string, id Identity) string {
	return filepath.Join(resultsDir, "bisect_"+text.Short(id.Good)+"_"+text.Short(id.Bad))
}

// WritePlan prints what a bisection of revs would do: the range, the
// most steps and cells, the metric and the configuration it is measured
// in (its clients, offered rate and settings), the state directory,
// then the first-parent commits.
func WritePlan(w io.Writer, r *Request, id Identity, revs []Rev, steps int) {
	fmt.Fprintf(w, "# bisect %s (good) .. %s (bad): %d first-parent commits, at most %d steps of %d cells (good, step, bad × %d repeats), metric %s in %s; state in %s\n",
		text.Short(id.Good), text.Short(id.Bad), len(revs)-1, steps, 3*r.Repeats, r.Repeats, r.Metric, id.Config, r.Dir)
	for i, rev := range revs {
		fmt.Fprintf(w, "%3d %s %s\n", i, text.Short(rev.SHA), rev.Subject)
	}
}

// Execute is a whole bisection: it checks r, plans the range, sets r.Dir
// (DefaultDir under resultsDir when empty), then prints the plan
// (dryRun) or runs it and records every step (deps.Record). The
// bisection's error wins over the store's, which is then said on
// deps.Err.
func Execute(ctx context.Context, deps *Deps, r *Request, resultsDir string, dryRun bool) error {
	if err := r.Check(); err != nil {
		return err
	}
	id, revs, steps, err := Plan(deps, r)
	if err != nil {
		return err
	}
	if r.Dir == "" {
		r.Dir = DefaultDir(resultsDir, id)
	}
	if dryRun {
		WritePlan(deps.Out, r, id, revs, steps)
		return nil
	}
	st, err := Run(ctx, deps, r)
	if st == nil || len(st.Steps) == 0 || deps.Record == nil {
		return err
	}
	var dirs []string
	for _, s := range st.Steps {
		dirs = append(dirs, s.Dir)
	}
	if serr := deps.Record(ctx, deps.Out, dirs...); serr != nil {
		if err != nil {
			if deps.Err != nil {
				fmt.Fprintf(deps.Err, "abtest: store: %v\n", serr)
			}
			return err
		}
		return serr
	}
	return err
}
