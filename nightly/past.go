package nightly

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/config"
	hist "github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// HeadLabel and BaseLabel are the labels of a night's two commits.
const (
	HeadLabel = "head"
	BaseLabel = "base"
)

// TrendMetrics are the metrics the trend section follows: TPS of the
// timed configurations, instructions per transaction of the instruction
// ones.
var TrendMetrics = []string{results.MetricTPS, results.MetricInstructionsPerTx}

// past is what a night knows of the nights before it.
type past struct {
	// nights, oldest first: the store's nights of this job.
	nights []Night
	// store is nil on a dry run with no store yet (no past nights).
	store *store.Store
	// annotated maps a sha to its annotations.
	annotated map[string][]store.Annotation
}

// readPast reads the past nights from the store at location. A dry run
// opens a store that exists and creates none: without one (and with no
// location) there are no past nights. A store that does not open fails
// the night (the baseline and the trend come from nowhere else), as does
// one with no night of this job while root/runs holds analysed runs: a
// store made after the job started, to be filled first.
func readPast(ctx context.Context, location string, nc *config.Nightly, dryRun bool) (*past, error) {
	p, where := &past{nights: []Night{}}, location
	if location != "" && (!dryRun || store.Exists(location)) {
		open := store.Open
		if dryRun {
			open = store.OpenCurrent
		}
		s, err := open(ctx, location)
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("nightly: %w (the baseline and trend are read from the store: fix it, or set store in the nightly config or --store)", err))
		}
		if p, err = fromStore(ctx, s, nc); err != nil {
			s.Close()
			return nil, exitcode.Failure(fmt.Errorf("nightly: reading the past nights from store %s: %w", s.Where(), err))
		}
		where = s.Where()
	}
	runs := filepath.Join(nc.Root, "runs")
	if n := analysed(runs); len(p.nights) == 0 && n > 0 {
		p.close()
		return nil, exitcode.Failure(fmt.Errorf("nightly: store %s has no night of %s, though %s holds %d analysed runs: fill it first with abtest store import %s/*", where, nc.Root, runs, n, runs))
	}
	return p, nil
}

// analysed counts the result directories under runs with a report: the
// nights that were judged, which a night records in the store.
func analysed(runs string) int {
	ents, _ := os.ReadDir(runs)
	n := 0
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(runs, e.Name(), "report.json")); e.IsDir() && err == nil {
			n++
		}
	}
	return n
}

// fromStore reads this job's nights and the annotations from s: the
// stored runs under root/runs that ran a head, each judged by the job's
// gate options.
func fromStore(ctx context.Context, s *store.Store, nc *config.Nightly) (*past, error) {
	runs, err := hist.RunsUnder(ctx, s, filepath.Join(nc.Root, "runs"), gateOptions(nc))
	if err != nil {
		return nil, err
	}
	anns, err := s.Annotations(ctx)
	if err != nil {
		return nil, err
	}
	p := &past{store: s, nights: []Night{}, annotated: map[string][]store.Annotation{}}
	for _, a := range anns {
		p.annotated[a.SHA] = append(p.annotated[a.SHA], a)
	}
	for _, r := range runs {
		if nt, ok := storedNight(r); ok {
			p.nights = append(p.nights, nt)
		}
	}
	return p, nil
}

// storedNight is the night a stored run is, if it ran a head: its date
// is the day it was created, its baseline the sha of its baseline commit
// ("" on a night that ran its head alone), its regressions the head's.
func storedNight(r hist.GatedRun) (Night, bool) {
	nt := Night{Date: day(r.Created), Run: r.Dir, Status: r.Status}
	for _, c := range r.Commits {
		switch c.Label {
		case HeadLabel:
			nt.SHA = c.SHA
		case r.Baseline:
			nt.Baseline = c.SHA
		}
	}
	for _, c := range r.Regressions {
		if c.Commit == HeadLabel {
			nt.Regressions = append(nt.Regressions, c.Line())
		}
	}
	return nt, nt.SHA != ""
}

func (p *past) close() {
	if p.store != nil {
		p.store.Close()
	}
}

// step is the index of the newest night whose head an annotation names
// (the newest expected step), -1 when there is none.
func (p *past) step() int {
	for i := len(p.nights) - 1; i >= 0; i-- {
		if len(p.annotated[p.nights[i].SHA]) > 0 {
			return i
		}
	}
	return -1
}

// baselineOf is the sha to compare head with, or "" for none: the last
// night that did not fail ("last") or the configured ref. An annotated
// step starts a new baseline: no night before it is the baseline of a
// night after it, and a fixed baseline moves to the annotated night's
// head (the annotation says its level is the expected one; every change
// before it was reported night after night already). So a later
// regression is measured from the new level, not hidden in or added to
// the expected step.
func baselineOf(nc *config.Nightly, head tip, p *past) (string, error) {
	step := p.step()
	since := p.nights[max(step, 0):]
	baseline := ""
	switch {
	case step >= 0 && (nc.Baseline != "last" || lastGood(since) == nil):
		baseline = p.nights[step].SHA
	case nc.Baseline == "last":
		if last := lastGood(since); last != nil {
			baseline = last.SHA
		}
	default:
		h, err := head.repo.ResolveRevision(plumbing.Revision(nc.Baseline))
		if err != nil {
			return "", fmt.Errorf("nightly: baseline %q: %v", nc.Baseline, err)
		}
		baseline = h.String()
	}
	if baseline == head.sha {
		baseline = ""
	}
	return baseline, nil
}

// expected splits regressions into those an annotation explains and the
// others. An annotation explains a regression in its metric (in its
// configuration, or in every one when it names none) when its commit is
// tonight's head or, with the repository at hand, lies between the
// baseline (excluded) and the head.
func (n *night) expected(regs []analysis.Change) (others []analysis.Change, expected []string) {
	for _, c := range regs {
		if a, ok := n.explains(c); ok {
			expected = append(expected, fmt.Sprintf("%s %s %+.2f%% (annotated: %s)", c.Config, c.Metric, c.DeltaPct, a.Note))
			continue
		}
		others = append(others, c)
	}
	return others, expected
}

// explains returns the annotation that explains c: the head's own
// first, then the others in sha order, so the note said is the same
// every time.
func (n *night) explains(c analysis.Change) (store.Annotation, bool) {
	shas := slices.Sorted(maps.Keys(n.past.annotated))
	if i := slices.Index(shas, n.head.sha); i > 0 {
		shas = append([]string{n.head.sha}, slices.Delete(shas, i, i+1)...)
	}
	for _, sha := range shas {
		for _, a := range n.past.annotated[sha] {
			if a.Metric != c.Metric || (a.Config != "" && a.Config != c.Config) {
				continue
			}
			if sha == n.head.sha || n.inRange(sha) {
				return a, true
			}
		}
	}
	return store.Annotation{}, false
}

// inRange says whether sha is an ancestor of the head and not of the
// baseline (the commits tonight's comparison covers).
func (n *night) inRange(sha string) bool {
	if n.head.repo == nil || sha == n.baseline {
		return false
	}
	commit := func(s string) *object.Commit {
		c, err := n.head.repo.CommitObject(plumbing.NewHash(s))
		if err != nil {
			return nil
		}
		return c
	}
	a, h := commit(sha), commit(n.head.sha)
	if a == nil || h == nil {
		return false
	}
	if in, err := a.IsAncestor(h); err != nil || !in {
		return false
	}
	if n.baseline == "" {
		return true
	}
	b := commit(n.baseline)
	if b == nil {
		return false
	}
	in, err := a.IsAncestor(b)
	return err == nil && !in
}

// trends are the trend section's series, from the store, when the
// night is stored there (none otherwise: the night then exits 3 for the
// store). The store's change points are found in each whole series (as
// `abtest history` finds them) and those in the last TrendNights nights
// shown.
func (n *night) trends(ctx context.Context, stored bool) ([]analysis.Trend, int, error) {
	if n.past.store == nil || !stored {
		return nil, 0, nil
	}
	series, err := hist.SeriesUnder(ctx, n.past.store, filepath.Join(n.nc.Root, "runs"), TrendMetrics)
	if err != nil {
		return nil, 0, err
	}
	var out []analysis.Trend
	nights := 0
	for _, ser := range series {
		from := max(0, len(ser.Points)-n.nc.TrendNights)
		t := analysis.Trend{Config: ser.Config, Metric: ser.Metric}
		for _, pt := range ser.Points[from:] {
			t.Labels = append(t.Labels, label(day(pt.Time), pt.SHA))
			t.Values = append(t.Values, pt.Value)
		}
		for _, cp := range ser.ChangePoints {
			if cp.Index >= from {
				t.ChangePoints = append(t.ChangePoints, analysis.TrendChange{
					ChangePoint: analysis.ChangePoint{Index: cp.Index - from, P: cp.P, DeltaPct: cp.DeltaPct}, Expected: cp.Expected, Note: cp.Note})
			}
		}
		nights = max(nights, len(t.Values))
		out = append(out, t)
	}
	return out, nights, nil
}
