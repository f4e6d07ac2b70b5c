package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
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
// Import reads the plan while the records decode, and hands the records
// to the insert block by block as they come (PostgreSQL copies them at
// once; SQLite sorts them whole first, see sortRun). When the store has
// no cell of the run yet, it analyses the directory beside the insert:
// on two idle cores that takes the analysis (1.1 CPU-s at 100 000
// cells) off the wall time.
func (s *Store) Import(ctx context.Context, dir string) (ImportStats, error) {
	src, err := openSource(dir)
	if err != nil {
		return ImportStats{}, err
	}
	// Nothing is left reading the directory when Import returns.
	defer src.records()
	if err := checkPlan(dir, src.plan); err != nil {
		return ImportStats{}, err
	}
	st := ImportStats{Run: RunID(src.plan)}
	var prior int
	if err := s.db.QueryRowContext(ctx, s.q("SELECT count(*) FROM cells WHERE run_id = ?"), st.Run).Scan(&prior); err != nil {
		return st, s.fail("importing "+dir, err)
	}
	var alone chan analysed
	if prior == 0 {
		alone = make(chan analysed, 1)
		go func() {
			if err := src.records(); err != nil {
				alone <- analysed{err: err}
				return
			}
			alone <- analyse([]analysis.Shard{src.shard()})
		}()
	}
	n, distinct, err := s.putRunCells(ctx, st.Run, src)
	if err != nil {
		return st, err
	}
	st.Warnings = src.warnings
	st.Cells, st.Present = n, distinct-n
	// A run whose verdicts were stored before schema 3 has no gate
	// status (nor geometric means), before schema 5 no roles, before
	// schema 7 no answers (a run of two commits or more has one):
	// analysed again.
	var have, roleless, answers, ncommits int
	var gate string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT (SELECT count(*) FROM verdicts WHERE run_id = ?), (SELECT count(*) FROM verdicts WHERE run_id = ? AND role = ''),
		(SELECT count(*) FROM run_answers WHERE run_id = ?), ncommits, gate FROM runs WHERE id = ?`),
		st.Run, st.Run, st.Run, st.Run).Scan(&have, &roleless, &answers, &ncommits, &gate); err != nil {
		return st, s.fail("importing "+dir, err)
	}
	if st.Cells > 0 || have == 0 || roleless > 0 || gate == "" || (answers == 0 && ncommits > 1) {
		if st.Cells != distinct {
			alone = nil
		}
		n, w, err := s.reanalyze(ctx, st.Run, distinct, alone)
		if err != nil {
			return st, err
		}
		st.Verdicts = n
		st.Warnings = append(st.Warnings, w...)
	}
	return st, nil
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
// and those of its cells (with their metrics) that the store lacks, as
// they are read, and returns how many cells it stored and how many
// distinct cells the directory has.
func (s *Store) putRunCells(ctx context.Context, run string, src *source) (stored, distinct int, err error) {
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
	w := &cellRows{run: run, shard: src.shardID, known: map[string]bool{}}
	for _, c := range src.plan.Configs {
		id := c.ID()
		configs[id], w.known[id] = c, true
	}
	if err := s.putConfigs(ctx, tx, configs); err != nil {
		return fail(err)
	}
	n, err := s.putCells(ctx, conn, tx, src, w)
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
	if err := src.records(); err != nil {
		return 0, 0, err
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
	known      map[string]bool // ids of the configurations stored
	seen       map[string]bool // cells made or left out
	dup        string          // the first cell recorded twice
	prev       *results.Record // the last new record, of configuration prevID
	prevID     string
	buf        []byte
	quotes     metricQuotes
}

// args appends the values of r's row, in cellsColumns' order; cfg is
// its configuration's id.
func (w *cellRows) args(args []any, r *results.Record, cfg string) []any {
	var metrics string
	w.buf, metrics = metricsText(w.buf, r.Metrics, &w.quotes)
	return append(columnArgs(args, r), w.run, w.shard, cfg, artifacts(r), cellDetail(r), metrics)
}

// putCells inserts the cells of src's records (each once, the first
// record of it; those not stored yet) as they are read, their metrics
// with them, and returns how many it inserted: on PostgreSQL by COPY
// into a temporary table and one insert from it in cell name order (two
// processes inserting overlapping cells take the rows' locks in the
// same order and cannot deadlock), on SQLite, whose import holds the
// write lock, by multi-row inserts of the cells the run lacks.
func (s *Store) putCells(ctx context.Context, conn *sql.Conn, tx execer, src *source, w *cellRows) (int, error) {
	width := len(cellColumns(&results.Record{})) + 6
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "CREATE TEMPORARY TABLE cells_in ON COMMIT DROP AS SELECT "+cellsColumns+" FROM cells WITH NO DATA"); err != nil {
			return 0, err
		}
		batches, release, stop := w.batches(src.chunks.next, nil, 0, width, cellBatch)
		defer stop()
		// cells_in has no foreign keys: the configurations are stored
		// before the insert from it.
		configs := map[string]results.Config{}
		var b *batch
		k := 0
		err := copyFrom(ctx, conn, "cells_in", strings.Split(cellsColumns, ", "), pgx.CopyFromFunc(func() ([]any, error) {
			if b == nil || k == len(b.args) {
				// pgx has encoded the rows it was given.
				if b != nil {
					release(b)
				}
				var ok bool
				if b, ok = <-batches; !ok {
					return nil, nil
				}
				maps.Copy(configs, b.configs)
				k = 0
			}
			k += width
			return b.args[k-width : k], nil
		}))
		if err != nil {
			return 0, err
		}
		if err := s.putConfigs(ctx, tx, configs); err != nil {
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
	ins := &batcher{s: s, tx: tx, size: cellBatch, head: "INSERT INTO cells (" + cellsColumns + ") VALUES ", row: "(?" + strings.Repeat(",?", width-1) + ")"}
	defer ins.close()
	batches, release, stop := w.batches(src.chunks.next, present, sortRun, width, cellBatch)
	defer stop()
	stored := 0
	for b := range batches {
		if err := s.putConfigs(ctx, tx, b.configs); err != nil {
			return 0, err
		}
		if err := ins.exec(ctx, len(b.args)/width, b.args); err != nil {
			return 0, err
		}
		stored += len(b.args) / width
		release(b)
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

// verdictWidth is the values of a verdicts row; verdictBatch rows of
// them keep under SQLite's 32 766 parameters. A run's verdicts were
// stored a statement each: on PostgreSQL a round trip each, 0.27–0.39 s
// of wall time for the 2 400 of BenchmarkImport100k, now 0.06–0.08 s
// (3 rounds alternated at load 3.5–4).
const verdictWidth, verdictBatch = 18, 1000

func (s *Store) putVerdicts(ctx context.Context, tx execer, run string, rep *analysis.Report) (int, error) {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM verdicts WHERE run_id = ?"), run); err != nil {
		return 0, err
	}
	gated := map[[3]string]bool{}
	for _, c := range rep.Changes {
		gated[[3]string{c.Commit, c.Config, c.Metric}] = c.Gated
	}
	ins := &batcher{s: s, tx: tx, size: verdictBatch, head: `INSERT INTO verdicts (run_id, commit_label, config, metric, verdict, n, baseline_median, median, ci_lo, ci_hi, delta_pct, p, gated, note, delta_lo, delta_hi, detectable_pct, role)
		VALUES `, row: "(?" + strings.Repeat(", ?", verdictWidth-1) + ")"}
	defer ins.close()
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := ins.exec(ctx, len(args)/verdictWidth, args)
		args = args[:0]
		return err
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
			args = append(args, run, st.Commit, row.Config, row.Metric, string(st.Verdict), st.N, baseMed, med, lo, hi, delta, p, g, st.Note, dlo, dhi, detect, string(st.Role()))
			if n++; len(args) == verdictWidth*verdictBatch {
				if err := flush(); err != nil {
					return 0, err
				}
			}
		}
	}
	return n, flush()
}

// putSummary stores the run-level answer of rep: its pooled tests
// (Geomeans), each commit's answer (putAnswers) and its gate status
// under the store's options (those of analysis.Options{}; a nightly
// job's own options are applied by Nights).
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
	if err := s.putAnswers(ctx, tx, run, rep); err != nil {
		return err
	}
	gate := rep.Gate()
	detail := ""
	if gate != nil {
		detail = text.OneLine(gate.Error())
	}
	_, err := tx.ExecContext(ctx, s.q("UPDATE runs SET gate = ?, gate_detail = ? WHERE id = ?"), string(analysis.GateStatus(gate)), detail, run)
	return err
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
