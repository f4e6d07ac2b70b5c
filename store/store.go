// Package store is abtest's results database: every result directory
// (plan.json, cells.jsonl) imported into tables that history queries,
// annotations and the dashboard read across runs. The files stay the
// source of truth; the store is built from them and can be rebuilt by
// importing them again.
//
// Two engines, one schema:
//
//   - SQLite, the default, one file at $BENCH_RESULTS_DIR/abtest.db. The
//     driver is modernc.org/sqlite: SQLite translated to Go, so the binary
//     stays static and needs no CGO, and nothing is compiled when a
//     process starts (github.com/ncruces/go-sqlite3, the other pure-Go
//     choice, runs SQLite as WebAssembly and compiles that module in every
//     process that opens a database, which a short CLI command pays each
//     time).
//   - PostgreSQL, given as a postgres:// URL (pgx through database/sql),
//     when several hosts share one store: the shards of one run, written
//     at once by several processes, lose nothing and duplicate nothing.
//
// Identity decides idempotence. A run's id is a hash of its plan without
// the shard (the commits, their shas and patches, the axes, repeats and
// seed), so every shard of a run has the same id; a cell is unique per run
// and inserted with ON CONFLICT DO NOTHING (on SQLite, whose import holds
// the write lock, only those the run lacks), so importing a directory twice,
// or two processes importing overlapping shards at once, stores each cell
// once.
//
// The store judges nothing (it does not import analysis): a run can be
// analysed from the store alone (Shards; history.Input, abtest analyze
// --store): each shard's plan.json is kept as written, and each cell's
// record but for its series (samples, progress, waits, final state,
// probe counters; record.go says what is stored where), so the verdicts
// are those of the files. The history package judges a run each time
// it is read; nothing of a judgement is stored.
//
// The schema is versioned (table schema_version) and migrated forward on
// Open; a store written by a newer abtest is refused with one line.
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// DefaultFile is the SQLite store's name inside the results directory.
const DefaultFile = "abtest.db"

// Sentinel errors, for errors.Is.
var (
	// ErrUnreachable: the store could not be opened or connected to.
	ErrUnreachable = errors.New("store: unreachable")
	// ErrNewerSchema: the store was written by a newer abtest.
	ErrNewerSchema = errors.New("store: newer schema")
	// ErrUnknown: no commit, configuration or run matches what was asked.
	ErrUnknown = errors.New("store: not found")
	// ErrAmbiguous: several match.
	ErrAmbiguous = errors.New("store: ambiguous")
)

// Store is an open results database.
type Store struct {
	db       *sql.DB
	postgres bool
	// where names the store in errors, without a password.
	where string
}

// Open opens the store at location (Parse): a postgres:// (or
// postgresql://) URL, or the path of a SQLite file (created with its
// directory when missing; a sqlite: prefix is accepted; never opened
// through a link, nor when it is another user's). The schema is created
// or migrated to this binary's version. An unreachable store is an
// infrastructure failure (exit 3); a newer schema, a location that does
// not parse or a file that is not safe to open is refused (exit 2).
func Open(ctx context.Context, location string) (*Store, error) {
	return open(ctx, location, true, true)
}

// OpenFor is Open for a writer (store import, a run: create); a reader
// (history, dashboard, analyze, annotate) is refused a SQLite file that
// does not exist (exit 2) instead of creating it.
func OpenFor(ctx context.Context, location string, create bool) (*Store, error) {
	return open(ctx, location, true, create)
}

// OpenCurrent opens the store at location for reading without changing
// it: a store of an older schema is refused instead of migrated, and a
// missing SQLite file is not created (a dry run changes nothing on disk).
func OpenCurrent(ctx context.Context, location string) (*Store, error) {
	return open(ctx, location, false, false)
}

func open(ctx context.Context, location string, migrate, create bool) (*Store, error) {
	postgres, path, err := Parse(location)
	if err != nil {
		return nil, err
	}
	s := &Store{postgres: postgres}
	var checked fs.FileInfo
	if postgres {
		s.where = redact(location)
		s.db, err = sql.Open("pgx", location)
	} else {
		s.where = path
		if err := storeDir(path); err != nil {
			return nil, err
		}
		if checked, err = sqliteFile(path, create); err != nil {
			return nil, err
		}
		if err := sideFiles(path); err != nil {
			return nil, err
		}
		// WAL lets readers (the dashboard) run beside an import; every
		// transaction takes the write lock at BEGIN (txlock=immediate) so
		// two importing processes queue instead of failing on an upgrade
		// from a read lock.
		//
		// A new store's pages are 64 KiB, SQLite's largest, not its 4:
		// committing an import writes every page twice (to the WAL, then
		// into the file at the checkpoint), a system call or two each,
		// and the 100 000 cells of BenchmarkImport100k are 91 MB. Storing
		// them took 1.11–1.38 CPU-s instead of 1.47–1.85 (insert and
		// commit alone, 4 rounds alternated at load 4–8; 16 KiB 1.27–1.55,
		// 32 KiB 1.31–1.41); the whole import at load 1, 1.70–1.78 s
		// (32 KiB 1.78–1.96, 16 KiB 1.84–2.09). The price: a page per
		// table and index at least, so an empty store is 1.6 MB, not
		// 0.1, and a small import writes 64 KiB pages to the WAL, 2.5 ms
		// more each (60 imports of 10 cells, TestHistoryNightsSteps…:
		// 0.38–0.43 s against 0.23–0.25; 16 KiB 0.26–0.37), which an
		// import of ~600 cells wins back. A store made before keeps
		// its 4 KiB: SQLite sets the size only while the file is empty.
		// The driver runs _pragma values in name order, then
		// _journal_mode: the page size comes before WAL mode writes the
		// first page.
		dsn := "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=page_size(65536)&_journal_mode=WAL&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=cache_size(-65536)&_txlock=immediate"
		s.db, err = sql.Open("sqlite", dsn)
		if err == nil {
			s.db.SetMaxOpenConns(1)
		}
	}
	if err == nil {
		err = s.db.PingContext(ctx)
	}
	if err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, exitcode.Failure(fmt.Errorf("store %s: %w: %s", s.where, ErrUnreachable, text.OneLine(err.Error())))
	}
	if checked != nil {
		if err := sameFile(path, checked); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	check := s.migrate
	if !migrate {
		check = s.current
	}
	if err := check(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Where names the store (a path, or a URL without its password).
func (s *Store) Where() string { return s.where }

// DB is the database handle, for tests and tools that query the tables
// directly.
func (s *Store) DB() *sql.DB { return s.db }

// q rewrites ? placeholders as $1, $2… for PostgreSQL.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) fail(what string, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		return err
	}
	return exitcode.Failure(fmt.Errorf("store %s: %s: %s", s.where, what, text.OneLine(err.Error())))
}

func redact(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return "postgres://…"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return u.String()
}

// RunID is a run's identity: a hash of its plan without the shard and the
// cell list (the commits' labels, refs, shas and patches, and the options,
// seed included), so the shards of one run share it and two runs differ.
func RunID(p *results.Plan) string {
	type commit struct{ Label, Ref, Identity string }
	v := struct {
		Commits []commit
		Options results.PlanOpts
	}{Options: p.Options}
	for _, c := range p.Commits {
		v.Commits = append(v.Commits, commit{c.Label, c.Ref, c.Identity()})
	}
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func hashJSON(v any) string {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
