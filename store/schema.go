package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// migration is one step of the schema. Statements are written once for
// both engines: {{ID}} is the auto-numbered key column, the only type the
// two spell differently, {{WITHOUT_ROWID}} makes SQLite keep a table
// in its primary key's B-tree alone (the metrics, 12 rows a cell: one
// tree to write instead of two), {{JSON_OBJECT_AGG}} and {{JSON_EACH}}
// are the JSON functions the engines name differently. Times are RFC
// 3339 UTC text, which sorts.
type migration struct {
	version int
	what    string
	stmts   []string
}

// migrations in order; a store at version v runs those after v. Never
// edit a released one: add the next.
var migrations = []migration{
	{1, "runs, commits, hosts, configurations, cells, metrics, verdicts, annotations", []string{
		`CREATE TABLE hosts (
			fingerprint TEXT PRIMARY KEY,
			hostname TEXT NOT NULL,
			cpu TEXT NOT NULL,
			nproc INTEGER NOT NULL,
			memory_mb INTEGER NOT NULL,
			kernel TEXT NOT NULL,
			info TEXT NOT NULL)`,
		`CREATE TABLE runs (
			id TEXT PRIMARY KEY,
			created TEXT NOT NULL,
			baseline TEXT NOT NULL,
			ncommits INTEGER NOT NULL,
			abtest_version TEXT NOT NULL,
			options TEXT NOT NULL,
			metric_defs TEXT NOT NULL,
			imported_at TEXT NOT NULL)`,
		`CREATE TABLE run_shards (
			run_id TEXT NOT NULL REFERENCES runs(id),
			shard TEXT NOT NULL,
			dir TEXT NOT NULL,
			host TEXT NOT NULL REFERENCES hosts(fingerprint),
			created TEXT NOT NULL,
			doctor TEXT NOT NULL,
			PRIMARY KEY (run_id, shard))`,
		`CREATE TABLE commits (
			run_id TEXT NOT NULL REFERENCES runs(id),
			label TEXT NOT NULL,
			position INTEGER NOT NULL,
			ref TEXT NOT NULL,
			sha TEXT NOT NULL,
			identity TEXT NOT NULL,
			patches TEXT NOT NULL,
			install TEXT NOT NULL,
			build TEXT NOT NULL,
			fingerprint TEXT NOT NULL,
			version TEXT NOT NULL,
			build_type TEXT NOT NULL,
			PRIMARY KEY (run_id, label))`,
		`CREATE INDEX commits_sha ON commits (sha)`,
		`CREATE TABLE configurations (
			id TEXT PRIMARY KEY,
			workload TEXT NOT NULL,
			clients INTEGER NOT NULL,
			cpus INTEGER NOT NULL,
			settings TEXT NOT NULL)`,
		`CREATE TABLE cells (
			id {{ID}},
			run_id TEXT NOT NULL REFERENCES runs(id),
			cell TEXT NOT NULL,
			shard TEXT NOT NULL,
			commit_label TEXT NOT NULL,
			config TEXT NOT NULL REFERENCES configurations(id),
			repeat INTEGER NOT NULL,
			seq INTEGER NOT NULL,
			status TEXT NOT NULL,
			saturated INTEGER NOT NULL,
			started_at TEXT NOT NULL,
			duration_s DOUBLE PRECISION NOT NULL,
			error TEXT NOT NULL,
			artifacts TEXT NOT NULL,
			UNIQUE (run_id, cell))`,
		`CREATE INDEX cells_config ON cells (config, run_id)`,
		`CREATE TABLE metrics (
			cell_id BIGINT NOT NULL REFERENCES cells(id),
			metric TEXT NOT NULL,
			value DOUBLE PRECISION NOT NULL,
			PRIMARY KEY (cell_id, metric)){{WITHOUT_ROWID}}`,
		`CREATE TABLE verdicts (
			run_id TEXT NOT NULL REFERENCES runs(id),
			commit_label TEXT NOT NULL,
			config TEXT NOT NULL,
			metric TEXT NOT NULL,
			verdict TEXT NOT NULL,
			n INTEGER NOT NULL,
			baseline_median DOUBLE PRECISION,
			median DOUBLE PRECISION,
			ci_lo DOUBLE PRECISION,
			ci_hi DOUBLE PRECISION,
			delta_pct DOUBLE PRECISION,
			p DOUBLE PRECISION,
			gated INTEGER NOT NULL,
			note TEXT NOT NULL,
			PRIMARY KEY (run_id, commit_label, config, metric))`,
		`CREATE TABLE annotations (
			id {{ID}},
			sha TEXT NOT NULL,
			metric TEXT NOT NULL,
			config TEXT NOT NULL,
			note TEXT NOT NULL,
			created TEXT NOT NULL,
			UNIQUE (sha, metric, config, note))`,
	}},
	// Version 2: metrics by integer id, without foreign keys. Inserting
	// the 1.2 million metric rows of 100 000 cells took 1.31 CPU-s as
	// (cell, name, value) with the key to cells, 1.13 as (cell, id,
	// value) with keys to cells and names, 0.68 with no key checked
	// (same 2 000-row batches, SQLite, load 10): the import writes a
	// cell's metrics in the transaction that wrote the cell, with ids it
	// just read, so the checks bought nothing. The view keeps the old
	// table's name and columns for queries. A shard's plan.json is kept
	// whole, and a cell's record but for its columns and series as its
	// detail, so that a run can be analysed from the store alone (abtest
	// analyze --store); configurations say whether they count
	// instructions.
	{2, "metric ids; plans, cell details and instruction configurations kept for analysis from the store", []string{
		`CREATE TABLE metric_names (
			id {{ID}},
			name TEXT NOT NULL UNIQUE)`,
		`CREATE TABLE cell_metrics (
			cell_id BIGINT NOT NULL,
			metric_id BIGINT NOT NULL,
			value DOUBLE PRECISION NOT NULL,
			PRIMARY KEY (cell_id, metric_id)){{WITHOUT_ROWID}}`,
		`INSERT INTO metric_names (name) SELECT DISTINCT metric FROM metrics ORDER BY metric`,
		`INSERT INTO cell_metrics (cell_id, metric_id, value)
			SELECT m.cell_id, n.id, m.value FROM metrics m JOIN metric_names n ON n.name = m.metric`,
		`DROP TABLE metrics`,
		`CREATE VIEW metrics AS
			SELECT m.cell_id, n.name AS metric, m.value FROM cell_metrics m JOIN metric_names n ON n.id = m.metric_id`,
		`ALTER TABLE configurations ADD COLUMN instructions INTEGER NOT NULL DEFAULT 0`,
		// Backfills the configurations stored before the column: the
		// only place an id is parsed; queries read the column.
		`UPDATE configurations SET instructions = 1 WHERE id LIKE '%/instr/%'`,
		`ALTER TABLE run_shards ADD COLUMN plan TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE cells ADD COLUMN detail TEXT NOT NULL DEFAULT ''`,
	}},
	// Version 3: what the dashboard's compare page opens with. A
	// verdict keeps the interval of its change (not only of the
	// commit's median) and, when unknown, the smallest change the run
	// could have detected; a run keeps its pooled run-level tests
	// (analysis.Report.Geomeans) and its gate status. A run stored
	// before has gate '' and is analysed again on its next import.
	{3, "verdicts keep the change's interval and detectable change; runs keep their geometric means and gate status", []string{
		`ALTER TABLE verdicts ADD COLUMN delta_lo DOUBLE PRECISION`,
		`ALTER TABLE verdicts ADD COLUMN delta_hi DOUBLE PRECISION`,
		`ALTER TABLE verdicts ADD COLUMN detectable_pct DOUBLE PRECISION`,
		`ALTER TABLE runs ADD COLUMN gate TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN gate_detail TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE run_geomeans (
			run_id TEXT NOT NULL REFERENCES runs(id),
			commit_label TEXT NOT NULL,
			metric TEXT NOT NULL,
			ratio DOUBLE PRECISION,
			lo DOUBLE PRECISION,
			hi DOUBLE PRECISION,
			p DOUBLE PRECISION,
			verdict TEXT NOT NULL,
			configs INTEGER NOT NULL,
			min_effect_pct DOUBLE PRECISION,
			detectable_pct DOUBLE PRECISION,
			PRIMARY KEY (run_id, commit_label, metric))`,
	}},
	// Version 4: a configuration's point in a sweep and its condition
	// (results.Config's Rate, Vars, Condition), as JSON; '' for the
	// configurations before them (a closed loop, no variables, none).
	{4, "configurations keep their offered rate, pgbench variables and condition", []string{
		`ALTER TABLE configurations ADD COLUMN point TEXT NOT NULL DEFAULT ''`,
	}},
	// Version 5: a verdict's role in its commit's answer (results.Role:
	// gated, untested, report-only, mirrored), which the dashboard counts
	// by as the report does; gated says only whether the row gated the
	// run. A verdict stored before has role '' and its run is analysed
	// again on its next import.
	{5, "verdicts keep their role in the commit's answer", []string{
		`ALTER TABLE verdicts ADD COLUMN role TEXT NOT NULL DEFAULT ''`,
	}},
	// Version 6: a cell's metrics are one column of its row, a JSON
	// object by name ({"latency_avg_ms":0.8,"tps":1234.5}; '{}' for none),
	// instead of a row each in cell_metrics: the 1.2 million rows of
	// 100 000 cells were a third of a SQLite import's CPU (1.7 of 6.1
	// CPU-s), the column costs one field of the cell's insert. The
	// metrics view still has a row per cell and metric, for history
	// queries and anyone's SQL; both engines' JSON keeps a double exactly
	// (SQLite ≥ 3.43 writes 17 digits where 15 do not round-trip).
	{6, "a cell's metrics in a column of its row; the metrics view reads them from there", []string{
		`ALTER TABLE cells ADD COLUMN metrics TEXT NOT NULL DEFAULT '{}'`,
		`UPDATE cells SET metrics = (SELECT {{JSON_OBJECT_AGG}}(n.name, m.value ORDER BY n.name)
			FROM cell_metrics m JOIN metric_names n ON n.id = m.metric_id WHERE m.cell_id = cells.id)
			WHERE id IN (SELECT cell_id FROM cell_metrics)`,
		`DROP VIEW metrics`,
		`DROP TABLE cell_metrics`,
		`DROP TABLE metric_names`,
		`CREATE VIEW metrics AS
			SELECT c.id AS cell_id, j.key AS metric, CAST(j.value AS DOUBLE PRECISION) AS value FROM cells c, {{JSON_EACH}}(c.metrics) j`,
	}},
	// Version 7: each commit's answer as its report's summary counts it
	// (analysis.Summary), and a line naming what changed: the dashboard
	// counted the stored rows itself and disagreed with the report where
	// a row's role was lost, and had no words for a run on the index. A
	// run stored before has no answers and is analysed again on its next
	// import.
	{7, "runs keep each commit's answer: the report's summary counts and a line naming what changed", []string{
		`CREATE TABLE run_answers (
			run_id TEXT NOT NULL REFERENCES runs(id),
			commit_label TEXT NOT NULL,
			better INTEGER NOT NULL,
			worse INTEGER NOT NULL,
			same INTEGER NOT NULL,
			unknown INTEGER NOT NULL,
			incomplete INTEGER NOT NULL,
			higher INTEGER NOT NULL,
			lower INTEGER NOT NULL,
			behind INTEGER NOT NULL,
			no_change_pct DOUBLE PRECISION,
			detectable_pct DOUBLE PRECISION,
			line TEXT NOT NULL,
			PRIMARY KEY (run_id, commit_label))`,
	}},
	// Version 8: the verdicts, pooled tests, answers and gate of a run
	// are a cache of its analysis, written when a reader (the dashboard,
	// history, nightly) finds it missing or of another analysis version
	// (history.Refresh), so a change to the statistics needs no import
	// again. A run judged before has no row here and is judged on its
	// next read; its variance components (analysis.Report.Noise) are
	// kept as JSON.
	{8, "the analysis of a run is a cache tagged with the analysis version that judged it", []string{
		`CREATE TABLE run_judged (
			run_id TEXT PRIMARY KEY REFERENCES runs(id),
			analysis_version TEXT NOT NULL,
			judged_at TEXT NOT NULL,
			noise TEXT NOT NULL)`,
	}},
	// Version 9: the store keeps no analysis. Its only reader, the
	// dashboard, judged every run it wrote anyway (history.Judge), so
	// the cache of versions 3–8 never saved a judgement and a stale one
	// cost two; the index and the run page now read one report.
	{9, "the analysis of a run is no longer stored: readers judge it", []string{
		`DROP TABLE run_judged`,
		`DROP TABLE run_answers`,
		`DROP TABLE run_geomeans`,
		`DROP TABLE verdicts`,
		`ALTER TABLE runs DROP COLUMN gate`,
		`ALTER TABLE runs DROP COLUMN gate_detail`,
	}},
}

// SchemaVersion is the schema this binary writes.
var SchemaVersion = migrations[len(migrations)-1].version

// migrate brings the schema to SchemaVersion, in one transaction that
// concurrent openers of a new store serialise on (an advisory lock on
// PostgreSQL, SQLite's write lock taken at BEGIN).
// current refuses a store whose schema is not this binary's.
func (s *Store) current(ctx context.Context) error {
	var cur int
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&cur); err != nil {
		return s.fail("reading the schema version", err)
	}
	if cur > SchemaVersion {
		return s.newer(cur)
	}
	if cur < SchemaVersion {
		return fmt.Errorf("store %s: schema version %d, this abtest migrates it to %d on its next run that is not a dry run", s.where, cur, SchemaVersion)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	engine := s.engine()
	// A store that is already current is only read: no write lock.
	var cur int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&cur)
	if err == nil && cur == SchemaVersion {
		return nil
	}
	if err == nil && cur > SchemaVersion {
		return s.newer(cur)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("migrating", err)
	}
	defer tx.Rollback()
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7358190246)"); err != nil {
			return s.fail("migrating", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, what TEXT NOT NULL, applied_at TEXT NOT NULL)"); err != nil {
		return s.fail("migrating", err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&cur); err != nil {
		return s.fail("migrating", err)
	}
	if cur > SchemaVersion {
		return s.newer(cur)
	}
	for _, m := range migrations {
		if m.version <= cur {
			continue
		}
		for _, st := range m.stmts {
			if _, err := tx.ExecContext(ctx, engine.Replace(st)); err != nil {
				return s.fail(fmt.Sprintf("migrating to version %d", m.version), err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO schema_version (version, what, applied_at) VALUES (?, ?, ?)"),
			m.version, m.what, now()); err != nil {
			return s.fail("migrating", err)
		}
	}
	return s.fail("migrating", tx.Commit())
}

// engine spells a migration's statement for the store's engine.
func (s *Store) engine() *strings.Replacer {
	if s.postgres {
		// json_each_text of a text column cast to json: the column is
		// text on both engines, and COPY need not parse it.
		return strings.NewReplacer("{{ID}}", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "{{WITHOUT_ROWID}}", "",
			"{{JSON_OBJECT_AGG}}", "json_object_agg", "{{JSON_EACH}}(c.metrics)", "json_each_text(c.metrics::json)")
	}
	return strings.NewReplacer("{{ID}}", "INTEGER PRIMARY KEY", "{{WITHOUT_ROWID}}", " WITHOUT ROWID",
		"{{JSON_OBJECT_AGG}}", "json_group_object", "{{JSON_EACH}}", "json_each")
}

func (s *Store) newer(v int) error {
	return exitcode.BadInputf("store %s: %w: schema version %d, this abtest knows up to %d; use a newer abtest", s.where, ErrNewerSchema, v, SchemaVersion)
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// execer is a transaction or the database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}
