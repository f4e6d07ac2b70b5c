package workload

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/results"
)

// The probe's output types are part of the results schema.
type (
	Counters      = results.Counters
	KindCounters  = results.KindCounters
	WALCounters   = results.WALCounters
	TableCounters = results.TableCounters
	Statement     = results.Statement
	Saturation    = results.Saturation
)

// server describes the server being measured.
type server struct {
	versionNum int
	version    string
	dataDir    string
	postmaster int // 0 when not local or not visible
	// maxConn and reserved are max_connections and the slots reserved
	// from it.
	maxConn, reserved int
	// last is the final pg_stat_statements reading of the last run on
	// this connection (Spec.Continues); nil once a run starts.
	last *pgssReading
}

// pgssReading is what a run's final pg_stat_statements reading leaves
// for the next run's baseline: each entry's calls, the sums by kind and
// pg_stat_statements_info's dealloc then.
type pgssReading struct {
	entries []entry
	kinds   map[string]KindCounters
	dealloc int64
}

func (sv *server) hasWAL() bool   { return sv.versionNum >= 140000 }
func (sv *server) hasFlush() bool { return sv.versionNum >= 150000 }

// locate finds the postmaster of a local server through its data
// directory's postmaster.pid (cluster.PID: a live postgres working in
// that directory, started when the file says), so the server's CPU time
// can be read from /proc. A directory the server names may be another
// server's, or a file planted there: their pids do not count.
func (sv *server) locate(ctx context.Context, conn *pgx.Conn) {
	if err := conn.QueryRow(ctx, marker+" SELECT current_setting('data_directory')").Scan(&sv.dataDir); err == nil {
		sv.postmaster, _ = cluster.PID(sv.dataDir)
	}
}

// readCounters takes one reading, all but the sums by kind: those come
// from the sampler's readings of pg_stat_statements around the window
// (sampler.baseline, sampler.final), one reading of the view fewer
// each. Statistics are flushed first: pgbench's backends have exited
// (their pending stats go out at exit), and pg_stat_force_next_flush()
// pushes this backend's own where the server has it; before PostgreSQL
// 15 the stats collector needs a moment.
func readCounters(ctx context.Context, conn *pgx.Conn, sv *server) (Counters, error) {
	var c Counters
	if sv.hasFlush() {
		if _, err := conn.Exec(ctx, marker+" SELECT pg_stat_force_next_flush()"); err != nil {
			return c, err
		}
	} else {
		time.Sleep(600 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, marker+" SELECT pg_stat_clear_snapshot()"); err != nil {
		return c, err
	}
	if sv.hasWAL() {
		var w WALCounters
		if err := conn.QueryRow(ctx, marker+" SELECT wal_records, wal_fpi, wal_bytes::int8 FROM pg_stat_wal").Scan(&w.Records, &w.FPI, &w.Bytes); err != nil {
			return c, err
		}
		c.WAL = &w
	}
	t := &c.Tables
	// The statio view has a row for every table the counters' view
	// has; a size is NULL for a table dropped meanwhile.
	if err := conn.QueryRow(ctx, marker+` SELECT coalesce(sum(t.n_tup_ins),0)::int8, coalesce(sum(t.n_tup_upd),0)::int8, coalesce(sum(t.n_tup_del),0)::int8,
  coalesce(sum(t.n_tup_hot_upd),0)::int8, coalesce(sum(t.n_dead_tup),0)::int8,
  coalesce(sum(t.autovacuum_count),0)::int8, coalesce(sum(t.autoanalyze_count),0)::int8,
  coalesce(sum(coalesce(s.heap_blks_hit,0) + coalesce(s.idx_blks_hit,0) + coalesce(s.toast_blks_hit,0) + coalesce(s.tidx_blks_hit,0)),0)::int8,
  coalesce(sum(coalesce(s.heap_blks_read,0) + coalesce(s.idx_blks_read,0) + coalesce(s.toast_blks_read,0) + coalesce(s.tidx_blks_read,0)),0)::int8,
  coalesce(sum(pg_relation_size(t.relid)),0)::int8, coalesce(sum(pg_indexes_size(t.relid)),0)::int8
FROM pg_stat_user_tables t JOIN pg_statio_user_tables s USING (relid)`).Scan(&t.Ins, &t.Upd, &t.Del, &t.HotUpd, &t.Dead,
		&t.Autovacuum, &t.Autoanalyze, &t.BlksHit, &t.BlksRead, &t.HeapBytes, &t.IndexBytes); err != nil {
		return c, err
	}
	if sv.postmaster > 0 {
		// utime+stime of the postmaster and each child, plus cutime+cstime:
		// where a reaped child's (an exited backend's) time goes.
		c.CPUTicks, c.HasCPU = procfs.TreeTicks(sv.postmaster)
	}
	return c, nil
}

// xminSQL is the age of the oldest xmin holding back vacuum's horizon
// in the database: a session's snapshot (backend_xmin) or its own
// transaction (backend_xid), of this database or of none (a walsender
// with hot_standby_feedback), a replication slot's xmin or
// catalog_xmin, a prepared transaction of this database. A session of
// another database holds back only the shared catalogs, so it does not
// count; nor does the probe's own. NULL, read as 0, when nothing holds
// one.
const xminSQL = marker + ` SELECT coalesce(greatest(
  (SELECT max(greatest(age(backend_xmin), age(backend_xid))) FROM pg_stat_activity
    WHERE (datname = current_database() OR datid IS NULL) AND pid <> pg_backend_pid()),
  (SELECT max(greatest(age(xmin), age(catalog_xmin))) FROM pg_replication_slots),
  (SELECT max(age(transaction)) FROM pg_prepared_xacts WHERE database = current_database())), 0)::int8`

// seesXmin reports whether the connection's role sees other sessions'
// xmin: pg_stat_activity shows it only to superusers, members of
// pg_read_all_stats and the session's own role.
func seesXmin(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, marker+" SELECT pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')").Scan(&ok)
	return ok, err
}

// xminAge reads the oldest xmin's age (xminSQL).
func xminAge(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var age int64
	err := conn.QueryRow(ctx, xminSQL).Scan(&age)
	return age, err
}
