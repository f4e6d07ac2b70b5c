package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
)

// Runner runs workloads.
type Runner struct {
	Proc *proc.Runner
	// User, when set, runs pgbench with that account's credentials (as
	// root: the server's account, so a workload script never runs as
	// root); the run's directory is handed to it, since pgbench writes
	// its transaction log there.
	User *proc.User
	// Out receives the live lines (samples, db_time, TPS); nil discards.
	Out io.Writer
	// Getenv reads PG* variables; nil means os.Getenv.
	Getenv func(string) string
	// Sessions, when set, keeps abtest's connection to a server from
	// one run to the next (see Sessions); nil connects anew each run.
	Sessions *Sessions
}

// Run runs one workload against the server and measures it. Without
// s.OutDir its files are in a temporary directory, removed unless the
// run failed: a failure's error names a log in it (pgbench.log).
func (r *Runner) Run(ctx context.Context, s Spec) (_ *Result, err error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	c := r.resolve(s.Conn)
	out := r.Out
	if out == nil {
		out = io.Discard
	}
	dir, cleanup, err := r.outDir(s)
	if err != nil {
		return nil, err
	}
	defer func() { cleanup(err != nil) }()
	script := filepath.Join(dir, s.Workload.Name+".sql")
	text := WithThinkTime(s.Workload.Script, s.SleepMS)
	sampling := samplingRate(s)
	logPrefix := filepath.Join(dir, "txlog")
	pgbench := s.Pgbench
	if pgbench == "" {
		pgbench = "pgbench"
	}
	cmd := proc.Cmd{Path: pgbench, Args: pgbenchArgs(s, c, script, logPrefix, sampling), Dir: dir, CPUs: s.CPUs, Log: filepath.Join(dir, "pgbench.log"), User: r.User}
	if r.Proc.DryRun {
		if err := r.Proc.WriteFile(script, []byte(text), 0o644); err != nil {
			return nil, err
		}
		return nil, r.Proc.Run(ctx, cmd)
	}

	conn, sv, release, err := r.connect(ctx, c, s)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() { release(ok) }()
	if !s.SetupDone {
		if err := RunSetup(ctx, c, s.Workload); err != nil {
			return nil, err
		}
	}
	if err := safefile.WriteFile(script, []byte(text), 0o644); err != nil {
		return nil, exitcode.Failure(err)
	}
	// pgbench writes its transaction log into dir: as another account it
	// needs the directory (Lchown: never through a link).
	if r.User != nil {
		if err := os.Lchown(dir, int(r.User.UID), int(r.User.GID)); err != nil {
			return nil, exitcode.Failure(err)
		}
	}
	res := &Result{
		Workload: s.Workload.Name, Server: c.where(), Version: sv.version, Clients: s.Clients, Threads: s.Threads,
		Protocol: s.Protocol, Duration: s.Duration.Seconds(), Rate: s.Rate, SleepMS: s.SleepMS,
		Metrics: map[string]float64{}, SamplingRate: sampling,
		Artifacts: map[string]string{"script": script, "pgbench": cmd.Log},
	}
	fmt.Fprintf(out, "--- %s [clients=%d jobs=%d proto=%s %s] ---\n", s.Workload.Name, s.Clients, s.Threads, s.Protocol, durationLabel(s))

	sm := &sampler{conn: conn, w: s.Workload, every: s.SampleEvery, waitEvery: s.WaitEvery, out: out, dbName: c.Database,
		hasSince: sv.versionNum >= 170000, hasInfo: sv.versionNum >= 140000, foreign: map[int32]string{}}
	clock := startObserving(conn)
	before, err := r.beforeRun(ctx, conn, sv, sm, c.Database, s)
	if err != nil {
		return nil, err
	}
	if err := r.runPgbench(ctx, cmd, sm, res, s); err != nil {
		return nil, err
	}
	after, err := r.afterRun(ctx, conn, sv, sm, c.Database, before, res)
	if err != nil {
		return nil, err
	}
	logs := r.readLog(res, s, logPrefix)
	// Reading the latency log is measuring's cost: the clock stops after.
	clock.finish(res.Observer, before, after)
	logCost(res.Observer, res.LoggedTx)
	if err := readDeclared(ctx, conn, s.Workload, res); err != nil {
		return nil, err
	}
	keepArtifacts(res, s, sv, dir, logPrefix, logs)
	r.report(out, res)
	ok = true
	return res, nil
}

// outDir is where a run writes: s.OutDir, made if missing, or a
// temporary directory cleanup removes.
func (r *Runner) outDir(s Spec) (dir string, cleanup func(failed bool), err error) {
	if s.OutDir == "" {
		tmp, err := safefile.MkdirTemp(os.TempDir(), "abtest-bench-")
		if err != nil {
			return "", nil, exitcode.Failure(err)
		}
		return tmp, func(failed bool) {
			if failed {
				os.Remove(tmp) // only when empty: a failure before any file
			} else {
				os.RemoveAll(tmp)
			}
		}, nil
	}
	if err := r.Proc.MkdirAll(s.OutDir, 0o755); err != nil {
		return "", nil, exitcode.Failure(err)
	}
	return s.OutDir, func(bool) {}, nil
}

// beforeRun notes the backends already on db, resets
// pg_stat_statements (unless s.NoReset) and takes the sampler's and the
// probe's first readings.
func (r *Runner) beforeRun(ctx context.Context, conn *pgx.Conn, sv *server, sm *sampler, db string, s Spec) (Counters, error) {
	// abtest's own earlier connections to db (the warm-up's) are closed,
	// but their backends exit asynchronously: under load one was still
	// listed when the measurement began and the cell lost its probe
	// counters (the from-source A/A run: 3 of 24 cells at load ~8).
	// Wait for them, briefly, before noting who else uses db.
	r.waitBackendsGone(ctx, conn, db, "abtest", 2*time.Second)
	if err := r.foreignBackends(ctx, conn, db, sm.foreign); err != nil {
		return Counters{}, exitcode.Failure(err)
	}
	if !s.NoReset {
		if _, err := conn.Exec(ctx, marker+" SELECT pg_stat_statements_reset()"); err != nil {
			return Counters{}, exitcode.Failure(fmt.Errorf("%w: pg_stat_statements_reset(): %v", ErrServer, err))
		}
	}
	var err error
	if sm.deallocBase, err = sm.dealloc(ctx); err != nil {
		return Counters{}, exitcode.Failure(fmt.Errorf("%w: pg_stat_statements_info: %v", ErrServer, err))
	}
	before, err := readCounters(ctx, conn, sv)
	if err != nil {
		return Counters{}, exitcode.Failure(fmt.Errorf("%w: reading counters: %v", ErrServer, err))
	}
	last := sv.last
	sv.last = nil
	if !s.Continues || !s.NoReset {
		last = nil
	}
	if before.Kinds, err = sm.baseline(ctx, last); err != nil {
		return Counters{}, exitcode.Failure(fmt.Errorf("%w: pg_stat_statements: %v", ErrServer, err))
	}
	if sm.seesXmin, err = seesXmin(ctx, conn); err == nil && sm.seesXmin {
		_, err = sm.readXmin(ctx)
	}
	if err != nil {
		return Counters{}, exitcode.Failure(fmt.Errorf("%w: reading the oldest xmin: %v", ErrServer, err))
	}
	return before, nil
}

// runPgbench runs pgbench with the sampler beside it and reads into res
// its progress lines, its summary and the sampler's readings.
func (r *Runner) runPgbench(ctx context.Context, cmd proc.Cmd, sm *sampler, res *Result, s Spec) error {
	var mu sync.Mutex
	var lastTPS float64
	cmd.Stderr = &lineWriter{fn: func(line string) {
		if p, ok := ParseProgress(line); ok {
			mu.Lock()
			res.Progress = append(res.Progress, p)
			lastTPS = p.TPS
			mu.Unlock()
		}
	}}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	res.StartedAt = time.Now().UTC()
	p, err := r.Proc.Start(ctx, cmd)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("pgbench: %w", err))
	}
	stop := make(chan struct{})
	sm.start = time.Now()
	sm.tps = func() float64 { mu.Lock(); defer mu.Unlock(); return lastTPS }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); sm.run(ctx, stop) }()
	werr := p.Wait()
	window := time.Since(sm.start)
	close(stop)
	wg.Wait()
	res.Observer = &Observer{WindowS: window.Seconds(), PgbenchS: p.CPUTime().Seconds(), Queries: sm.queries}
	if werr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return exitcode.Failure(fmt.Errorf("workload %s: %w", s.Workload.Name, werr))
	}
	if sm.err != nil {
		res.Warnings = append(res.Warnings, "sampler: "+sm.err.Error())
	}
	res.Summary = ParseSummary(&stdout)
	if !res.Summary.Complete {
		return exitcode.Failure(fmt.Errorf("workload %s: pgbench printed no final tps (log: %s)", s.Workload.Name, cmd.Log))
	}
	res.Samples, res.Waits = sm.samples, sm.waits
	return nil
}

// afterRun takes the probe's and pg_stat_statements' second readings
// into res, and returns the probe's; the probe is left out of res if
// other backends used db meanwhile.
func (r *Runner) afterRun(ctx context.Context, conn *pgx.Conn, sv *server, sm *sampler, db string, before Counters, res *Result) (Counters, error) {
	// The probe's second reading: after pgbench's backends are gone, so
	// their statistics are flushed.
	r.waitBackendsGone(ctx, conn, db, "pgbench", 10*time.Second)
	after, err := readCounters(ctx, conn, sv)
	if err != nil {
		return after, exitcode.Failure(fmt.Errorf("%w: reading counters: %v", ErrServer, err))
	}
	if sm.seesXmin {
		if _, err := sm.readXmin(ctx); err != nil {
			return after, exitcode.Failure(fmt.Errorf("%w: reading the oldest xmin: %v", ErrServer, err))
		}
		age := sm.xminMax
		res.OldestXminAge = &age
	}
	res.xminHidden = !sm.seesXmin
	if err := r.foreignBackends(ctx, conn, db, sm.foreign); err != nil {
		return after, exitcode.Failure(err)
	}
	var last *pgssReading
	if res.Final, res.Statements, last, err = sm.final(ctx); err != nil {
		return after, exitcode.Failure(fmt.Errorf("%w: pg_stat_statements: %v", ErrServer, err))
	}
	after.Kinds, sv.last = last.kinds, last
	if len(sm.foreign) == 0 {
		d := after.Sub(before)
		res.Probe = &d
	} else {
		var who []string
		for pid, app := range sm.foreign {
			who = append(who, fmt.Sprintf("pid %d (%q)", pid, app))
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("foreign backends used database %s during the run: %s; probe counters left out, they would count its work too", db, strings.Join(who, ", ")))
	}
	return after, nil
}

// readLog reads the run's transaction log into res's metrics and
// returns its files.
func (r *Runner) readLog(res *Result, s Spec, logPrefix string) []string {
	txlog, logs := readTxLogs(logPrefix, s.KeepTxLog)
	res.LoggedTx = txlog.Count()
	r.metrics(res, txlog, s)
	return logs
}

// readTxLogs reads pgbench's transaction logs (logPrefix.*) and removes
// them unless keep.
func readTxLogs(logPrefix string, keep bool) (*TxLog, []string) {
	var txlog TxLog
	logs, _ := filepath.Glob(logPrefix + ".*")
	// A line is about 30 bytes: sized once, the transactions are not
	// copied as they grow.
	var size int64
	for _, f := range logs {
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	txlog.tx = make([]loggedTx, 0, size/28)
	for _, f := range logs {
		if fh, err := os.Open(f); err == nil {
			txlog.ReadTxLog(fh)
			fh.Close()
		}
	}
	if !keep {
		for _, f := range logs {
			os.Remove(f)
		}
	}
	return &txlog, logs
}

// keepArtifacts lists in res the files a run with an OutDir leaves
// (samples, kept transaction logs, the server log's tail); without one
// there are none.
func keepArtifacts(res *Result, s Spec, sv *server, dir, logPrefix string, logs []string) {
	if s.OutDir == "" {
		res.Artifacts = nil
		return
	}
	if err := writeJSON(filepath.Join(dir, "samples.json"), res.Samples); err == nil {
		res.Artifacts["samples"] = filepath.Join(dir, "samples.json")
	}
	if len(logs) > 0 && s.KeepTxLog {
		res.Artifacts["txlog"] = logPrefix + ".*"
	}
	if sv.dataDir != "" {
		if n := cluster.CopyLogSince(filepath.Join(sv.dataDir, "server.log"), filepath.Join(dir, "server.log"), res.StartedAt); n {
			res.Artifacts["server_log"] = filepath.Join(dir, "server.log")
		}
	}
}

func durationLabel(s Spec) string {
	if s.Transactions > 0 {
		return fmt.Sprintf("transactions=%d", s.Transactions)
	}
	l := fmt.Sprintf("duration=%.0fs", s.Duration.Seconds())
	if s.Rate > 0 {
		l += fmt.Sprintf(" rate=%g", s.Rate)
	}
	if s.SleepMS > 0 {
		l += fmt.Sprintf(" sleep=%dms", s.SleepMS)
	}
	return l
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteFile(path, append(data, '\n'), 0o644)
}
