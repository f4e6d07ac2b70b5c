package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// RunShard is one shard of a stored run as it was written: its plan
// and its cells read back as records, in the order they ran. The cells'
// series (samples, progress, waits, final state, probe counters:
// record.go says what is stored where) stay in the files.
type RunShard struct {
	Name    string
	Dir     string
	Plan    *results.Plan
	Records []results.Record
}

// Shards returns the shards of run, by shard number as analysis.Load
// reads directories, each with its plan and records, so that merging
// them (history.Input) gives the analysis input of the files.
func (s *Store) Shards(ctx context.Context, run string) ([]RunShard, error) {
	fail := func(err error) error { return s.fail("reading run "+run, err) }
	rows, err := s.db.QueryContext(ctx, s.q("SELECT shard, dir, plan FROM run_shards WHERE run_id = ? ORDER BY shard"), run)
	if err != nil {
		return nil, fail(err)
	}
	var shards []RunShard
	for rows.Next() {
		var name, dir, plan string
		if err := rows.Scan(&name, &dir, &plan); err != nil {
			rows.Close()
			return nil, fail(err)
		}
		if plan == "" {
			rows.Close()
			return nil, exitcode.BadInputf("store %s: run %s shard %s was stored by an abtest without plans in the store: import %s again", s.where, run, name, dir)
		}
		p, err := results.DecodePlan([]byte(plan), "the store's plan of run "+run+" shard "+name)
		if err != nil {
			rows.Close()
			return nil, err
		}
		shards = append(shards, RunShard{Name: name, Dir: dir, Plan: p})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	if len(shards) == 0 {
		return nil, exitcode.BadInputf("store %s: %w: no run %s", s.where, ErrUnknown, run)
	}
	byShard, err := s.readRecords(ctx, s.db, run)
	if err != nil {
		return nil, fail(err)
	}
	// By shard number, as Load reads directories: text order would put
	// "10/12" before "2/12".
	slices.SortStableFunc(shards, func(a, b RunShard) int { return shardIndex(a.Name) - shardIndex(b.Name) })
	for i := range shards {
		shards[i].Records = byShard[shards[i].Name]
	}
	return shards, nil
}

// shardIndex is I of a shard named "I/N" (0 for a name without one).
func shardIndex(name string) int {
	i, _, _ := strings.Cut(name, "/")
	n, _ := strconv.Atoi(i)
	return n
}

// readRecords reads run's cells back as records (see cellRecord), by
// shard, each shard's in the order they ran.
func (s *Store) readRecords(ctx context.Context, q execer, run string) (map[string][]results.Record, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT c.metrics, c.shard, c.detail, c.config, f.workload, f.clients, f.cpus, f.settings, f.instructions, f.point, `+columnNames("c.")+`
		FROM cells c JOIN configurations f ON f.id = c.config WHERE c.run_id = ? ORDER BY c.shard, c.seq, c.cell`), run)
	if err != nil {
		return nil, err
	}
	var recs []results.Record
	var shardOf []string
	configs := map[string]results.Config{}
	var cols results.Record
	dest := make([]any, 10)
	for _, c := range cellColumns(&cols) {
		dest = append(dest, c.ptr)
	}
	for rows.Next() {
		var metrics, shard, det, cfg, set, point string
		var c results.Config
		dest[0], dest[1], dest[2], dest[3] = &metrics, &shard, &det, &cfg
		dest[4], dest[5], dest[6], dest[7], dest[8], dest[9] = &c.Workload, &c.Clients, &c.CPUs, &set, (*intBool)(&c.Instructions), &point
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, err
		}
		if _, ok := configs[cfg]; !ok {
			// One settings map per configuration, not per cell.
			err := json.Unmarshal([]byte(set), &c.Settings)
			if err == nil {
				err = readPoint(point, &c)
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("configuration %s: %v", cfg, err)
			}
			configs[cfg] = c
		}
		r, err := cellRecord(&cols, det, configs[cfg])
		if err != nil {
			rows.Close()
			return nil, err
		}
		if r.Metrics, err = parseMetrics(metrics); err != nil {
			rows.Close()
			return nil, fmt.Errorf("cell %s: metrics: %v", r.Cell, err)
		}
		recs = append(recs, r)
		shardOf = append(shardOf, shard)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	byShard := map[string][]results.Record{}
	for i, r := range recs {
		byShard[shardOf[i]] = append(byShard[shardOf[i]], r)
	}
	return byShard, nil
}

// ResolveRun returns the run that ref names: a run id, a prefix of one,
// or seed:N (the run made with --seed N, as every shard of one run is).
func (s *Store) ResolveRun(ctx context.Context, ref string) (string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, options FROM runs ORDER BY created, id")
	if err != nil {
		return "", s.fail("listing runs", err)
	}
	defer rows.Close()
	seed, bySeed := strings.CutPrefix(ref, "seed:")
	want, serr := strconv.ParseInt(seed, 10, 64)
	if bySeed && serr != nil {
		return "", exitcode.BadInputf("--run %s: want a run id, a prefix of one, or seed:N", ref)
	}
	var match []string
	for rows.Next() {
		var id, options string
		if err := rows.Scan(&id, &options); err != nil {
			return "", s.fail("listing runs", err)
		}
		if !bySeed && id == ref {
			return id, nil
		}
		var o results.PlanOpts
		if bySeed && json.Unmarshal([]byte(options), &o) == nil && o.Seed == want || !bySeed && ref != "" && strings.HasPrefix(id, ref) {
			match = append(match, id)
		}
	}
	if err := rows.Err(); err != nil {
		return "", s.fail("listing runs", err)
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		if bySeed {
			return "", exitcode.BadInputf("--run %s: %w: no run in %s was made with --seed %d", ref, ErrUnknown, s.where, want)
		}
		return "", exitcode.BadInputf("--run %s: %w: no run in %s is or starts with it", ref, ErrUnknown, s.where)
	}
	sort.Strings(match)
	return "", exitcode.BadInputf("--run %s: %w: %d runs match (%s); give a run id", ref, ErrAmbiguous, len(match), strings.Join(match[:min(len(match), 4)], ", "))
}
