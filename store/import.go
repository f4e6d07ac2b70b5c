package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// ImportStats says what an import did.
type ImportStats struct {
	Run string `json:"run"`
	// Cells were stored now; Present were there already (an import
	// again, or another shard's process got there first).
	Cells   int `json:"cells"`
	Present int `json:"present"`
	// Verdicts is the number of verdicts stored for the run, when they
	// were recomputed.
	Verdicts int      `json:"verdicts"`
	Warnings []string `json:"warnings,omitempty"`
}

// Import loads the results directory dir (one run, or one shard of one)
// into the store. It is idempotent: a cell already stored is left as it
// is. The cells are stored in one transaction; then, when any were new,
// the run's verdicts are recomputed from every cell the store has of it.
func (s *Store) Import(ctx context.Context, dir string) (ImportStats, error) {
	plan, err := results.ReadPlan(dir)
	if err != nil {
		return ImportStats{}, err
	}
	recs, warnings, err := results.ReadRecords(dir)
	if err != nil {
		return ImportStats{}, exitcode.Failure(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ImportStats{}, exitcode.Failure(err)
	}
	st := ImportStats{Run: RunID(plan), Warnings: warnings}
	shard := plan.Shard
	if shard == "" {
		shard = "1/1"
	}
	// Cells in a fixed order: two processes inserting overlapping cells
	// take the rows' locks in the same order and cannot deadlock.
	sort.Slice(recs, func(i, j int) bool { return recs[i].Cell < recs[j].Cell })
	n, err := s.putRunCells(ctx, dir, abs, st.Run, shard, plan, recs)
	if err != nil {
		return st, err
	}
	st.Cells, st.Present = n, len(recs)-n
	var have int
	if err := s.db.QueryRowContext(ctx, s.q("SELECT count(*) FROM verdicts WHERE run_id = ?"), st.Run).Scan(&have); err != nil {
		return st, s.fail("importing "+dir, err)
	}
	if st.Cells > 0 || have == 0 {
		n, w, err := s.Reanalyze(ctx, st.Run, plan, recs)
		if err != nil {
			return st, err
		}
		st.Verdicts = n
		st.Warnings = append(st.Warnings, w...)
	}
	return st, nil
}

// putRunCells stores, in one transaction, the run, its configurations,
// and those of its cells (with their metrics) that the store lacks, and
// returns how many cells it stored.
func (s *Store) putRunCells(ctx context.Context, dir, abs, run, shard string, plan *results.Plan, recs []results.Record) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	defer tx.Rollback()
	if err := s.putRun(ctx, tx, run, plan, runCreated(plan, dir), shard, abs); err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	configs, cfgIDs := recordConfigs(plan, recs)
	if err := s.putConfigs(ctx, tx, configs); err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	ids, err := s.putCells(ctx, tx, run, shard, recs, cfgIDs)
	if err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	if err := s.putMetrics(ctx, tx, recs, ids); err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.fail("importing "+dir, err)
	}
	return len(ids), nil
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

// recordConfigs returns the configurations of the plan and of the
// records by ID, and each record's configuration ID.
func recordConfigs(plan *results.Plan, recs []results.Record) (map[string]results.Config, []string) {
	configs := map[string]results.Config{}
	for _, c := range plan.Configs {
		configs[c.ID()] = c
	}
	// A configuration's id once per distinct configuration, not per cell.
	cfgIDs := make([]string, len(recs))
	for i := range recs {
		if i > 0 && sameConfig(&recs[i], &recs[i-1]) {
			cfgIDs[i] = cfgIDs[i-1]
			continue
		}
		c := recs[i].Config()
		cfgIDs[i] = c.ID()
		configs[cfgIDs[i]] = c
	}
	return configs, cfgIDs
}

func (s *Store) putRun(ctx context.Context, tx execer, id string, p *results.Plan, created time.Time, shard, dir string) error {
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
		id, created.UTC().Format(time.RFC3339Nano), p.Baseline, len(p.Commits), p.AbtestVersion, jsonText(p.Options), jsonText(metricDefs), now()); err != nil {
		return err
	}
	doctor := p.Doctor
	if doctor == nil {
		doctor = []results.Finding{}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_shards (run_id, shard, dir, host, created, doctor)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		id, shard, dir, hostFP, created.UTC().Format(time.RFC3339Nano), jsonText(doctor)); err != nil {
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
	ids := make([]string, 0, len(configs))
	for id := range configs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := configs[id]
		settings := c.Settings
		if settings == nil {
			settings = map[string]string{}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO configurations (id, workload, clients, cpus, settings)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), id, c.Workload, c.Clients, c.CPUs, jsonText(settings)); err != nil {
			return err
		}
	}
	return nil
}

// cellBatch and metricBatch keep a statement's parameters well under
// both engines' limits (SQLite 32 766, PostgreSQL 65 535) while cutting
// the round trips of 10⁵ cells to a few hundred.
const (
	cellBatch   = 250
	metricBatch = 2000
)

// putCells inserts recs (those not stored yet) and returns the new rows'
// ids by cell name.
func (s *Store) putCells(ctx context.Context, tx execer, run, shard string, recs []results.Record, cfgIDs []string) (map[string]int64, error) {
	const cols = 13
	ids := map[string]int64{}
	for start := 0; start < len(recs); start += cellBatch {
		batch := recs[start:min(start+cellBatch, len(recs))]
		batchCfg := cfgIDs[start:]
		var b strings.Builder
		b.WriteString("INSERT INTO cells (run_id, cell, shard, commit_label, config, repeat, seq, status, saturated, started_at, duration_s, error, artifacts) VALUES ")
		args := make([]any, 0, cols*len(batch))
		for i := range batch {
			r := &batch[i]
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?)")
			sat := 0
			if r.Saturated {
				sat = 1
			}
			arts := map[string]string{}
			for k, v := range r.Artifacts {
				arts[k] = v
			}
			if r.Perf != nil && r.Perf.Profile != "" {
				arts["profile"] = r.Perf.Profile
			}
			args = append(args, run, r.Cell, shard, r.Commit, batchCfg[i], r.Repeat, r.Seq, string(r.Status), sat,
				r.StartedAt.UTC().Format(time.RFC3339Nano), r.DurationS, r.Error, jsonText(arts))
		}
		b.WriteString(" ON CONFLICT (run_id, cell) DO NOTHING RETURNING id, cell")
		rows, err := tx.QueryContext(ctx, s.q(b.String()), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var cell string
			if err := rows.Scan(&id, &cell); err != nil {
				rows.Close()
				return nil, err
			}
			ids[cell] = id
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// putMetrics stores the metrics of the cells putCells inserted. A cell
// that was already there keeps its metrics: a cell is written once.
func (s *Store) putMetrics(ctx context.Context, tx execer, recs []results.Record, ids map[string]int64) error {
	var args []any
	n := 0
	// The full-size statement is prepared once: parsing a 2 000-row
	// VALUES list per batch cost as much as running it.
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	flush := func() error {
		if n == 0 {
			return nil
		}
		// The cells are new (putCells returned their ids): their metrics
		// cannot conflict.
		q := s.q("INSERT INTO metrics (cell_id, metric, value) VALUES (?,?,?)" + strings.Repeat(",(?,?,?)", n-1))
		var err error
		if n == metricBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, q); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		args, n = args[:0], 0
		return err
	}
	for i := range recs {
		id, ok := ids[recs[i].Cell]
		if !ok {
			continue
		}
		names := make([]string, 0, len(recs[i].Metrics))
		for m := range recs[i].Metrics {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			v := recs[i].Metrics[m]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			args = append(args, id, m, v)
			n++
			if n == metricBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// Reanalyze recomputes run's verdicts with the analysis package, under a
// lock on the run so that concurrent shard imports serialise here and the
// last one sees every cell. plan is one shard's plan (nil: read the run's
// first shard again); when recs already hold every cell the store has of
// the run they are used as they are, otherwise the cells are read back.
// It returns the number of verdicts stored.
func (s *Store) Reanalyze(ctx context.Context, run string, plan *results.Plan, recs []results.Record) (int, []string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, s.fail("analysing run "+run, err)
	}
	defer tx.Rollback()
	lock := "SELECT id FROM runs WHERE id = ?"
	if s.postgres {
		lock += " FOR UPDATE"
	}
	var got string
	if err := tx.QueryRowContext(ctx, s.q(lock), run).Scan(&got); err != nil {
		return 0, nil, s.fail("analysing run "+run, err)
	}
	var dirs []string
	rows, err := tx.QueryContext(ctx, s.q("SELECT dir FROM run_shards WHERE run_id = ? ORDER BY shard"), run)
	if err != nil {
		return 0, nil, s.fail("analysing run "+run, err)
	}
	for rows.Next() {
		var d string
		rows.Scan(&d)
		dirs = append(dirs, d)
	}
	rows.Close()
	if plan == nil {
		if len(dirs) == 0 {
			return 0, nil, exitcode.BadInputf("store %s: %w: run %s has no shard", s.where, ErrUnknown, run)
		}
		if plan, err = results.ReadPlan(dirs[0]); err != nil {
			return 0, nil, err
		}
	}
	var stored int
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM cells WHERE run_id = ?"), run).Scan(&stored); err != nil {
		return 0, nil, s.fail("analysing run "+run, err)
	}
	p := *plan
	if stored != len(recs) {
		recs, err = s.readRecords(ctx, tx, run)
		if err != nil {
			return 0, nil, s.fail("analysing run "+run, err)
		}
	}
	// The configurations of every shard, in the order of the plan's
	// canonical axes (what analysis orders its rows by).
	seen := map[string]bool{}
	p.Configs = nil
	for _, c := range plan.Configs {
		seen[c.ID()] = true
		p.Configs = append(p.Configs, c)
	}
	for _, r := range recs {
		if id := r.Config().ID(); !seen[id] {
			seen[id] = true
			p.Configs = append(p.Configs, r.Config())
		}
	}
	p.Cells = nil
	rep, err := analysis.Analyze(&analysis.Input{Dirs: dirs, Plan: &p, Records: recs}, analysis.Options{})
	if err != nil {
		return 0, []string{fmt.Sprintf("run %s: no verdicts: %s", run, oneLine(err))}, nil
	}
	n, err := s.putVerdicts(ctx, tx, run, rep)
	if err != nil {
		return 0, nil, s.fail("storing the verdicts of run "+run, err)
	}
	return n, nil, s.fail("storing the verdicts of run "+run, tx.Commit())
}

func (s *Store) putVerdicts(ctx context.Context, tx execer, run string, rep *analysis.Report) (int, error) {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM verdicts WHERE run_id = ?"), run); err != nil {
		return 0, err
	}
	gated := map[[3]string]bool{}
	for _, c := range rep.Changes {
		gated[[3]string{c.Commit, c.Config, c.Metric}] = c.Gated
	}
	n := 0
	for _, row := range rep.Rows {
		var base *analysis.Stat
		for i := range row.Stats {
			if row.Stats[i].Commit == rep.Baseline {
				base = &row.Stats[i]
			}
		}
		for _, st := range row.Stats {
			if st.Commit == rep.Baseline {
				continue
			}
			var baseMed *float64
			if base != nil && base.N > 0 {
				baseMed = analysis.Finite(base.Median)
			}
			var med, lo, hi, delta, p *float64
			if st.N > 0 {
				med, lo, hi = analysis.Finite(st.Median), analysis.Finite(st.Lo), analysis.Finite(st.Hi)
			}
			if base != nil && base.N > 0 && st.N > 0 {
				delta, p = analysis.Finite(st.DeltaPct), analysis.Finite(st.P)
			}
			g := 0
			if gated[[3]string{st.Commit, row.Config, row.Metric}] {
				g = 1
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO verdicts (run_id, commit_label, config, metric, verdict, n, baseline_median, median, ci_lo, ci_hi, delta_pct, p, gated, note)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				run, st.Commit, row.Config, row.Metric, st.Verdict, st.N, baseMed, med, lo, hi, delta, p, g, st.Note); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// readRecords reads run's cells back as records (what the analysis
// needs of them: identity, status, metrics).
func (s *Store) readRecords(ctx context.Context, tx execer, run string) ([]results.Record, error) {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT c.id, c.cell, c.commit_label, c.repeat, c.seq, c.status, c.saturated, c.error,
			f.workload, f.clients, f.cpus, f.settings
		FROM cells c JOIN configurations f ON f.id = c.config WHERE c.run_id = ? ORDER BY c.id`), run)
	if err != nil {
		return nil, err
	}
	var recs []results.Record
	index := map[int64]int{}
	for rows.Next() {
		var r results.Record
		var id int64
		var sat int
		var status, settings string
		if err := rows.Scan(&id, &r.Cell, &r.Commit, &r.Repeat, &r.Seq, &status, &sat, &r.Error, &r.Workload, &r.Clients, &r.CPUs, &settings); err != nil {
			rows.Close()
			return nil, err
		}
		r.Status, r.Saturated = results.Status(status), sat == 1
		json.Unmarshal([]byte(settings), &r.Settings)
		r.Metrics = map[string]float64{}
		index[id] = len(recs)
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, s.q(`SELECT m.cell_id, m.metric, m.value FROM metrics m JOIN cells c ON c.id = m.cell_id WHERE c.run_id = ?`), run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var m string
		var v float64
		if err := rows.Scan(&id, &m, &v); err != nil {
			return nil, err
		}
		if i, ok := index[id]; ok {
			recs[i].Metrics[m] = v
		}
	}
	return recs, rows.Err()
}

// sameConfig: the records (sorted by cell name, so a configuration's
// cells are mostly adjacent) have the same configuration.
func sameConfig(a, b *results.Record) bool {
	if a.Workload != b.Workload || a.Clients != b.Clients || a.CPUs != b.CPUs || len(a.Settings) != len(b.Settings) {
		return false
	}
	for k, v := range a.Settings {
		if w, ok := b.Settings[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
