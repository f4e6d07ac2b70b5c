package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// ImportStats says what an import did.
type ImportStats struct {
	Run string `json:"run"`
	// Cells were stored now; Present were there already (an import
	// again, or another shard's process got there first).
	Cells    int      `json:"cells"`
	Present  int      `json:"present"`
	Warnings []string `json:"warnings,omitempty"`
}

// Import loads the results directory dir (one run, or one shard of one)
// into the store. It is idempotent: a cell already stored is left as it
// is. The cells are stored in one transaction. Import judges nothing:
// the analysis runs when the run is read (history.Judge).
func (s *Store) Import(ctx context.Context, dir string) (ImportStats, error) {
	src, err := openSource(dir)
	if err != nil {
		return ImportStats{}, err
	}
	if err := checkPlan(dir, src.plan); err != nil {
		return ImportStats{}, err
	}
	recs, warnings, readErr := results.ReadRecords(dir)
	st := ImportStats{Run: RunID(src.plan)}
	n, distinct, err := s.putRunCells(ctx, st.Run, src, recs, readErr)
	if err != nil {
		return st, err
	}
	st.Warnings = warnings
	st.Cells, st.Present = n, distinct-n
	return st, nil
}

// putRunCells stores, in one transaction, the run, its configurations,
// and those of its cells (with their metrics) that the store lacks, and
// returns how many cells it stored and how many distinct cells the
// directory has. readErr, when cells.jsonl was read only in part, makes
// it store nothing.
func (s *Store) putRunCells(ctx context.Context, run string, src *source, recs []results.Record, readErr error) (stored, distinct int, err error) {
	fail := func(err error) (int, int, error) { return 0, 0, s.fail("importing "+src.dir, err) }
	// One connection for the transaction and, on PostgreSQL, the COPY
	// that runs in it.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	if err := s.putRun(ctx, tx, run, src); err != nil {
		return fail(err)
	}
	// The plan's configurations first: a cell's must be there before
	// it, and a record's not in the plan comes with its batch.
	configs := map[string]results.Config{}
	w := &cellRows{run: run, shard: src.shardID, known: map[string]bool{}, seen: map[string]bool{}}
	for _, c := range src.plan.Configs {
		id := c.ID()
		configs[id], w.known[id] = c, true
	}
	if err := s.putConfigs(ctx, tx, configs); err != nil {
		return fail(err)
	}
	n, err := s.putCells(ctx, conn, tx, recs, w)
	if err != nil {
		return fail(err)
	}
	if w.dup != "" {
		// A run records a cell once; two records (an edited cells.jsonl,
		// overlapping shards) are two answers, and the analysis of the
		// directory calls its configuration incomplete: the store keeps
		// neither rather than one of them silently.
		return 0, 0, exitcode.BadInputf("importing %s: cell %s is recorded more than once in its cells.jsonl; keep one record of it (or re-run it with --resume after removing both) and import again", src.dir, w.dup)
	}
	// A directory read only in part stores nothing.
	if readErr != nil {
		return 0, 0, exitcode.Failure(readErr)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return n, len(w.seen), nil
}

// runCreated is when the run was planned.
func runCreated(plan *results.Plan, dir string) time.Time {
	created := plan.Created
	if created.IsZero() {
		// Plans of schema version 1 have no creation time: the plan
		// file's is the next best.
		if fi, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
			created = fi.ModTime()
		}
	}
	return created
}

func (s *Store) putRun(ctx context.Context, tx execer, id string, src *source) error {
	p := src.plan
	created := runCreated(p, src.dir).UTC().Format(time.RFC3339Nano)
	h := p.Host
	hostFP := hashJSON(h)
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO hosts (fingerprint, hostname, cpu, nproc, memory_mb, kernel, info)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		hostFP, h.Hostname, h.CPU, h.NProc, h.MemoryMB, h.Kernel, jsonText(h)); err != nil {
		return err
	}
	metricDefs := p.Metrics
	if metricDefs == nil {
		metricDefs = results.Metrics{}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO runs (id, created, baseline, ncommits, abtest_version, options, metric_defs, imported_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		id, created, p.Baseline, len(p.Commits), p.AbtestVersion, jsonText(p.Options), jsonText(metricDefs), now()); err != nil {
		return err
	}
	doctor := p.Doctor
	if doctor == nil {
		doctor = []results.Finding{}
	}
	// A shard stored before schema version 2 has no plan: importing it
	// again adds it.
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_shards (run_id, shard, dir, host, created, doctor, plan)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, shard) DO UPDATE SET plan = excluded.plan WHERE run_shards.plan = ''`),
		id, src.shardID, src.abs, hostFP, created, jsonText(doctor), string(src.planText)); err != nil {
		return err
	}
	for i, c := range p.Commits {
		patches := c.Patches
		if patches == nil {
			patches = []results.Patch{}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO commits (run_id, label, position, ref, sha, identity, patches, install, build, fingerprint, version, build_type)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			id, c.Label, i, c.Ref, c.SHA, c.Identity(), jsonText(patches), c.Install, c.Build, c.Fingerprint, c.Version, c.BuildType); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) putConfigs(ctx context.Context, tx execer, configs map[string]results.Config) error {
	ids := slices.Sorted(maps.Keys(configs))
	for _, id := range ids {
		c := configs[id]
		settings := c.Settings
		if settings == nil {
			settings = map[string]string{}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO configurations (id, workload, clients, cpus, settings, instructions, point)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), id, c.Workload, c.Clients, c.CPUs, jsonText(settings), boolInt(c.Instructions), pointText(c)); err != nil {
			return err
		}
	}
	return nil
}

// cellsColumns are the cells table's columns an import writes: those of
// cellColumns, then those that are not the record's (cellRows.args).
var cellsColumns = columnNames("") + ", run_id, shard, config, artifacts, detail, metrics"

// cellRows makes the cells' rows of one import.
type cellRows struct {
	run, shard string
	known      map[string]bool // ids of the configurations stored
	seen       map[string]bool // cells made or left out
	dup        string          // the first cell recorded twice
	prev       *results.Record // the last new record, of configuration prevID
	prevID     string
	buf        []byte
}

// args appends the values of r's row, in cellsColumns' order; cfg is
// its configuration's id.
func (w *cellRows) args(args []any, r *results.Record, cfg string) []any {
	var metrics string
	w.buf, metrics = metricsText(w.buf, r.Metrics)
	return append(columnArgs(args, r), w.run, w.shard, cfg, artifacts(r), cellDetail(r), metrics)
}

// putCells inserts the cells of recs (each once, the first record of
// it; those not stored yet), their metrics with them, and returns how
// many it inserted: on PostgreSQL by COPY into a temporary table and one
// insert from it in cell name order (two processes inserting overlapping
// cells take the rows' locks in the same order and cannot deadlock), on
// SQLite, whose import holds the write lock, by multi-row inserts of the
// cells the run lacks.
func (s *Store) putCells(ctx context.Context, conn *sql.Conn, tx execer, recs []results.Record, w *cellRows) (int, error) {
	width := len(cellColumns(&results.Record{})) + 6
	var present map[string]int64
	if !s.postgres {
		rows, err := tx.QueryContext(ctx, "SELECT id, cell FROM cells WHERE run_id = ?", w.run)
		if err != nil {
			return 0, err
		}
		present = map[string]int64{}
		if err := scanIDs(rows, present); err != nil {
			return 0, err
		}
	}
	todo, configs := w.todo(recs, present)
	if err := s.putConfigs(ctx, tx, configs); err != nil {
		return 0, err
	}
	args := make([]any, 0, width*min(len(todo), cellBatch))
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "CREATE TEMPORARY TABLE cells_in ON COMMIT DROP AS SELECT "+cellsColumns+" FROM cells WITH NO DATA"); err != nil {
			return 0, err
		}
		// pgx encodes each row before it asks for the next: args is
		// used again.
		err := copyFrom(ctx, conn, "cells_in", strings.Split(cellsColumns, ", "), pgx.CopyFromFunc(func() ([]any, error) {
			if len(todo) == 0 {
				return nil, nil
			}
			args = w.args(args[:0], todo[0].rec, todo[0].cfg)
			todo = todo[1:]
			return args, nil
		}))
		if err != nil {
			return 0, err
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO cells ("+cellsColumns+") SELECT "+cellsColumns+" FROM cells_in ORDER BY cell ON CONFLICT (run_id, cell) DO NOTHING")
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		return int(n), err
	}
	ins := &batcher{s: s, tx: tx, size: cellBatch, head: "INSERT INTO cells (" + cellsColumns + ") VALUES ", row: "(?" + strings.Repeat(",?", width-1) + ")"}
	defer ins.close()
	stored := len(todo)
	for len(todo) > 0 {
		n := min(len(todo), cellBatch)
		args = args[:0]
		for _, p := range todo[:n] {
			args = w.args(args, p.rec, p.cfg)
		}
		if err := ins.exec(ctx, n, args); err != nil {
			return 0, err
		}
		todo = todo[n:]
	}
	return stored, nil
}

// scanIDs reads rows of (id, cell) into ids and closes rows.
func scanIDs(rows *sql.Rows, ids map[string]int64) error {
	defer rows.Close()
	for rows.Next() {
		var id int64
		var cell string
		if err := rows.Scan(&id, &cell); err != nil {
			return err
		}
		ids[cell] = id
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// artifacts is a cell's artifacts as JSON, its profile included: the
// dashboard's links (Cells), not read back into a record.
func artifacts(r *results.Record) string {
	if len(r.Artifacts) == 0 && (r.Perf == nil || r.Perf.Profile == "") {
		return "{}"
	}
	arts := map[string]string{}
	for k, v := range r.Artifacts {
		arts[k] = v
	}
	if r.Perf != nil && r.Perf.Profile != "" {
		arts["profile"] = r.Perf.Profile
	}
	return jsonText(arts)
}

// pointText is c's point column: its values of the axes the registry
// stores there (results.Config.PointJSON), ” for a closed loop without
// variables or condition, as every configuration stored before had.
func pointText(c results.Config) string {
	text, _ := c.PointJSON()
	return text
}

// readPoint sets c's axes from its point column.
func readPoint(text string, c *results.Config) error { return c.ReadPoint(text) }

// sameConfig: the records (in the order they ran, a configuration's
// cells mostly adjacent) have the same configuration.
func sameConfig(a, b *results.Record) bool { return results.SameConfig(&a.Config, &b.Config) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
