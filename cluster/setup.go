package cluster

// Setup SQL (matrix --setup-sql): SQL run on a cluster's benchmark
// database before the cells that need it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/results"
)

// SetupFile, in a data directory, is the setup SQL last run there, as
// run: a data directory made anew has none.
const SetupFile = "abtest-setup.sql"

// RunSetup runs sql (its values substituted already) on the benchmark
// database of the running cluster st, unless it is the setup SQL last
// run in st's data directory: a new cluster gets it once, and a cluster
// whose configuration gives it other values (an extension's setting as
// an axis) gets it again. It reports whether it ran. An error names
// what (file: the file the SQL came from) and the line that failed.
func (m *Manager) RunSetup(ctx context.Context, st *State, file, sql string) (bool, error) {
	done := filepath.Join(st.DataDir, SetupFile)
	if prev, err := m.readTrusted(done); err == nil && string(prev) == sql {
		return false, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if m.Run.DryRun {
		m.Run.Note("run setup SQL %s on cluster %s", file, st.Name)
		return true, nil
	}
	// The old record goes first: SQL that fails half-way has changed
	// the database, and must run again before the next cell.
	if err := m.Run.RemoveAll(done); err != nil {
		return false, err
	}
	conn, err := pgx.Connect(ctx, st.ConnString(Database))
	if err != nil {
		return false, fmt.Errorf("setup SQL %s: %w", file, err)
	}
	defer conn.Close(ctx)
	// No arguments: the simple protocol, which runs several statements.
	if _, err := conn.Exec(ctx, sql); err != nil {
		err = fmt.Errorf("setup SQL %s%s: %w", file, sqlLine(sql, err), err)
		if _, refused := errors.AsType[*pgconn.PgError](err); refused {
			err = &results.UserSQLError{Err: err}
		}
		return false, err
	}
	if err := m.writeOwned(done, []byte(sql), 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// sqlLine is " line N" for a server error that gives its position in
// sql, else "".
func sqlLine(sql string, err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Position <= 0 || int(pe.Position) > len(sql)+1 {
		return ""
	}
	// Position counts characters from 1.
	r := []rune(sql)
	if int(pe.Position) > len(r) {
		return ""
	}
	return fmt.Sprintf(" line %d", strings.Count(string(r[:pe.Position-1]), "\n")+1)
}
