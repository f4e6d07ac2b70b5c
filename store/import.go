package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
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
//
// Import reads the plan beside the records and, when the store has no
// cell of the run yet, analyses the directory beside the insert: on two
// idle cores that takes the analysis (1.1 CPU-s at 100 000 cells) off the
// wall time.
func (s *Store) Import(ctx context.Context, dir string) (ImportStats, error) {
	src, err := readSource(dir)
	if err != nil {
		return ImportStats{}, err
	}
	st := ImportStats{Run: RunID(src.plan), Warnings: src.warnings}
	var prior int
	if err := s.db.QueryRowContext(ctx, s.q("SELECT count(*) FROM cells WHERE run_id = ?"), st.Run).Scan(&prior); err != nil {
		return st, s.fail("importing "+dir, err)
	}
	var alone chan analysed
	if prior == 0 {
		alone = make(chan analysed, 1)
		go func() { alone <- analyse([]analysis.Shard{src.shard()}) }()
	}
	n, err := s.putRunCells(ctx, st.Run, src)
	if err != nil {
		return st, err
	}
	st.Cells, st.Present = n, len(src.recs)-n
	// A run whose verdicts were stored before schema 3 has no gate
	// status (nor geometric means), before schema 5 no roles: analysed
	// again.
	var have, roleless int
	var gate string
	if err := s.db.QueryRowContext(ctx, s.q("SELECT (SELECT count(*) FROM verdicts WHERE run_id = ?), (SELECT count(*) FROM verdicts WHERE run_id = ? AND role = ''), gate FROM runs WHERE id = ?"),
		st.Run, st.Run, st.Run).Scan(&have, &roleless, &gate); err != nil {
		return st, s.fail("importing "+dir, err)
	}
	if st.Cells > 0 || have == 0 || roleless > 0 || gate == "" {
		if st.Cells != len(src.recs) {
			alone = nil
		}
		n, w, err := s.reanalyze(ctx, st.Run, len(src.recs), alone)
		if err != nil {
			return st, err
		}
		st.Verdicts = n
		st.Warnings = append(st.Warnings, w...)
	}
	return st, nil
}

// source is a results directory as an import reads it.
type source struct {
	dir, abs string
	// planText is plan.json as written, stored whole.
	planText []byte
	plan     *results.Plan
	shardID  string
	recs     []results.Record
	warnings []string
}

// readSource reads dir's plan and records (the first of each cell), the
// plan (18 MB at 100 000 cells) beside the records (85 MB).
func readSource(dir string) (*source, error) {
	src := &source{dir: dir}
	var err error
	if src.abs, err = filepath.Abs(dir); err != nil {
		return nil, exitcode.Failure(err)
	}
	var perr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := filepath.Join(dir, results.PlanFile)
		if src.planText, perr = os.ReadFile(path); perr != nil {
			// ReadPlan's error says what is wrong with the directory.
			if _, err := results.ReadPlan(dir); err != nil {
				perr = err
			}
			return
		}
		src.plan, perr = results.DecodePlan(src.planText, path)
	}()
	src.recs, src.warnings, err = results.ReadRecords(dir)
	<-done
	if perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	src.recs = firstOfEach(src.recs)
	src.shardID = src.plan.Shard
	if src.shardID == "" {
		src.shardID = "1/1"
	}
	return src, nil
}

// firstOfEach keeps the first record of each cell, in place, as
// analysis.Merge does: a cell twice in cells.jsonl is stored once, with
// the values the analysis of the directory uses.
func firstOfEach(recs []results.Record) []results.Record {
	seen := make(map[string]bool, len(recs))
	kept := recs[:0]
	for i := range recs {
		if !seen[recs[i].Cell] {
			seen[recs[i].Cell] = true
			kept = append(kept, recs[i])
		}
	}
	clear(recs[len(kept):])
	return kept
}

// shard is the directory as the analysis merges it.
func (src *source) shard() analysis.Shard {
	return analysis.Shard{Dir: src.abs, Plan: src.plan, Records: src.recs, Warnings: src.warnings}
}

// analysed is a report or why there is none.
type analysed struct {
	rep *analysis.Report
	err error
}

func analyse(shards []analysis.Shard) analysed {
	in, err := analysis.Merge(shards)
	if err != nil {
		return analysed{err: err}
	}
	rep, err := analysis.Analyze(in, analysis.Options{})
	return analysed{rep, err}
}

// putRunCells stores, in one transaction, the run, its configurations,
// and those of its cells (with their metrics) that the store lacks, and
// returns how many cells it stored.
func (s *Store) putRunCells(ctx context.Context, run string, src *source) (int, error) {
	fail := func(err error) (int, error) { return 0, s.fail("importing "+src.dir, err) }
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
	configs, cfgIDs := recordConfigs(src.plan, src.recs)
	if err := s.putConfigs(ctx, tx, configs); err != nil {
		return fail(err)
	}
	w := &cellRows{run: run, shard: src.shardID, cfgIDs: cfgIDs}
	n, err := s.putCells(ctx, conn, tx, src.recs, w)
	if err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return n, nil
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
		c := recs[i].Config
		cfgIDs[i] = c.ID()
		configs[cfgIDs[i]] = c
	}
	return configs, cfgIDs
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
	cfgIDs     []string // by record
	buf        []byte
	quotes     metricQuotes
}

// args appends the values of recs[i]'s row, in cellsColumns' order.
func (w *cellRows) args(args []any, recs []results.Record, i int) []any {
	r := &recs[i]
	var metrics string
	w.buf, metrics = metricsText(w.buf, r.Metrics, &w.quotes)
	return append(columnArgs(args, r), w.run, w.shard, w.cfgIDs[i], artifacts(r), cellDetail(r), metrics)
}

// batches makes the rows of the records idx lists, in its order, on a
// goroutine of its own while the caller stores the batch before: making
// a row (its metrics text, detail, artifacts, time) was a fifth of a
// SQLite insert's CPU. A batch is the args of up to size rows of width
// values; the caller gives each back (release) when it is done with it,
// and calls stop when it stops reading, at the end or on an error.
func (w *cellRows) batches(recs []results.Record, idx []int32, width, size int) (out <-chan []any, release func([]any), stop func()) {
	ch := make(chan []any, 1)
	// Three buffers: the one being made, the one in ch, the one stored;
	// free has room for all of them, so that release never waits.
	free := make(chan []any, 3)
	free <- make([]any, 0, width*size)
	free <- make([]any, 0, width*size)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		args := make([]any, 0, width*size)
		for _, i := range idx {
			if args = w.args(args, recs, int(i)); len(args) < width*size {
				continue
			}
			select {
			case ch <- args:
			case <-done:
				return
			}
			select {
			case args = <-free:
				args = args[:0]
			case <-done:
				return
			}
		}
		if len(args) > 0 {
			select {
			case ch <- args:
			case <-done:
			}
		}
	}()
	return ch, func(b []any) { free <- b }, func() { close(done) }
}

// putCells inserts recs (one per cell; those not stored yet), their
// metrics with them, and returns how many it inserted: on PostgreSQL by
// COPY into a temporary table and one insert from it in cell name order
// (two processes inserting overlapping cells take the rows' locks in the
// same order and cannot deadlock), on SQLite, whose import holds the
// write lock, by multi-row inserts of the cells the run lacks.
func (s *Store) putCells(ctx context.Context, conn *sql.Conn, tx execer, recs []results.Record, w *cellRows) (int, error) {
	width := len(cellColumns(&results.Record{})) + 6
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "CREATE TEMPORARY TABLE cells_in ON COMMIT DROP AS SELECT "+cellsColumns+" FROM cells WITH NO DATA"); err != nil {
			return 0, err
		}
		batches, release, stop := w.batches(recs, byName(recs, nil), width, cellBatch)
		defer stop()
		var batch []any
		k := 0
		err := copyFrom(ctx, conn, "cells_in", strings.Split(cellsColumns, ", "), pgx.CopyFromFunc(func() ([]any, error) {
			if k == len(batch) {
				// pgx has encoded the rows it was given.
				if batch != nil {
					release(batch)
				}
				var ok bool
				if batch, ok = <-batches; !ok {
					return nil, nil
				}
				k = 0
			}
			k += width
			return batch[k-width : k], nil
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
	rows, err := tx.QueryContext(ctx, "SELECT id, cell FROM cells WHERE run_id = ?", w.run)
	if err != nil {
		return 0, err
	}
	present := map[string]int64{}
	if err := scanIDs(rows, present); err != nil {
		return 0, err
	}
	b := &batcher{s: s, tx: tx, size: cellBatch, head: "INSERT INTO cells (" + cellsColumns + ") VALUES ", row: "(?" + strings.Repeat(",?", width-1) + ")"}
	defer b.close()
	batches, release, stop := w.batches(recs, byName(recs, present), width, cellBatch)
	defer stop()
	stored := 0
	for args := range batches {
		if err := b.exec(ctx, len(args)/width, args); err != nil {
			return 0, err
		}
		stored += len(args) / width
		release(args)
	}
	return stored, nil
}

// byName lists the records whose cells present lacks, in cell name
// order: the order of the cells' unique index, which SQLite then fills
// at its end (inserting in the order the cells ran cost it 0.7 CPU-s
// more at 100 000 cells) and PostgreSQL's insert sorts by. The records
// stay in their order (moving them sorted 47 MB), for the analysis
// beside.
func byName(recs []results.Record, present map[string]int64) []int32 {
	idx := make([]int32, 0, len(recs))
	for i := range recs {
		if _, ok := present[recs[i].Cell]; !ok {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(recs[a].Cell, recs[b].Cell) })
	return idx
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

// reanalyze recomputes run's verdicts with the analysis package, under a
// lock on the run so that concurrent shard imports serialise here and the
// last one sees every cell. alone, when not nil, is the analysis of the
// importing directory by itself: it is the run's when the run has no
// other cell than that directory's n and no other shard. It returns the
// number of verdicts stored.
func (s *Store) reanalyze(ctx context.Context, run string, n int, alone <-chan analysed) (int, []string, error) {
	fail := func(err error) (int, []string, error) { return 0, nil, s.fail("analysing run "+run, err) }
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	lock := "SELECT id FROM runs WHERE id = ?"
	if s.postgres {
		lock += " FOR UPDATE"
	}
	var got string
	if err := tx.QueryRowContext(ctx, s.q(lock), run).Scan(&got); err != nil {
		return fail(err)
	}
	var stored, shards int
	if err := tx.QueryRowContext(ctx, s.q("SELECT (SELECT count(*) FROM cells WHERE run_id = ?), (SELECT count(*) FROM run_shards WHERE run_id = ?)"), run, run).Scan(&stored, &shards); err != nil {
		return fail(err)
	}
	var a analysed
	if alone != nil && stored == n && shards == 1 {
		a = <-alone
	} else {
		// A run the store cannot rebuild (a shard stored before schema 2,
		// plans that differ) keeps its cells: no verdicts, said, as when
		// the analysis itself fails.
		in, err := s.input(ctx, tx, run)
		a = analysed{err: err}
		if err == nil {
			a.rep, a.err = analysis.Analyze(in, analysis.Options{})
		}
	}
	if a.err != nil {
		return 0, []string{fmt.Sprintf("run %s: no verdicts: %s", run, text.OneLine(a.err.Error()))}, nil
	}
	nv, err := s.putVerdicts(ctx, tx, run, a.rep)
	if err == nil {
		err = s.putSummary(ctx, tx, run, a.rep)
	}
	if err != nil {
		return 0, nil, s.fail("storing the verdicts of run "+run, err)
	}
	return nv, nil, s.fail("storing the verdicts of run "+run, tx.Commit())
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
			var med, lo, hi, delta, dlo, dhi, p, detect *float64
			if st.N > 0 {
				med, lo, hi = analysis.Finite(st.Median), analysis.Finite(st.Lo), analysis.Finite(st.Hi)
			}
			if base != nil && base.N > 0 && st.N > 0 {
				delta, p = analysis.Finite(st.DeltaPct), analysis.Finite(st.P)
				dlo, dhi = analysis.Finite(st.DeltaLo), analysis.Finite(st.DeltaHi)
				if st.DetectablePct > 0 {
					detect = analysis.Finite(st.DetectablePct)
				}
			}
			g := 0
			if gated[[3]string{st.Commit, row.Config, row.Metric}] {
				g = 1
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO verdicts (run_id, commit_label, config, metric, verdict, n, baseline_median, median, ci_lo, ci_hi, delta_pct, p, gated, note, delta_lo, delta_hi, detectable_pct, role)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				run, st.Commit, row.Config, row.Metric, string(st.Verdict), st.N, baseMed, med, lo, hi, delta, p, g, st.Note, dlo, dhi, detect, string(st.Role())); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// putSummary stores the run-level answer of rep: its pooled tests
// (Geomeans) and its gate status under the store's options (those of
// analysis.Options{}; a nightly job's own options are applied by Nights).
func (s *Store) putSummary(ctx context.Context, tx execer, run string, rep *analysis.Report) error {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM run_geomeans WHERE run_id = ?"), run); err != nil {
		return err
	}
	for _, g := range rep.Geomeans {
		var detect *float64
		if g.DetectablePct > 0 {
			detect = analysis.Finite(g.DetectablePct)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_geomeans (run_id, commit_label, metric, ratio, lo, hi, p, verdict, configs, min_effect_pct, detectable_pct)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			run, g.Commit, g.Metric, analysis.Finite(g.Ratio), analysis.Finite(g.Lo), analysis.Finite(g.Hi), analysis.Finite(g.P),
			string(g.Verdict), g.Configs, analysis.Finite(g.MinEffectPct), detect); err != nil {
			return err
		}
	}
	gate := rep.Gate()
	detail := ""
	if gate != nil {
		detail = text.OneLine(gate.Error())
	}
	_, err := tx.ExecContext(ctx, s.q("UPDATE runs SET gate = ?, gate_detail = ? WHERE id = ?"), string(analysis.GateStatus(gate)), detail, run)
	return err
}

// configPoint is what the configurations table's point column holds:
// a configuration's fields of a sweep and its condition.
type configPoint struct {
	Rate      float64           `json:"rate,omitempty"`
	Vars      map[string]string `json:"vars,omitempty"`
	Condition string            `json:"condition,omitempty"`
}

// pointText is c's point column: ” for a closed loop without
// variables or condition, as every configuration stored before had.
func pointText(c results.Config) string {
	if c.Rate == 0 && len(c.Vars) == 0 && c.Condition == "" {
		return ""
	}
	return jsonText(configPoint{c.Rate, c.Vars, c.Condition})
}

// sameConfig: the records (in the order they ran, a configuration's
// cells mostly adjacent) have the same configuration.
func sameConfig(a, b *results.Record) bool {
	if a.Workload != b.Workload || a.Clients != b.Clients || a.CPUs != b.CPUs || len(a.Settings) != len(b.Settings) ||
		a.Rate != b.Rate || a.Condition != b.Condition || !maps.Equal(a.Vars, b.Vars) {
		return false
	}
	for k, v := range a.Settings {
		if w, ok := b.Settings[k]; !ok || w != v {
			return false
		}
	}
	return true
}

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
