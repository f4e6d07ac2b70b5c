package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// source is a results directory as an import reads it: plan.json as
// written (stored whole), the plan, and its shard.
type source struct {
	dir, abs string
	planText []byte
	plan     *results.Plan
	shardID  string
}

// openSource reads dir's plan.
func openSource(dir string) (*source, error) {
	src := &source{dir: dir}
	var err error
	if src.abs, err = filepath.Abs(dir); err != nil {
		return nil, exitcode.Failure(err)
	}
	path := filepath.Join(dir, results.PlanFile)
	if src.planText, err = os.ReadFile(path); err != nil {
		// ReadPlan's error says what is wrong with the directory.
		if _, perr := results.ReadPlan(dir); perr != nil {
			err = perr
		}
		return nil, err
	}
	if src.plan, err = results.DecodePlan(src.planText, path); err != nil {
		return nil, err
	}
	src.shardID = src.plan.Shard
	if src.shardID == "" {
		src.shardID = "1/1"
	}
	return src, nil
}

// pending is a new cell waiting for its row.
type pending struct {
	rec *results.Record
	cfg string // its configuration's id
}

// todo returns the cells of recs to store, in name order (SQLite fills
// the cells' unique index cheaper in its order; PostgreSQL's insert
// sorts anyway): the first record of each cell not present. configs are
// their configurations the store does not have yet.
func (w *cellRows) todo(recs []results.Record, present map[string]int64) (todo []pending, configs map[string]results.Config) {
	configs = map[string]results.Config{}
	for i := range recs {
		r := &recs[i]
		if w.seen[r.Cell] {
			if w.dup == "" {
				w.dup = r.Cell
			}
			continue
		}
		w.seen[r.Cell] = true
		if _, ok := present[r.Cell]; ok {
			continue
		}
		// A configuration's id once per distinct configuration (in the
		// order the cells ran, mostly adjacent), not per cell.
		if w.prev == nil || !sameConfig(r, w.prev) {
			w.prev, w.prevID = r, r.Config.ID()
		}
		if !w.known[w.prevID] {
			w.known[w.prevID] = true
			configs[w.prevID] = r.Config
		}
		todo = append(todo, pending{r, w.prevID})
	}
	slices.SortFunc(todo, func(a, b pending) int { return strings.Compare(a.rec.Cell, b.rec.Cell) })
	return todo, configs
}
