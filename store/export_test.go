package store

import (
	"context"
	"fmt"
	"testing"
)

// DowngradeTo5 turns a store of schema 6 back into the one version 5
// wrote, as an older abtest left it: each cell's metrics as rows of
// cell_metrics by metric id, read through the view of version 2, and no
// metrics column in cells.
func DowngradeTo5(ctx context.Context, s *Store) error {
	for _, st := range []string{
		`CREATE TABLE metric_names (id {{ID}}, name TEXT NOT NULL UNIQUE)`,
		`CREATE TABLE cell_metrics (
			cell_id BIGINT NOT NULL,
			metric_id BIGINT NOT NULL,
			value DOUBLE PRECISION NOT NULL,
			PRIMARY KEY (cell_id, metric_id)){{WITHOUT_ROWID}}`,
		`INSERT INTO metric_names (name) SELECT DISTINCT metric FROM metrics ORDER BY metric`,
		`INSERT INTO cell_metrics (cell_id, metric_id, value)
			SELECT m.cell_id, n.id, m.value FROM metrics m JOIN metric_names n ON n.name = m.metric`,
		`DROP VIEW metrics`,
		`ALTER TABLE cells DROP COLUMN metrics`,
		`CREATE VIEW metrics AS
			SELECT m.cell_id, n.name AS metric, m.value FROM cell_metrics m JOIN metric_names n ON n.id = m.metric_id`,
		`DELETE FROM schema_version WHERE version = 6`,
	} {
		if _, err := s.db.ExecContext(ctx, s.engine().Replace(st)); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// ImportWhole imports dir as Import did before it stored cells.jsonl's
// records as they were decoded: every record read first, then the cells
// inserted in name order.
func ImportWhole(ctx context.Context, s *Store, dir string) (ImportStats, error) {
	readWhole = true
	defer func() { readWhole = false }()
	return s.Import(ctx, dir)
}

// SetSortRun sets how many cells an import makes rows of in name order
// at a time, until the test ends.
func SetSortRun(t testing.TB, n int) {
	old := sortRun
	sortRun = n
	t.Cleanup(func() { sortRun = old })
}
