package pipeline

import (
	"errors"
	"fmt"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// ErrCellsFailed: every cell of some commit × configuration failed, so
// the run measured nothing there (exit 3, gated or not: cron and CI
// must not read it as a success).
var ErrCellsFailed = errors.New("pipeline: failed cells")

// everyCellFailed is ErrCellsFailed (exit 3) when some commit ×
// configuration of the run in dir has cells and all of them failed, in
// one line naming the first: its commit and configuration and its
// error, which names the failed tool's own cause (pgbench's first
// error, a server's FATAL line) and its log. Nil otherwise.
func everyCellFailed(dir string) error {
	recs, _, err := results.ReadRecordsNoProgress(dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	type group struct {
		ok, failed int
		first      *results.Record
	}
	groups := map[string]*group{}
	var order []string
	for i := range recs {
		rec := &recs[i]
		key := "commit " + rec.Commit + " in " + rec.Config.ID()
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
			order = append(order, key)
		}
		switch rec.Status {
		case results.StatusOK:
			g.ok++
		case results.StatusFailed:
			g.failed++
			if g.first == nil {
				g.first = rec
			}
		}
	}
	var first *results.Record
	var where string
	n := 0
	for _, key := range order {
		g := groups[key]
		if g.failed == 0 || g.ok > 0 {
			continue
		}
		n++
		if first == nil || g.first.Seq < first.Seq {
			first, where = g.first, key
		}
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (and of %d more commit × configuration pairs)", n-1)
		if n == 2 {
			more = " (and of one more commit × configuration)"
		}
	}
	return exitcode.Failure(fmt.Errorf("%w: every cell of %s failed%s; the first: %s", ErrCellsFailed, where, more, text.OneLine(first.Error)))
}
