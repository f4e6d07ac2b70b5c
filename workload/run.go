package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
)

// MaxLoggedTx bounds the per-transaction log: the sampling rate is chosen
// so that about this many transactions are logged (about 4 MB).
const MaxLoggedTx = 100000

// MinLatencyPairs is the fewest back-to-back pairs (see TxLog.Intervals)
// a closed-loop run needs for its latency percentiles; with fewer, the
// percentiles are left out with a warning rather than taken from
// another method.
const MinLatencyPairs = 100

// maxTPSPerCPU bounds the transactions per second one CPU can serve,
// for the sampling rate when the throughput is not known: SELECT 1
// from 64 clients, the cheapest transaction, ran at 60 000 per CPU on
// this 2-core VM (Debian's PostgreSQL 15, 5 s cells). A host that
// exceeds it logs a little more than MaxLoggedTx, with more pairs.
const maxTPSPerCPU = 100000

// LatencyMethod says where a result's latency percentiles come from. It
// is decided by the run's configuration alone, never by what the run
// measured, so that every cell of a configuration uses the same one;
// cells whose methods differ must not be compared.
type LatencyMethod string

// The latency methods.
const (
	// LatencyIntervals: closed loop (no -R); the intervals between a
	// client's back-to-back completions (TxLog.Intervals).
	LatencyIntervals LatencyMethod = "completion-intervals"
	// LatencyPgbench: open loop (-R); pgbench's own latencies, counted
	// from each transaction's scheduled start (TxLog.Reported).
	LatencyPgbench LatencyMethod = "pgbench-latency"
)

// latencyMethod is the method of spec's runs.
func latencyMethod(s Spec) LatencyMethod {
	if s.Rate > 0 {
		return LatencyPgbench
	}
	return LatencyIntervals
}

// Defaults are the bash harness's.
const (
	DefaultDuration = 30 * time.Second
	DefaultClients  = 64
	DefaultPort     = 5432
	DefaultDatabase = "benchmark"
)

// Conn says where the server is. Empty fields fall back to the PG*
// environment variables, as with psql and pgbench, then to the defaults.
type Conn struct {
	Host     string
	Port     int
	User     string
	Database string
}

// Spec is one run of one workload.
type Spec struct {
	Workload Workload
	Conn     Conn
	// Duration is pgbench -T; ignored when Transactions is set.
	Duration time.Duration
	// Transactions is pgbench -t (per client).
	Transactions int
	Clients      int
	Threads      int
	// Protocol is simple, extended or prepared.
	Protocol string
	// SleepMS is think time appended to each transaction (-S).
	SleepMS int
	// Rate is pgbench -R: open-loop transactions per second.
	Rate float64
	// CPUs pins pgbench to these CPUs.
	CPUs []int
	// SampleEvery and WaitEvery are the sampler's intervals.
	SampleEvery, WaitEvery time.Duration
	// OutDir keeps pgbench's output, the script, the transaction log and
	// the samples; empty means a temporary directory that is removed.
	OutDir string
	// Pgbench is the pgbench to run; empty means pgbench on PATH.
	Pgbench string
	// KeepTxLog keeps pgbench's per-transaction log in OutDir (a few MB);
	// otherwise it is removed once read.
	KeepTxLog bool
	// ExpectedTPS, when known (a warm-up's or an earlier repeat's TPS),
	// sizes the per-transaction log's sampling rate; otherwise an upper
	// bound is assumed and fewer transactions are logged.
	ExpectedTPS float64
	// NoReset keeps pg_stat_statements' contents from before the run: a
	// measurement after a warm-up starts from the warmed-up state
	// (deallocs still count from the start of this run).
	NoReset bool
}

// Result is what one workload run measured.
type Result struct {
	Workload  string             `json:"workload"`
	Server    string             `json:"server"`
	Version   string             `json:"version"`
	Clients   int                `json:"clients"`
	Threads   int                `json:"threads"`
	Protocol  string             `json:"protocol"`
	Duration  float64            `json:"duration_s"`
	Rate      float64            `json:"rate,omitempty"`
	SleepMS   int                `json:"sleep_ms,omitempty"`
	StartedAt time.Time          `json:"started_at"`
	Metrics   map[string]float64 `json:"metrics"`
	// Saturated: with -R the schedule lag kept growing, so the server
	// could not keep the rate; the point must not be averaged in.
	Saturated  bool              `json:"saturated"`
	Summary    Summary           `json:"pgbench"`
	Progress   []Progress        `json:"progress"`
	Samples    []Sample          `json:"samples"`
	Waits      Waits             `json:"waits"`
	Final      Final             `json:"final"`
	Probe      *Counters         `json:"probe,omitempty"`
	Statements []Statement       `json:"statements,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
	Artifacts  map[string]string `json:"artifacts,omitempty"`
	// LoggedTx is how many transactions the latency percentiles are
	// computed from, at SamplingRate.
	LoggedTx     int     `json:"logged_tx"`
	SamplingRate float64 `json:"sampling_rate"`
	// LatencyMethod says where the latency percentiles come from;
	// LatencyDetail how many values they rest on.
	LatencyMethod LatencyMethod `json:"latency_method"`
	LatencyDetail string        `json:"latency_detail,omitempty"`
}

// ErrServer: the server cannot be reached or used.
var ErrServer = errors.New("workload: server")

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
}

func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

// resolve fills a Conn from the PG* variables and the defaults.
func (r *Runner) resolve(c Conn) Conn {
	if c.Host == "" {
		c.Host = r.getenv("PGHOST")
	}
	if c.Port == 0 {
		c.Port, _ = strconv.Atoi(r.getenv("PGPORT"))
		if c.Port == 0 {
			c.Port = DefaultPort
		}
	}
	if c.User == "" {
		c.User = r.getenv("PGUSER")
	}
	if c.Database == "" {
		c.Database = r.getenv("PGDATABASE")
		if c.Database == "" {
			c.Database = DefaultDatabase
		}
	}
	return c
}

// where names the server for messages: host:port or the socket path.
func (c Conn) where() string {
	host := c.Host
	if host == "" {
		host = "/var/run/postgresql"
	}
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("socket %s/.s.PGSQL.%d", host, c.Port)
	}
	return fmt.Sprintf("%s:%d", host, c.Port)
}

func (c Conn) connString(db string) string {
	parts := []string{"port=" + strconv.Itoa(c.Port), "dbname=" + quoteConn(db), "sslmode=prefer", "connect_timeout=10", "application_name=abtest"}
	if c.Host != "" {
		parts = append(parts, "host="+quoteConn(c.Host))
	}
	if c.User != "" {
		parts = append(parts, "user="+quoteConn(c.User))
	}
	return strings.Join(parts, " ")
}

func quoteConn(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// Check validates spec before anything runs.
func (s *Spec) Check() error {
	switch s.Protocol {
	case "":
		s.Protocol = "simple"
	case "simple", "extended", "prepared":
	default:
		return exitcode.BadInputf("-M %q: use simple, extended or prepared", s.Protocol)
	}
	if s.Workload.SimpleOnly && s.Protocol != "simple" {
		return exitcode.BadInputf("workload %s needs -M simple: its distinct query texts come from pgbench's textual substitution of variables, which -M %s turns into bind parameters", s.Workload.Name, s.Protocol)
	}
	if s.Clients == 0 {
		s.Clients = DefaultClients
	}
	if s.Clients < 1 {
		return exitcode.BadInputf("-c %d: want at least 1 client", s.Clients)
	}
	if s.Threads == 0 {
		n := runtime.NumCPU()
		if len(s.CPUs) > 0 {
			n = len(s.CPUs)
		}
		s.Threads = min(s.Clients, n)
	}
	if s.Threads < 1 || s.Threads > s.Clients {
		return exitcode.BadInputf("-j %d: want 1 to %d threads (no more than clients)", s.Threads, s.Clients)
	}
	if s.Duration == 0 && s.Transactions == 0 {
		s.Duration = DefaultDuration
	}
	if s.Duration < 0 || s.Transactions < 0 || s.Duration > 0 && s.Duration < time.Second {
		return exitcode.BadInputf("-d: want at least 1 second")
	}
	if s.Rate < 0 || s.SleepMS < 0 {
		return exitcode.BadInputf("-R and -S must not be negative")
	}
	if s.SampleEvery == 0 {
		s.SampleEvery = 5 * time.Second
	}
	if s.WaitEvery == 0 {
		s.WaitEvery = time.Second
	}
	return nil
}

// samplingRate picks pgbench's --sampling-rate so that about MaxLoggedTx
// transactions are logged. The transactions to come are estimated from
// -t, the rate (-R), ExpectedTPS, or else an upper bound: clients ×
// (1000/think time), or the lesser of clients × 20 000 and CPUs ×
// maxTPSPerCPU per second.
//
// A closed loop's percentiles need back-to-back pairs, which a rate r
// samples at r² (issue 13: at c = 64, d = 30 the old clients × 20 000
// bound logged so few pairs that every real cell fell back to pgbench's
// biased latencies). So the rate is at least √(MinLatencyPairs×10 /
// expected), which at the expected count yields ten times the pairs
// needed; with a good estimate the budget rate alone gives
// MaxLoggedTx²/expected pairs, 1 000 or more up to 10 M transactions.
func samplingRate(s Spec) float64 {
	var expected float64
	secs := s.Duration.Seconds()
	switch {
	case s.Transactions > 0:
		expected = float64(s.Transactions * s.Clients)
	case s.Rate > 0:
		expected = s.Rate * secs
	case s.ExpectedTPS > 0:
		expected = s.ExpectedTPS * secs
	case s.SleepMS > 0:
		expected = float64(s.Clients) * 1000 / float64(s.SleepMS) * secs
	default:
		cpus := runtime.NumCPU()
		if n := len(s.CPUs); n > 0 {
			cpus = n
		}
		expected = math.Min(float64(s.Clients)*20000, float64(cpus)*maxTPSPerCPU) * secs
	}
	if expected <= MaxLoggedTx {
		return 1
	}
	rate := MaxLoggedTx / expected
	if s.Rate == 0 {
		rate = math.Max(rate, math.Sqrt(10*MinLatencyPairs/expected))
	}
	// pgbench takes a decimal; keep four significant digits.
	return math.Min(1, math.Max(rate, 0.0001))
}

// pgbenchArgs returns pgbench's command line for spec.
func pgbenchArgs(s Spec, c Conn, script, logPrefix string, sampling float64) []string {
	args := []string{"-n", "-c", strconv.Itoa(s.Clients), "-j", strconv.Itoa(s.Threads), "-M", s.Protocol, "-P", strconv.Itoa(max(1, int(s.SampleEvery.Seconds())))}
	if s.Transactions > 0 {
		args = append(args, "-t", strconv.Itoa(s.Transactions))
	} else {
		args = append(args, "-T", strconv.Itoa(int(s.Duration.Seconds())))
	}
	if s.Rate > 0 {
		args = append(args, "-R", strconv.FormatFloat(s.Rate, 'f', -1, 64))
	}
	args = append(args, "--log", "--log-prefix="+logPrefix)
	if sampling < 1 {
		args = append(args, "--sampling-rate="+strconv.FormatFloat(sampling, 'g', 4, 64))
	}
	args = append(args, "-f", script, "-p", strconv.Itoa(c.Port))
	if c.Host != "" {
		args = append(args, "-h", c.Host)
	}
	if c.User != "" {
		args = append(args, "-U", c.User)
	}
	return append(args, c.Database)
}

// Run runs one workload against the server and measures it.
func (r *Runner) Run(ctx context.Context, s Spec) (*Result, error) {
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
	defer cleanup()
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

	conn, sv, err := r.prepare(ctx, c, s)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
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
	before, err := r.beforeRun(ctx, conn, sv, sm, c.Database, s)
	if err != nil {
		return nil, err
	}
	if err := r.runPgbench(ctx, cmd, sm, res, s); err != nil {
		return nil, err
	}
	if err := r.afterRun(ctx, conn, sv, sm, c.Database, before, res); err != nil {
		return nil, err
	}
	txlog, logs := readTxLogs(logPrefix, s.KeepTxLog)
	res.LoggedTx = txlog.Count()
	r.metrics(res, txlog, s)
	keepArtifacts(res, s, sv, dir, logPrefix, logs)
	r.report(out, res)
	return res, nil
}

// outDir is where a run writes: s.OutDir, made if missing, or a
// temporary directory cleanup removes.
func (r *Runner) outDir(s Spec) (dir string, cleanup func(), err error) {
	if s.OutDir == "" {
		tmp, err := os.MkdirTemp("", "abtest-bench-")
		if err != nil {
			return "", nil, exitcode.Failure(err)
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	if err := r.Proc.MkdirAll(s.OutDir, 0o755); err != nil {
		return "", nil, exitcode.Failure(err)
	}
	return s.OutDir, func() {}, nil
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
	close(stop)
	wg.Wait()
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
// into res; the probe is left out if other backends used db meanwhile.
func (r *Runner) afterRun(ctx context.Context, conn *pgx.Conn, sv *server, sm *sampler, db string, before Counters, res *Result) error {
	// The probe's second reading: after pgbench's backends are gone, so
	// their statistics are flushed.
	r.waitBackendsGone(ctx, conn, db, "pgbench", 10*time.Second)
	after, err := readCounters(ctx, conn, sv)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("%w: reading counters: %v", ErrServer, err))
	}
	if err := r.foreignBackends(ctx, conn, db, sm.foreign); err != nil {
		return exitcode.Failure(err)
	}
	if res.Final, err = sm.final(ctx); err != nil {
		return exitcode.Failure(fmt.Errorf("%w: pg_stat_statements: %v", ErrServer, err))
	}
	res.Statements, _ = topStatements(ctx, conn, 10)
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
	return nil
}

// readTxLogs reads pgbench's transaction logs (logPrefix.*) and removes
// them unless keep.
func readTxLogs(logPrefix string, keep bool) (*TxLog, []string) {
	var txlog TxLog
	logs, _ := filepath.Glob(logPrefix + ".*")
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
	var maxConn, reserved int
	q := marker + " SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int"
	if sv.versionNum >= 160000 {
		q += " + current_setting('reserved_connections')::int"
	}
	if err := conn.QueryRow(ctx, q).Scan(&maxConn, &reserved); err != nil {
		return fail(exitcode.Failure(err))
	}
	// The sampler holds one slot; leave one for a psql of the user's.
	if avail := maxConn - reserved - 2; s.Clients > avail {
		return fail(exitcode.BadInputf("%w: -c %d needs %d connections but %s allows %d (max_connections %d - %d reserved - 2 for abtest): lower -c or raise max_connections (abtest switch --max-clients %d, or --set max_connections=%d)",
			ErrServer, s.Clients, s.Clients, c.where(), avail, maxConn, reserved, s.Clients, s.Clients+reserved+10))
	}
	sv.locate(ctx, conn)
	return conn, sv, nil
}

// foreignBackends records client backends of the database other than
// pgbench's and abtest's own: their work would land in the probe.
func (r *Runner) foreignBackends(ctx context.Context, conn *pgx.Conn, db string, into map[int32]string) error {
	rows, err := conn.Query(ctx, marker+` SELECT pid, application_name FROM pg_stat_activity
WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> 'pgbench'`, db)
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

// metrics fills the flat metrics map.
//
// Latency: in a closed loop (no -R) the average is clients/TPS (Little's
// law, pgbench's own formula without -P) and the percentiles are those of
// the intervals between back-to-back completions of a client (see
// TxLog.Intervals); open loop, both are pgbench's, counted from each
// transaction's scheduled start.
func (r *Runner) metrics(res *Result, txlog *TxLog, s Spec) {
	m := res.Metrics
	sum := res.Summary
	m["tps"] = sum.TPS
	res.LatencyMethod = latencyMethod(s)
	var lat []float64
	if res.LatencyMethod == LatencyPgbench {
		lat = txlog.Reported()
	} else if lat = txlog.Intervals(); len(lat) < MinLatencyPairs {
		// Never another method's numbers: the percentiles are missing,
		// and the analysis calls the cell incomplete.
		res.Warnings = append(res.Warnings, fmt.Sprintf("latency percentiles left out: %d back-to-back pairs among %d logged transactions (sampling rate %.4g), %d needed; give ExpectedTPS or run longer",
			len(lat), txlog.Count(), res.SamplingRate, MinLatencyPairs))
		lat = nil
	}
	if s.Rate > 0 || sum.TPS <= 0 {
		m["latency_avg_ms"] = sum.LatencyAvgMS
	} else {
		m["latency_avg_ms"] = 1000 * float64(s.Clients) / sum.TPS
	}
	if p50, p95, p99, mx, ok := Percentiles(lat); ok {
		m["latency_p50_ms"], m["latency_p95_ms"], m["latency_p99_ms"], m["latency_max_ms"] = p50, p95, p99, mx
		res.LatencyDetail = fmt.Sprintf("%s, %d values from %d logged transactions (sampling rate %.4g)", res.LatencyMethod, len(lat), txlog.Count(), res.SamplingRate)
	}
	m["failed_tx"] = float64(sum.Failed)
	m["pgss_entries"] = float64(res.Final.Entries)
	m["pgss_deallocs"] = float64(res.Final.Deallocs)
	if res.Final.HasClass {
		m["pgss_hot"] = float64(res.Final.Hot)
		m["pgss_cold"] = float64(res.Final.Cold)
	}
	if total := res.Waits.Idle + res.Waits.Active; total > 0 {
		m["db_time_pct"] = 100 * float64(res.Waits.Active) / float64(total)
	}
	tx := float64(sum.Processed)
	if p := res.Probe; p != nil && tx > 0 {
		if p.WAL != nil {
			m["wal_records_per_tx"] = float64(p.WAL.Records) / tx
			m["wal_bytes_per_tx"] = float64(p.WAL.Bytes) / tx
			m["wal_fpi_per_tx"] = float64(p.WAL.FPI) / tx
		}
		var rows, calls int64
		for _, k := range p.Kinds {
			rows += k.Rows
			calls += k.Calls
		}
		m["statements_per_tx"] = float64(calls) / tx
		m["rows_per_tx"] = float64(rows) / tx
		m["tup_ins"] = float64(p.Tables.Ins)
		m["tup_upd"] = float64(p.Tables.Upd)
		m["tup_del"] = float64(p.Tables.Del)
		if p.HasCPU {
			m["server_cpu_s_per_tx"] = float64(p.CPUTicks) / clockTicks / tx
		}
	}
	if s.Rate > 0 {
		m["lag_avg_ms"] = sum.LagAvgMS
		res.Saturated = Saturated(res.Progress, sum)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture abtest runs on.
const clockTicks = 100

// Saturated reports whether an open-loop (-R) run could not keep its
// rate: the schedule lag grew over the run (the last third's mean lag is
// more than twice the first third's) and ended above a bound of 10 ms or
// ten average latencies, whichever is larger.
func Saturated(progress []Progress, sum Summary) bool {
	var lags []float64
	for _, p := range progress {
		if p.HasLag {
			lags = append(lags, p.LagMS)
		}
	}
	bound := math.Max(10, 10*sum.LatencyAvgMS)
	if len(lags) < 3 {
		return sum.LagAvgMS > bound
	}
	third := len(lags) / 3
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(lags[:third]), mean(lags[len(lags)-third:])
	return last > 2*first && last > bound
}

// report prints the end of run lines like the bash harness.
func (r *Runner) report(w io.Writer, res *Result) {
	fmt.Fprintf(w, "  %s\n", res.Waits.Line(res.Clients))
	fmt.Fprintf(w, "  TPS: %.0f", res.Summary.TPS)
	if res.Saturated {
		fmt.Fprint(w, " (SATURATED: schedule lag kept growing; the server did not keep the rate)")
	}
	fmt.Fprintln(w)
	m := res.Metrics
	if _, ok := m["latency_p50_ms"]; ok {
		fmt.Fprintf(w, "  latency: avg=%.3f p50=%.3f p95=%.3f p99=%.3f max=%.3f ms (%s)\n",
			m["latency_avg_ms"], m["latency_p50_ms"], m["latency_p95_ms"], m["latency_p99_ms"], m["latency_max_ms"], res.LatencyDetail)
	}
	f := res.Final
	if f.HasClass {
		fmt.Fprintf(w, "  FINAL: entries=%d hot=%d cold=%d hot_calls=%d cold_calls=%d\n", f.Entries, f.Hot, f.Cold, f.HotCalls, f.ColdCalls)
	} else {
		fmt.Fprintf(w, "  FINAL: entries=%d\n", f.Entries)
	}
	fmt.Fprintf(w, "  deallocs: %d\n", f.Deallocs)
	if len(f.Histogram) > 0 {
		var parts []string
		for _, b := range f.Histogram {
			parts = append(parts, fmt.Sprintf("%s:%d", b.Label, b.N))
		}
		fmt.Fprintf(w, "  histogram: %s\n", strings.Join(parts, " "))
	}
	if p := res.Probe; p != nil {
		line := fmt.Sprintf("  probe: tup_ins=%d upd=%d del=%d", p.Tables.Ins, p.Tables.Upd, p.Tables.Del)
		if p.WAL != nil {
			line += fmt.Sprintf(" wal_records=%d wal_bytes=%d fpi=%d", p.WAL.Records, p.WAL.Bytes, p.WAL.FPI)
		}
		if v, ok := m["server_cpu_s_per_tx"]; ok {
			line += fmt.Sprintf(" server_cpu=%.1fµs/tx", v*1e6)
		}
		fmt.Fprintln(w, line)
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "  WARNING: %s\n", warn)
	}
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
