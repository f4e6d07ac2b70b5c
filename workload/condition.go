package workload

// Background conditions (matrix --condition): something held on the
// server through a cell's warm-up and window — an old snapshot, an idle
// slot, checkpoints, an updater — verified active at the window's end
// and torn down on every exit path. What abtest holds lives in its own
// sessions, so a killed abtest takes it with it (the server ends the
// transaction and drops the temporary slot); the one lasting change,
// autovacuum-off's table option, is reset by the next cell of any other
// condition.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
)

// ConditionNone is no condition.
const ConditionNone = "none"

// The built-in conditions; bulk-update and checkpoint-storm take an
// optional =N (rows per second; seconds between checkpoints).
const (
	ConditionXminHolder      = "xmin-holder"
	ConditionIdleSlot        = "idle-slot"
	ConditionAutovacuumOff   = "autovacuum-off"
	ConditionCheckpointStorm = "checkpoint-storm"
	ConditionBulkUpdate      = "bulk-update"
	// conditionFile prefixes a custom condition, file:PATH: an executable
	// run as the server's account with start, check (exit 0: active) and
	// stop.
	conditionFile = "file:"
)

// conditionApp is the application_name of a condition's sessions: the
// sampler and the probe tell them from foreign backends by it.
const conditionApp = "abtest-condition"

// Conditions lists the built-in conditions, for messages.
var Conditions = []string{ConditionNone, ConditionXminHolder, ConditionIdleSlot, ConditionAutovacuumOff, ConditionCheckpointStorm, ConditionBulkUpdate}

// Defaults of the conditions' parameters.
const (
	defaultBulkRows        = 1000
	defaultCheckpointEvery = 2 * time.Second
)

// parseCondition splits NAME[=N] and checks it.
func parseCondition(c string) (name string, n float64, err error) {
	if path, ok := strings.CutPrefix(c, conditionFile); ok {
		return c, 0, checkConditionFile(path)
	}
	name, arg, hasArg := strings.Cut(c, "=")
	if !slices.Contains(Conditions, name) {
		return "", 0, exitcode.BadInputf("--condition %q: want one of %s, or file:PATH", c, strings.Join(Conditions, ", "))
	}
	if !hasArg {
		return name, 0, nil
	}
	n, err = strconv.ParseFloat(arg, 64)
	switch {
	case name != ConditionBulkUpdate && name != ConditionCheckpointStorm:
		return "", 0, exitcode.BadInputf("--condition %s: %s takes no =N", c, name)
	case err != nil || !(n > 0 && n <= 1e6):
		return "", 0, exitcode.BadInputf("--condition %s: want %s=N with N a positive number (rows per second for bulk-update, seconds between checkpoints for checkpoint-storm)", c, name)
	}
	return name, n, nil
}

// CheckCondition refuses a condition that is neither built in (with a
// valid =N) nor file:PATH of an executable regular file.
func CheckCondition(c string) error {
	_, _, err := parseCondition(c)
	return err
}

// checkConditionFile checks a custom condition's script: an executable
// regular file at an absolute path, of at most 64 MiB and, as root,
// root's or the invoking user's and writable by nobody else
// (safefile.CheckInput), the directories above it included.
func checkConditionFile(path string) error {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return exitcode.BadInputf("--condition file:%s: want an executable script (run with start, check and stop)", path)
	}
	if !filepath.IsAbs(path) {
		return exitcode.BadInputf("--condition file:%s: give an absolute path (the script runs as the server's account, in its own directory)", path)
	}
	if err := safefile.CheckInput(path); err != nil {
		return exitcode.BadInputf("--condition file:%s: %v", path, err)
	}
	return nil
}

// copyConditionFile reads the script at path (safefile.Input) into a new
// directory of the caller's, mode 0755 (the server's account runs it
// from there), and returns the copy's path: what was checked is what
// runs, whatever happens to path meanwhile.
func copyConditionFile(path string) (string, error) {
	if err := checkConditionFile(path); err != nil {
		return "", err
	}
	data, err := safefile.Input(path)
	if err != nil {
		return "", exitcode.BadInputf("--condition file:%s: %v", path, err)
	}
	dir, err := safefile.MkdirTemp(os.TempDir(), "abtest-condition-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		return "", exitcode.Failure(fmt.Errorf("condition file:%s: %w", path, err))
	}
	dst := filepath.Join(dir, filepath.Base(path))
	f, err := safefile.Create(dst, 0o755)
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", exitcode.Failure(fmt.Errorf("condition file:%s: %w", path, err))
	}
	return dst, nil
}

// ConditionSettings are the server settings condition c needs; a plan
// with it gives them to every configuration, so that the condition is
// the only difference between its cells and the others'.
func ConditionSettings(c string) map[string]string {
	if name, _, _ := parseCondition(c); name == ConditionIdleSlot {
		return map[string]string{"wal_level": "logical"}
	}
	return nil
}

// Condition is a condition held on a server; Check and Stop may be
// called from any goroutine, Stop more than once.
type Condition struct {
	Name string
	// kind is Name without its =N (parseCondition).
	kind string
	// conn is the condition's own session (the snapshot, the slot);
	// connString reaches the server for checks from outside it.
	conn       *pgx.Conn
	connString string
	// slot is idle-slot's temporary replication slot.
	slot string
	// pids are the server processes of the condition's sessions: Stop
	// waits for them to end, so that nothing of it is left when it returns.
	pids []uint32
	// loop is the goroutine of checkpoint-storm and bulk-update.
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	count   float64
	loopErr error
	// file conditions; copyDir holds the copy of the script that runs.
	run     *proc.Runner
	cmd     proc.Cmd
	copyDir string
	once    sync.Once
	err     error
}

// ConditionEnv is where a condition runs: the server, the account of
// custom scripts and the directory their output goes to.
type ConditionEnv struct {
	Conn   Conn
	Proc   *proc.Runner
	User   *proc.User
	OutDir string
}

// StartCondition starts condition c on the server (before the warm-up).
// Any condition first resets what a killed autovacuum-off cell left.
func StartCondition(ctx context.Context, c string, env ConditionEnv) (*Condition, error) {
	name, n, err := parseCondition(c)
	if err != nil {
		return nil, err
	}
	cs := env.Conn.connString(env.Conn.Database) + " application_name=" + conditionApp
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("condition %s: cannot connect: %w", c, err))
	}
	h := &Condition{Name: c, kind: name, conn: conn, connString: cs, pids: []uint32{conn.PgConn().PID()}}
	if err := h.start(ctx, name, n, env); err != nil {
		h.Stop(context.WithoutCancel(ctx))
		return nil, exitcode.Failure(fmt.Errorf("condition %s: %w", c, err))
	}
	return h, nil
}

func (h *Condition) start(ctx context.Context, name string, n float64, env ConditionEnv) error {
	if _, err := h.conn.Exec(ctx, marker+" SET idle_in_transaction_session_timeout = 0"); err != nil {
		return err
	}
	if name != ConditionAutovacuumOff {
		if err := h.setAutovacuum(ctx, "RESET (autovacuum_enabled)", autovacuumOff); err != nil {
			return err
		}
	}
	switch name {
	case ConditionNone:
		return nil
	case ConditionXminHolder:
		if _, err := h.conn.Exec(ctx, marker+" BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return err
		}
		_, err := h.conn.Exec(ctx, marker+" SELECT count(*) FROM pg_class")
		return err
	case ConditionIdleSlot:
		// Named by the session's backend: unique on the server.
		h.slot = fmt.Sprintf("abtest_idle_%d", h.conn.PgConn().PID())
		_, err := h.conn.Exec(ctx, marker+" SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)", h.slot)
		return err
	case ConditionAutovacuumOff:
		return h.setAutovacuum(ctx, "SET (autovacuum_enabled = off)", "")
	case ConditionCheckpointStorm:
		every := defaultCheckpointEvery
		if n > 0 {
			every = time.Duration(n * float64(time.Second))
		}
		return h.loop(ctx, env, every, func(ctx context.Context, c *pgx.Conn) (float64, error) {
			_, err := c.Exec(ctx, marker+" CHECKPOINT")
			return 1, err
		})
	case ConditionBulkUpdate:
		return h.startBulkUpdate(ctx, env, n)
	}
	return h.startFile(ctx, env)
}

// userTables are the ordinary tables of the database's user schemas.
const userTables = `FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
 WHERE c.relkind = 'r' AND s.nspname NOT IN ('pg_catalog', 'information_schema') AND s.nspname NOT LIKE 'pg_toast%'`

// autovacuumOff is true for a table whose autovacuum is off.
const autovacuumOff = `EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
 WHERE o.option_name = 'autovacuum_enabled' AND o.option_value IN ('off', 'false', 'no', '0'))`

// setAutovacuum runs ALTER TABLE … action on the user tables (those
// where also holds, when given).
func (h *Condition) setAutovacuum(ctx context.Context, action, where string) error {
	q := marker + " SELECT format('%I.%I', s.nspname, c.relname) " + userTables
	if where != "" {
		q += " AND " + where
	}
	rows, err := h.conn.Query(ctx, q)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := h.conn.Exec(ctx, marker+" ALTER TABLE "+t+" "+action); err != nil {
			return err
		}
	}
	return nil
}

// loop runs tick every interval on a connection of its own until Stop,
// counting what it did.
func (h *Condition) loop(ctx context.Context, env ConditionEnv, every time.Duration, tick func(context.Context, *pgx.Conn) (float64, error)) error {
	c, err := pgx.Connect(ctx, h.connString)
	if err != nil {
		return err
	}
	h.pids = append(h.pids, c.PgConn().PID())
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer c.Close(context.Background())
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			n, err := tick(lctx, c)
			h.mu.Lock()
			h.count += n
			if err != nil && lctx.Err() == nil {
				h.loopErr = err
			}
			h.mu.Unlock()
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// startBulkUpdate updates rows of the database's largest user table at
// rows per second (ten batches a second), each row to its own value: new
// row versions, as a concurrent batch job makes them.
func (h *Condition) startBulkUpdate(ctx context.Context, env ConditionEnv, rows float64) error {
	if rows == 0 {
		rows = defaultBulkRows
	}
	var table string
	var column *string
	var tuples float64
	err := h.conn.QueryRow(ctx, marker+` SELECT format('%I.%I', s.nspname, c.relname),
 (SELECT format('%I', attname) FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum LIMIT 1),
 greatest(c.reltuples, 1) `+userTables+` ORDER BY pg_relation_size(c.oid) DESC LIMIT 1`).Scan(&table, &column, &tuples)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && column == nil {
		return errors.New("the database has no table with a column to update: bulk-update needs a workload that creates one")
	}
	if err != nil {
		return err
	}
	// Ten batches a second; TABLESAMPLE SYSTEM reads only the sampled
	// pages (twice the share a batch needs, cut by LIMIT).
	batch := max(1, int(rows/10))
	pct := min(100, max(0.001, 200*float64(batch)/tuples))
	q := fmt.Sprintf(marker+" UPDATE %[1]s t SET %[2]s = t.%[2]s FROM (SELECT ctid FROM %[1]s TABLESAMPLE SYSTEM (%[4]g) LIMIT %[3]d) s WHERE t.ctid = s.ctid",
		table, *column, batch, pct)
	return h.loop(ctx, env, 100*time.Millisecond, func(ctx context.Context, c *pgx.Conn) (float64, error) {
		tag, err := c.Exec(ctx, q)
		return float64(tag.RowsAffected()), err
	})
}

// startFile runs a custom condition's `start`, from a copy of its
// script (copyConditionFile) removed once Stop ran its `stop`.
func (h *Condition) startFile(ctx context.Context, env ConditionEnv) error {
	path, err := copyConditionFile(strings.TrimPrefix(h.Name, conditionFile))
	if err != nil {
		return err
	}
	h.copyDir = filepath.Dir(path)
	c := env.Conn
	h.run = env.Proc
	h.cmd = proc.Cmd{Path: path, Dir: env.OutDir, User: env.User, Log: filepath.Join(env.OutDir, "condition.log"),
		Env: []string{"PGHOST=" + c.Host, "PGPORT=" + strconv.Itoa(c.Port), "PGUSER=" + c.User, "PGDATABASE=" + c.Database}}
	return h.file(ctx, "start")
}

func (h *Condition) file(ctx context.Context, verb string) error {
	cmd := h.cmd
	cmd.Args = []string{verb}
	if err := h.run.Run(ctx, cmd); err != nil {
		return fmt.Errorf("%s %s failed (see %s): %w", h.cmd.Path, verb, h.cmd.Log, err)
	}
	return nil
}

// Check verifies, at the end of the window, that the condition is
// active, and returns what it reached: xmin_age (xmin-holder),
// retained_wal_bytes and catalog_xmin_age (idle-slot), tables
// (autovacuum-off), checkpoints (checkpoint-storm), rows_updated
// (bulk-update). An inactive condition is an error saying why.
func (h *Condition) Check(ctx context.Context) (map[string]float64, error) {
	name := h.kind
	facts := map[string]float64{}
	// Checked from a session of its own: inside the holder's transaction
	// pg_stat_activity and age() would be frozen at its start.
	conn, err := pgx.Connect(ctx, h.connString)
	if err != nil {
		return facts, exitcode.Failure(fmt.Errorf("condition %s: cannot connect to check it: %w", h.Name, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	switch name {
	case ConditionNone:
	case ConditionXminHolder:
		var age *int64
		err = conn.QueryRow(ctx, marker+" SELECT age(backend_xmin) FROM pg_stat_activity WHERE pid = $1", h.conn.PgConn().PID()).Scan(&age)
		if err == nil && age == nil {
			err = errors.New("the holder's snapshot holds no xmin")
		} else if err == nil {
			facts["xmin_age"] = float64(*age)
		}
	case ConditionIdleSlot:
		var wal, xmin *int64
		err = conn.QueryRow(ctx, marker+` SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, age(catalog_xmin)
 FROM pg_replication_slots WHERE slot_name = $1`, h.slot).Scan(&wal, &xmin)
		if errors.Is(err, pgx.ErrNoRows) {
			err = errors.New("its replication slot is gone")
		} else if err == nil && wal != nil && xmin != nil {
			facts["retained_wal_bytes"], facts["catalog_xmin_age"] = float64(*wal), float64(*xmin)
		}
	case ConditionAutovacuumOff:
		var off, all int64
		err = conn.QueryRow(ctx, marker+" SELECT count(*) FILTER (WHERE "+autovacuumOff+"), count(*) "+userTables).Scan(&off, &all)
		if err == nil && (all == 0 || off < all) {
			err = fmt.Errorf("autovacuum is off on %d of %d user tables", off, all)
		}
		facts["tables"] = float64(off)
	case ConditionCheckpointStorm, ConditionBulkUpdate:
		h.mu.Lock()
		n, lerr := h.count, h.loopErr
		h.mu.Unlock()
		key := map[string]string{ConditionCheckpointStorm: "checkpoints", ConditionBulkUpdate: "rows_updated"}[name]
		facts[key] = n
		if err = lerr; err == nil && n == 0 {
			err = fmt.Errorf("no %s during the window", strings.ReplaceAll(key, "_", " "))
		}
	default:
		err = h.file(ctx, "check")
	}
	if err != nil {
		return facts, exitcode.Failure(fmt.Errorf("condition %s was not active at the end of the window: %w", h.Name, err))
	}
	return facts, nil
}

// Stop tears the condition down: the loop stopped, autovacuum's option
// reset, the transaction and the temporary slot ended with the session,
// a custom script's stop run. It is safe to call more than once.
func (h *Condition) Stop(ctx context.Context) error {
	h.once.Do(func() {
		if h.cancel != nil {
			h.cancel()
			h.wg.Wait()
		}
		name := h.kind
		if h.conn != nil && !h.conn.IsClosed() {
			_, _ = h.conn.Exec(ctx, marker+" ROLLBACK")
			if name == ConditionAutovacuumOff {
				h.err = h.setAutovacuum(ctx, "RESET (autovacuum_enabled)", "")
			}
			h.conn.Close(ctx)
		}
		if h.run != nil {
			h.err = errors.Join(h.err, h.file(ctx, "stop"))
		}
		if h.copyDir != "" {
			os.RemoveAll(h.copyDir)
		}
		h.err = errors.Join(h.err, h.waitGone(ctx))
	})
	return h.err
}

// waitGone waits up to 10 s for the condition's server processes to
// end: a closed session's backend drops its slot and snapshot as it
// exits, a moment after the client is gone.
func (h *Condition) waitGone(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, h.connString)
	if err != nil {
		return fmt.Errorf("condition %s: cannot connect to see it gone: %w", h.Name, err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, marker+" SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", h.pids).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition %s: its sessions (pids %v) still run 10 s after they were closed", h.Name, h.pids)
		}
	}
}
