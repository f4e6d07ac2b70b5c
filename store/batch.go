package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// cellBatch is the rows of a SQLite insert statement (and of a block
// PostgreSQL's COPY is given): 2 000 rows of 15 values keep under
// SQLite's 32 766 parameters (TestCellBatches). SQLite keeps, for each
// statement of a transaction, a journal of the pages it changes that the
// transaction had changed before (the last page of the table and of
// each index, 64 KiB each), so that a statement that fails is undone
// alone: at 250 rows a statement, writing it was 0.08 of the 1.1 CPU-s
// storing 100 000 cells took; at 2 000 it no longer shows in the profile
// (BenchmarkPutCells100k; the CPU time alternated at load 7–9, 1.27–1.71
// CPU-s against 1.35–1.77, says no more than that).
const cellBatch = 2000

// batcher runs a multi-row statement: the full-size one is prepared once
// (parsing a 2 000-row VALUES list per batch cost as much as running it),
// a shorter last batch is run as it is.
type batcher struct {
	s    *Store
	tx   execer
	head string // INSERT … VALUES
	row  string // (?,?,?)
	tail string // ON CONFLICT …
	size int
	full *sql.Stmt
}

func (b *batcher) query(n int) string {
	return b.s.q(b.head + b.row + strings.Repeat(","+b.row, n-1) + b.tail)
}

// exec runs a batch of n rows.
func (b *batcher) exec(ctx context.Context, n int, args []any) error {
	var err error
	if n < b.size {
		_, err = b.tx.ExecContext(ctx, b.query(n), args...)
	} else if err = b.prepare(ctx); err == nil {
		_, err = b.full.ExecContext(ctx, args...)
	}
	return err
}

func (b *batcher) prepare(ctx context.Context) error {
	if b.full != nil {
		return nil
	}
	var err error
	b.full, err = b.tx.PrepareContext(ctx, b.query(b.size))
	return err
}

func (b *batcher) close() {
	if b.full != nil {
		b.full.Close()
	}
}

// copyFrom copies src's rows into table's columns cols by COPY, on conn
// (a PostgreSQL connection of pgx's) and in the transaction it holds.
func copyFrom(ctx context.Context, conn *sql.Conn, table string, cols []string, src pgx.CopyFromSource) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: a PostgreSQL connection of type %T, not pgx's", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, src)
		return err
	})
}
