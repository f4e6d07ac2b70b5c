package workload

// The server a run measures: connecting and checking it before the run,
// and the other backends on its database.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// ErrServer: the server cannot be reached or used.
var ErrServer = errors.New("workload: server")

// prepare connects and checks the server: database and extension made
// when missing, pg_stat_statements preloaded, enough connection slots.
func (r *Runner) prepare(ctx context.Context, c Conn, s Spec) (*pgx.Conn, *server, error) {
	conn, err := pgx.Connect(ctx, c.connString(c.Database))
	var pgErr *pgconn.PgError
	if err != nil && errors.As(err, &pgErr) && pgErr.Code == "3D000" {
		admin, aerr := pgx.Connect(ctx, c.connString("postgres"))
		if aerr != nil {
			return nil, nil, exitcode.Failure(fmt.Errorf("%w: cannot connect to %s: %v", ErrServer, c.where(), aerr))
		}
		_, aerr = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{c.Database}.Sanitize())
		admin.Close(ctx)
		if aerr != nil {
			return nil, nil, exitcode.Failure(fmt.Errorf("%w: CREATE DATABASE %s: %v", ErrServer, c.Database, aerr))
		}
		conn, err = pgx.Connect(ctx, c.connString(c.Database))
	}
	if err != nil {
		return nil, nil, exitcode.Failure(fmt.Errorf("%w: cannot connect to %s (database %s): %v", ErrServer, c.where(), c.Database, err))
	}
	fail := func(err error) (*pgx.Conn, *server, error) {
		conn.Close(context.Background())
		return nil, nil, err
	}
	sv := &server{}
	if err := conn.QueryRow(ctx, marker+" SELECT current_setting('server_version_num')::int, version()").Scan(&sv.versionNum, &sv.version); err != nil {
		return fail(exitcode.Failure(fmt.Errorf("%w: %v", ErrServer, err)))
	}
	if sv.versionNum < 140000 {
		return fail(exitcode.BadInputf("%w: %s runs PostgreSQL %d; abtest measures 14 and later", ErrServer, c.where(), sv.versionNum/10000))
	}
	var preload string
	if err := conn.QueryRow(ctx, marker+" SELECT current_setting('shared_preload_libraries')").Scan(&preload); err != nil {
		return fail(exitcode.Failure(err))
	}
	if !strings.Contains(preload, "pg_stat_statements") {
		return fail(exitcode.BadInputf("%w: pg_stat_statements is not in shared_preload_libraries on %s: add shared_preload_libraries = 'pg_stat_statements' to postgresql.conf and restart (clusters started by abtest switch have it)", ErrServer, c.where()))
	}
	if _, err := conn.Exec(ctx, marker+" CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return fail(exitcode.Failure(fmt.Errorf("%w: CREATE EXTENSION pg_stat_statements: %v", ErrServer, err)))
	}
	// abtest's own session finds the extension's views in their schema,
	// whatever search_path the server gives the workload's sessions.
	if _, err := conn.Exec(ctx, marker+` SELECT set_config('search_path', quote_ident(n.nspname), false)
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_stat_statements'`); err != nil {
		return fail(exitcode.Failure(fmt.Errorf("%w: search_path of pg_stat_statements: %v", ErrServer, err)))
	}
	q := marker + " SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int"
	if sv.versionNum >= 160000 {
		q += " + current_setting('reserved_connections')::int"
	}
	if err := conn.QueryRow(ctx, q).Scan(&sv.maxConn, &sv.reserved); err != nil {
		return fail(exitcode.Failure(err))
	}
	if err := sv.checkSlots(s.Clients, c); err != nil {
		return fail(err)
	}
	sv.locate(ctx, conn)
	return conn, sv, nil
}

// checkSlots refuses a run of more clients than the server has
// connection slots for. The slots are settings only a restart changes,
// so a kept connection's reading still holds.
func (sv *server) checkSlots(clients int, c Conn) error {
	// The sampler holds one slot; leave one for a psql of the user's.
	if avail := sv.maxConn - sv.reserved - 2; clients > avail {
		return exitcode.BadInputf("%w: -c %d needs %d connections but %s allows %d (max_connections %d - %d reserved - 2 for abtest): lower -c or raise max_connections (abtest switch --max-clients %d, or --set max_connections=%d)",
			ErrServer, clients, clients, c.where(), avail, sv.maxConn, sv.reserved, clients, clients+sv.reserved+10)
	}
	return nil
}

// Sessions keeps abtest's own connection to a server open from one run
// to the next on the same server, user and database: a warm-up and the
// window after it, a matrix's cells on one cluster. A new connection is
// a new backend, and a new backend's first readings of the statistics
// views load its catalog caches: about 18 ms of the server's CPU a run
// on PostgreSQL 15, of the 25–40 ms a 3 s cell's readings cost (issue
// 27: the observer's cost). It keeps one connection a key, the one the
// last run used; a run takes it, so no kept connection of its own is
// on the server beside the run's to look like a foreign backend. One
// the server closed meanwhile (a restart) is replaced. The zero value
// is ready; Close closes what it keeps.
type Sessions struct {
	mu   sync.Mutex
	idle map[string]session
}

type session struct {
	conn *pgx.Conn
	sv   *server
}

// take hands out the connection kept for key, if it still answers.
func (p *Sessions) take(ctx context.Context, key string) (session, bool) {
	if p == nil {
		return session{}, false
	}
	p.mu.Lock()
	se, ok := p.idle[key]
	delete(p.idle, key)
	p.mu.Unlock()
	if !ok {
		return session{}, false
	}
	if err := se.conn.Ping(ctx); err != nil {
		se.conn.Close(context.Background())
		return session{}, false
	}
	return se, true
}

// keep keeps se for key's next run, or closes it: p is nil, se's
// connection is closed, or one is kept for key already.
func (p *Sessions) keep(key string, se session) {
	if p != nil && !se.conn.IsClosed() {
		p.mu.Lock()
		_, taken := p.idle[key]
		if !taken {
			if p.idle == nil {
				p.idle = map[string]session{}
			}
			p.idle[key] = se
		}
		p.mu.Unlock()
		if !taken {
			return
		}
	}
	se.conn.Close(context.Background())
}

// Close closes the connections p keeps.
func (p *Sessions) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, se := range idle {
		se.conn.Close(context.Background())
	}
}

// connect takes r.Sessions' connection to c, or connects and checks the
// server (prepare). release hands the connection back: kept for the
// next run if ok (the run ended without error), closed otherwise.
func (r *Runner) connect(ctx context.Context, c Conn, s Spec) (conn *pgx.Conn, sv *server, release func(ok bool), err error) {
	key := c.connString(c.Database)
	se, kept := r.Sessions.take(ctx, key)
	if kept {
		if err := se.sv.checkSlots(s.Clients, c); err != nil {
			r.Sessions.keep(key, se)
			return nil, nil, nil, err
		}
	} else if se.conn, se.sv, err = r.prepare(ctx, c, s); err != nil {
		return nil, nil, nil, err
	}
	release = func(ok bool) {
		if ok {
			r.Sessions.keep(key, se)
		} else {
			se.conn.Close(context.Background())
		}
	}
	return se.conn, se.sv, release, nil
}

// foreignBackends records client backends of the database other than
// pgbench's and abtest's own: their work would land in the probe. A
// condition's sessions are the cell's own: the probe counts their work
// (an updater's rows and WAL) as part of the condition.
func (r *Runner) foreignBackends(ctx context.Context, conn *pgx.Conn, db string, into map[int32]string) error {
	rows, err := conn.Query(ctx, marker+` SELECT pid, application_name FROM pg_stat_activity
WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name NOT IN ('pgbench', $2)`, db, conditionApp)
	if err != nil {
		return fmt.Errorf("%w: pg_stat_activity: %v", ErrServer, err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var app string
		if err := rows.Scan(&pid, &app); err != nil {
			return err
		}
		into[pid] = app
	}
	return rows.Err()
}

// waitBackendsGone waits (up to wait) until the backends of app on db,
// other than conn's, have exited: a backend flushes its statistics as it
// exits, and leaves pg_stat_activity some time after its client closed.
func (r *Runner) waitBackendsGone(ctx context.Context, conn *pgx.Conn, db, app string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		var n int
		err := conn.QueryRow(ctx, marker+` SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`, db, app).Scan(&n)
		if err != nil || n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
