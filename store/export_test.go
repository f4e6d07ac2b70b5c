package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// DowngradeTo5 turns a store of schema 9 back into the one version 5
// wrote, as an older abtest left it: each cell's metrics as rows of
// cell_metrics by metric id, read through the view of version 2, and no
// metrics column in cells, but its (empty) cache of the analysis.
func DowngradeTo5(ctx context.Context, s *Store) error {
	// Version 2's first statements make the tables and fill them from
	// the metrics (then a table, now the view); the view goes last.
	v2 := migrations[1]
	if v2.version != 2 {
		return fmt.Errorf("migrations[1] is version %d, not 2", v2.version)
	}
	view := slices.IndexFunc(v2.stmts, func(st string) bool { return strings.HasPrefix(st, "CREATE VIEW metrics") })
	stmts := append(slices.Clone(v2.stmts[:4]), `DROP VIEW metrics`, `ALTER TABLE cells DROP COLUMN metrics`, v2.stmts[view])
	// Version 5's cache of the analysis, empty, as versions 1, 3 and 5
	// made it.
	v1 := slices.IndexFunc(migrations[0].stmts, func(st string) bool { return strings.HasPrefix(st, "CREATE TABLE verdicts") })
	stmts = append(stmts, migrations[0].stmts[v1])
	stmts = append(append(append(stmts, migrations[2].stmts...), migrations[4].stmts...), `DELETE FROM schema_version WHERE version >= 6`)
	for _, st := range stmts {
		if _, err := s.db.ExecContext(ctx, s.engine().Replace(st)); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// Version returns the store's schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v)
	return v, s.fail("reading the schema version", err)
}
