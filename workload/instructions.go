package workload

// Instructions per transaction: the CPU cost of a workload measured as a
// count, not a time, so that a laptop, a cloud VM or a CI runner can call
// a change of a fraction of a percent (issue 15: on this 2-core VM TPS
// varies 5.5–7.6 % between cells, so wall-clock runs cannot see a 5 %
// slow-down; instruction counts repeat to a few parts per million).
//
// The measurement runs on the real client/server path. The postmaster
// is started under valgrind's callgrind, which counts instructions
// (no cache simulation); valgrind follows fork(), so every backend is
// counted, each into its own file (callgrind.out.PID). pgbench runs one
// client for a fixed number of transactions with a fixed --random-seed,
// so that churn's random queries repeat exactly. Which backends served
// pgbench is read from the server log (log_connections,
// application_name=pgbench): its setup connection and its client.
//
// Connection start-up and shutdown cost more than thousands of
// transactions (measured on Debian's PostgreSQL 15: tens of millions of
// instructions for pgbench's two connections, against about 38 k per
// SELECT 1), so they are taken out by difference: one server runs N and
// then 2N transactions, and
//
//	instructions_per_tx = (I(2N) − I(N)) / N
//
// where I is the instructions of a run's pgbench backends, those the
// server logged after the run began. What the two runs do differently
// must be exactly transactions N+1 … 2N, so both meet the same state:
// pg_stat_statements is emptied before each, a warm-up run before them
// has the postmaster serve pgbench once, and a file: workload's warm-up
// of N transactions puts the pages of their first N transactions in
// shared buffers for both (instrOneServer says why, with figures).
// Valgrind client requests (toggling instrumentation around the window)
// would need a patched pgbench or server; the difference needs neither.
//
// Until this procedure each run had a server of its own (method
// valgrind-callgrind): two starts and fast shutdowns under valgrind,
// about 4.5 s of a measurement's 11 s. Measured alternately on this
// 2-core VM (Debian 12), 4 rounds, then 3 on the demo's build: on
// Debian's PostgreSQL 15 the two procedures agree to 0.0006 % (select1,
// 37 956.22 against 37 956.00) and 0.00003 % (churn); on the demo's
// PostgreSQL 15 build (pg_stat_statements.max = 1000) select1 moved by
// +0.011 % (34 555.6–34 556.3 to 34 559.8–34 560.1: where the backends'
// allocations land) and churn by up to +0.009 % (it takes one of a few
// values about 6 instructions per transaction apart, with either
// procedure). That is more than a twentieth of a verdict's 0.1 % band,
// so the method has a new name and the two are never compared. At load
// average 2.2–3.5 a measurement of select1 took 7.1–7.7 s against
// 8.7–11.6 s, of churn 9.5–10.5 s against 10.7–12.3 s, and
// `abtest bench --instructions -w select1,churn` 15.7–17.0 CPU-seconds
// against 19.7–20.2 (17.1–18.2 s against 20.6–23.6 s); on Debian's
// PostgreSQL 15 select1 took 8.9–13.4 s against 11.1–15.1 s at load
// 3.5–6.8. A file: workload's warm-up of N transactions costs more than
// the start it saves: 19.7–21.9 s against 17.5–19.6 s at load 2.6–4.
//
// Not every instruction repeats: some run as often as the clock or the
// scheduler decide, and the machine's load changes both. Each source
// found is shut out where it arises:
//
//   - A forked backend's counters start as a copy of the postmaster's,
//     whose history depends on timing (how often it woke in ServerLoop,
//     which children it reaped before the fork, symbols bound lazily:
//     ServerLoop, reaper, LogChildExit, _dl_fixup, do_lookup_x).
//     Counting starts at PostgresMain (callgrind --collect-atstart=no
//     --toggle-collect=PostgresMain), so nothing of the postmaster is
//     counted.
//   - The wait for the next query and the statistics flush
//     (TimingDependent) are left out with everything they call: leaving
//     out only their own instructions, as cachegrind's flat counts
//     allowed, still counted their callees — the PLT stubs of recv and
//     epoll_wait, the flush's LWLockAcquire, hash look-ups and
//     allocations — about proportional to the run's wall time.
//   - Signal handlers run when the signal comes; callgrind counts a
//     handler only if collection is on at start, which it is not.
//   - LD_BIND_NOW=1: symbols are bound when the postmaster starts, not
//     at a first call that may fall in a timing-dependent path.
//   - The server runs without autovacuum and without process-title
//     updates, and is stopped only after pgbench's backends have exited
//     (see serverArgs and waitReaped).
//
// Measured on Debian's PostgreSQL 15 on this 2-core VM, N = 2 000, with
// the load average at 7–9 (two busy loops besides other engineers'
// builds and tests): 5 runs of select1 spread 0.0010 % (38 458.86 to
// 38 459.26) and of churn 0.0014 % (67 731.39 to 67 732.32), and select1
// on two data directories 0.0015 %; what still moves is one malloc
// taking a longer path in some runs (_int_malloc, about 750
// instructions per run). The cachegrind method before it spread 0.005 %
// under the same load, 0.033 % under a heavier one (I(N) moving by
// 25 000 instructions), and differed by +8 instructions per transaction
// between two data directories (the process title's strlen). One
// measurement (two server starts under valgrind, 2 000 + 4 000
// transactions) took 14.6–15.6 s at load 6.7 against 11.1–12.2 s with
// cachegrind measured alternately: callgrind tracks calls, which
// cachegrind does not. With one server (this procedure), at load 5–10:
// 3 runs of select1 spread 0.00002 % and 0.0051 % (once the 2N run
// counted 3 864 instructions more), of churn 0.00034 % and 0.00014 %;
// the demo's churn spreads up to 0.0095 % (its few values). A patch that
// changes only the TimingDependent functions or their callees below
// them is not seen by this metric.
//
// Where the host has a PMU (not in most VMs), perf stat -e
// instructions:u counts the same thing about fifty times faster; it
// counts the whole server (perf stat follows forks, but cannot tell
// backends apart), so background processes add a little noise, and
// each run has a server of its own (start and shutdown are counted, so
// both runs must have them alike). Results record the method, and cells
// measured differently must not be compared.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/google/pprof/profile"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/results"
)

// InstrMethod is how instructions were counted. Values measured by
// different methods are not comparable.
type InstrMethod string

// The instruction-counting methods.
const (
	// InstrValgrind simulates the CPU with valgrind's callgrind: exact
	// and the same on any x86-64 host, about 50× slower than native.
	// Both runs are served by one server. ("valgrind-callgrind" started
	// a server per run, and its values differ by up to 0.011 %; before
	// it "valgrind-cachegrind" counted the process title and the callees
	// of the timing-dependent paths: different methods, never compared
	// with this one.)
	InstrValgrind InstrMethod = "valgrind-callgrind-one-server"
	// InstrPerfStat counts instructions:u with the CPU's own counter.
	InstrPerfStat InstrMethod = "perf-stat"
)

// DefaultInstrTransactions is N. Under valgrind, Debian's PostgreSQL 15
// runs SELECT 1 from one client at about 3 000 transactions per second
// on this 2-core VM, so 2 000 + 4 000 transactions take a few seconds
// beside the two server starts.
const DefaultInstrTransactions = 2000

// DefaultInstrSeed is pgbench's --random-seed when none is given.
const DefaultInstrSeed = 1

// TimingDependent lists the functions whose instructions, callees
// included, are left out of the count, because how often they run or
// how far they get depends on timing, not on the transactions (see the
// package comment for the figures):
//
//   - secure_read: reading the next query; when pgbench has not sent it
//     yet, recv fails with EAGAIN and the backend waits
//     (WaitEventSetWait, epoll_wait, ProcessClientReadInterrupt) and
//     reads again.
//   - pgstat_report_stat: reads the clock after every transaction and
//     flushes pending statistics at most once a second (locks, hash
//     look-ups and allocations of the flush).
//   - enable_timeout_after, disable_timeout: the idle-statistics timer
//     is armed after a transaction whose statistics were not flushed and
//     disarmed after one whose were.
//
// They are valgrind --toggle-collect functions, which toggle: none may
// call another (a nested one would switch counting back on).
var TimingDependent = []string{"secure_read", "pgstat_report_stat", "enable_timeout_after", "disable_timeout"}

// measuredEntry is where counting starts in a backend: the postmaster
// and the forked child's start-up before it are not counted (valgrind's
// counters are copied by fork, so without this each backend would carry
// the postmaster's own instructions up to its fork). PostgresMain exists
// under that name in every supported PostgreSQL version.
const measuredEntry = "PostgresMain"

// ErrNoInstrMethod: neither perf stat nor valgrind can count instructions
// on this host.
var ErrNoInstrMethod = errors.New("workload: no way to count instructions")

// ErrDataDirInUse: the data directory has a postmaster.pid, so a server
// runs on it (or crashed without removing it).
var ErrDataDirInUse = errors.New("workload: data directory in use")

// InstrSpec is one instruction measurement. The server is started (once
// under valgrind, once per run under perf stat) on DataDir, which must be
// initialized, stopped, and hold Database (with pg_stat_statements where
// the workload wants it: a data directory abtest's cluster package made
// and started once has both).
type InstrSpec struct {
	// Install is the PostgreSQL installation: bin/postgres and
	// bin/pgbench are used.
	Install string
	// Env is added to the server's and pgbench's environment, e.g.
	// LD_LIBRARY_PATH for an install outside the linker's path.
	Env []string
	// DataDir, SocketDir and Port say where the server runs; they
	// override the data directory's own settings.
	DataDir   string
	SocketDir string
	Port      int
	// RunAs runs the server as this account (when abtest is root); nil
	// runs it as the caller.
	RunAs *proc.User
	// User and Database are pgbench's -U (empty: libpq's default) and
	// database (empty: DefaultDatabase).
	User     string
	Database string
	Workload Workload
	// Protocol is pgbench's -M (simple when empty).
	Protocol string
	// Transactions is N (DefaultInstrTransactions when zero).
	Transactions int
	// Seed is pgbench's --random-seed (DefaultInstrSeed when zero).
	Seed int64
	// Method; empty picks perf stat where it works, else valgrind.
	Method InstrMethod
	// OutDir receives the server logs, the per-process counts and the
	// profile; required.
	OutDir string
	// StartTimeout bounds each server start and each wait for a run's
	// backends to exit (default 2 minutes: valgrind starts Debian's
	// PostgreSQL 15 in about 1.5 s here).
	StartTimeout time.Duration
}

// InstrRun is one of the two runs.
type InstrRun struct {
	Transactions int `json:"transactions"`
	// Instructions of pgbench's backends from PostgresMain on, without
	// the TimingDependent functions (valgrind), or of the whole server
	// (perf stat).
	Instructions int64 `json:"instructions"`
	// Backends are the pids of pgbench's backends (valgrind only).
	Backends []int `json:"backends,omitempty"`
	// Files are the per-process counts read (callgrind.out.PID), or
	// perf stat's report.
	Files []string `json:"files"`
	// ServerLog is the log of the server that ran it: one server's for
	// both runs under valgrind.
	ServerLog string `json:"server_log"`
	// WallS is the run's wall time: from the server's start to its stop
	// (perf stat), from pg_stat_statements' reset to the backends' exit
	// (valgrind).
	WallS float64 `json:"wall_s"`
}

// InstrResult is what an instruction measurement found.
type InstrResult struct {
	Method       InstrMethod `json:"method"`
	Workload     string      `json:"workload"`
	Protocol     string      `json:"protocol"`
	Transactions int         `json:"transactions"`
	Seed         int64       `json:"seed"`
	// PerTx is (I(2N) − I(N)) / N; Window is I(2N) − I(N).
	PerTx  float64 `json:"instructions_per_tx"`
	Window int64   `json:"instructions"`
	// Runs are the N and the 2N run.
	Runs [2]InstrRun `json:"runs"`
	// Profile holds the instructions of the window per function
	// (sample type instructions/count, comment transactions=N); nil
	// for perf stat, which has no per-function counts.
	Profile *profile.Profile `json:"-"`
	// ProfilePath is where Profile was written (OutDir/instructions.pb.gz).
	ProfilePath string  `json:"profile,omitempty"`
	WallS       float64 `json:"wall_s"`
}

// Metrics returns the result as flat metrics for a cell.
func (r *InstrResult) Metrics() map[string]float64 {
	return map[string]float64{results.MetricInstructionsPerTx: r.PerTx, results.MetricInstructions: float64(r.Window)}
}

// DetectInstrMethod returns the method this host can use: perf stat
// where the CPU's counter works, else valgrind when installed, else
// ErrNoInstrMethod with the reason (for a one-line skip).
func DetectInstrMethod(ctx context.Context, run *proc.Runner) (InstrMethod, error) {
	perr := perf.CheckInstructions(ctx, run)
	if perr == nil {
		return InstrPerfStat, nil
	}
	if _, err := exec.LookPath("valgrind"); err == nil {
		return InstrValgrind, nil
	}
	return "", exitcode.Failure(fmt.Errorf("%w: %v, and valgrind is not installed (apt-get install valgrind)", ErrNoInstrMethod, perr))
}

func (s *InstrSpec) check() error {
	switch {
	case s.Install == "":
		return exitcode.BadInputf("instructions: no PostgreSQL install given")
	case s.DataDir == "" || s.SocketDir == "" || s.OutDir == "":
		return exitcode.BadInputf("instructions: data directory, socket directory and output directory are required")
	case s.Port <= 0 || s.Port > 65535:
		return exitcode.BadInputf("instructions: port %d out of range", s.Port)
	case s.Workload.Script == "":
		return exitcode.BadInputf("instructions: workload %q has no script", s.Workload.Name)
	case s.Transactions < 0:
		return exitcode.BadInputf("instructions: -t %d: want a positive number of transactions", s.Transactions)
	}
	if err := checkProtocol(&s.Protocol, s.Workload); err != nil {
		return err
	}
	switch s.Method {
	case "", InstrValgrind, InstrPerfStat:
	default:
		return exitcode.BadInputf("instructions: unknown method %q (want %s or %s)", s.Method, InstrValgrind, InstrPerfStat)
	}
	if s.Transactions == 0 {
		s.Transactions = DefaultInstrTransactions
	}
	if s.Seed == 0 {
		s.Seed = DefaultInstrSeed
	}
	if s.Database == "" {
		s.Database = DefaultDatabase
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = 2 * time.Minute
	}
	return nil
}

// Instructions measures the instructions per transaction of s.Workload:
// two runs (N and 2N transactions, one client) on one server started
// under valgrind (instrOneServer), or each on a server of its own under
// perf stat, on s.DataDir; every server is stopped (fast shutdown)
// before Instructions returns, on every path. In dry-run mode
// it prints the commands of both runs and returns nil.
func Instructions(ctx context.Context, run *proc.Runner, s InstrSpec) (*InstrResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.Method == "" {
		m, err := DetectInstrMethod(ctx, run)
		if err != nil {
			return nil, err
		}
		s.Method = m
	}
	if _, err := os.Stat(filepath.Join(s.DataDir, "postmaster.pid")); err == nil {
		return nil, exitcode.BadInputf("%w: %s has a postmaster.pid: stop its server first (instructions are counted on a server abtest starts itself)", ErrDataDirInUse, s.DataDir)
	}
	start := time.Now()
	res := &InstrResult{Method: s.Method, Workload: s.Workload.Name, Protocol: s.Protocol, Transactions: s.Transactions, Seed: s.Seed}
	var counts [2]*perf.Cachegrind
	var err error
	if s.Method == InstrValgrind {
		res.Runs, counts, err = instrOneServer(ctx, run, s)
	} else {
		res.Runs, err = instrPerfRuns(ctx, run, s)
	}
	if err != nil || run.DryRun {
		return nil, err
	}
	res.Window = res.Runs[1].Instructions - res.Runs[0].Instructions
	res.PerTx = float64(res.Window) / float64(s.Transactions)
	if res.Window <= 0 {
		logs := res.Runs[0].ServerLog
		if res.Runs[1].ServerLog != logs {
			logs += ", " + res.Runs[1].ServerLog
		}
		return nil, exitcode.Failure(fmt.Errorf("instructions: the %d-transaction run counted %d instructions, the %d-transaction run %d: no positive difference (log: %s)",
			res.Runs[1].Transactions, res.Runs[1].Instructions, res.Runs[0].Transactions, res.Runs[0].Instructions, logs))
	}
	if counts[0] != nil && counts[1] != nil {
		res.Profile = perf.InstructionProfile(counts[1].Sub(counts[0]), int64(s.Transactions))
		res.Profile.Comments = append(res.Profile.Comments, "method="+string(s.Method), "workload="+s.Workload.Name)
		res.ProfilePath = filepath.Join(s.OutDir, "instructions.pb.gz")
		if err := profiles.Write(res.Profile, res.ProfilePath); err != nil {
			return nil, exitcode.Failure(fmt.Errorf("instructions: writing the profile: %w", err))
		}
	}
	res.WallS = time.Since(start).Seconds()
	return res, nil
}

// serverArgs are the postgres options of a measured server: its own
// socket and port, no TCP, connections logged with the pid first (to
// find pgbench's backends), untranslated messages, and
// pg_stat_statements starting empty, and no autovacuum: a worker that
// vacuums or analyzes a catalog while pgbench runs sends invalidations
// the measured backend must process, at a moment that depends on how
// long the run takes (a run under load takes longer); and no process
// title updates: set_ps_display runs strlen over the title, which lives
// where the kernel put the postmaster's argv, so its cost depends on the
// length of the install path, the data directory and the environment
// (+8 instructions per transaction between two data directories of one
// install), not on the code.
func serverArgs(s InstrSpec) []string {
	return []string{
		"-D", s.DataDir, "-p", strconv.Itoa(s.Port), "-k", s.SocketDir,
		"-c", "listen_addresses=",
		"-c", "logging_collector=off",
		"-c", "log_connections=on",
		"-c", "log_line_prefix=%p ",
		"-c", "lc_messages=C",
		"-c", "pg_stat_statements.save=off",
		"-c", "autovacuum=off",
		"-c", "update_process_title=off",
	}
}

// instrPerfRuns runs N and 2N transactions under perf stat, each on a
// server of its own: perf stat counts the whole server, start and
// shutdown included, so both runs must start it alike.
func instrPerfRuns(ctx context.Context, run *proc.Runner, s InstrSpec) ([2]InstrRun, error) {
	var runs [2]InstrRun
	for i, n := range []int{s.Transactions, 2 * s.Transactions} {
		r, err := instrPerfRun(ctx, run, s, n, filepath.Join(s.OutDir, fmt.Sprintf("run-%d", n)))
		if err != nil {
			return runs, err
		}
		runs[i] = r
	}
	return runs, nil
}

// instrPerfRun starts the server under perf stat, runs n transactions,
// stops the server and reads perf stat's count.
func instrPerfRun(ctx context.Context, run *proc.Runner, s InstrSpec, n int, dir string) (InstrRun, error) {
	r := InstrRun{Transactions: n, ServerLog: filepath.Join(dir, "server.log")}
	if err := instrRunDir(run, s, dir); err != nil {
		return r, err
	}
	statFile := filepath.Join(dir, "perf-stat.csv")
	cmd := instrServerCmd(s, dir, statFile, r.ServerLog)
	script := filepath.Join(dir, s.Workload.Name+".sql")
	pgb := instrPgbenchCmd(s, n, dir, script, "pgbench.log")
	if run.DryRun {
		return r, instrDryRun(ctx, run, s, cmd, script, []proc.Cmd{pgb}, nil,
			fmt.Sprintf("stop the server (SIGINT: fast shutdown) and read perf stat's count in %s", statFile))
	}
	if err := safefile.WriteFile(script, []byte(s.Workload.Script), 0o644); err != nil {
		return r, exitcode.Failure(err)
	}
	began := time.Now()
	srv, err := startInstrServer(ctx, run, s, cmd)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	if err := instrPgbench(ctx, run, s, n, pgb); err != nil {
		return r, err
	}
	if err := srv.stop(); err != nil {
		return r, exitcode.Failure(fmt.Errorf("instructions: stopping the server: %w (log: %s)", err, r.ServerLog))
	}
	r.WallS = time.Since(began).Seconds()
	_, err = instrCounts(&r, s, dir, statFile, nil)
	return r, err
}

// instrServer is a measured server abtest started; stop stops it once.
type instrServer struct {
	p       *proc.Process
	dataDir string
	stopped bool
}

// startInstrServer starts cmd and waits until it accepts connections;
// on an error the server is stopped.
func startInstrServer(ctx context.Context, run *proc.Runner, s InstrSpec, cmd proc.Cmd) (*instrServer, error) {
	p, err := run.Start(ctx, cmd)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("instructions: starting the server: %w", err))
	}
	srv := &instrServer{p: p, dataDir: s.DataDir}
	if err := waitServer(ctx, p, s); err != nil {
		srv.stop()
		return nil, err
	}
	return srv, nil
}

func (srv *instrServer) stop() error {
	if srv.stopped {
		return nil
	}
	srv.stopped = true
	return stopServer(srv.p, srv.dataDir)
}

// instrRunDir makes dir afresh, writable by the server's account.
func instrRunDir(run *proc.Runner, s InstrSpec, dir string) error {
	if err := run.RemoveAll(dir); err != nil {
		return exitcode.Failure(err)
	}
	if err := run.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	if s.RunAs != nil && !run.DryRun {
		// The server writes its counts here.
		if err := os.Chown(dir, int(s.RunAs.UID), int(s.RunAs.GID)); err != nil {
			return exitcode.Failure(err)
		}
	}
	return nil
}

// instrServerCmd is the measured server: postgres under callgrind,
// counting from measuredEntry on, or under perf stat writing statFile.
func instrServerCmd(s InstrSpec, dir, statFile, serverLog string) proc.Cmd {
	postgres := filepath.Join(s.Install, "bin", "postgres")
	var cmd proc.Cmd
	switch s.Method {
	case InstrValgrind:
		args := []string{"--tool=callgrind", "--collect-atstart=no", "--toggle-collect=" + measuredEntry}
		for _, f := range TimingDependent {
			args = append(args, "--toggle-collect="+f)
		}
		args = append(args,
			"--callgrind-out-file="+filepath.Join(dir, "callgrind.out.%p"),
			"--log-file="+filepath.Join(dir, "valgrind.%p.log"),
			postgres)
		cmd = proc.Cmd{Path: "valgrind", Args: append(args, serverArgs(s)...)}
	case InstrPerfStat:
		cmd = proc.Cmd{Path: "perf", Args: append(append(perf.StatArgs(perf.InstructionsEvent, statFile), postgres), serverArgs(s)...)}
	}
	// LD_BIND_NOW: the dynamic loader resolves every symbol when the
	// postmaster starts, not at a function's first call, which may fall
	// in a backend's timing-dependent path in one run and not in the
	// next (_dl_fixup, do_lookup_x).
	cmd.User, cmd.Env, cmd.Log = s.RunAs, append(slices.Clip(s.Env), "LD_BIND_NOW=1"), serverLog
	// The server account may not be able to enter the caller's cwd.
	cmd.Dir = "/"
	return cmd
}

// instrPgbenchCmd runs n transactions of script on one connection,
// logging to dir/log.
func instrPgbenchCmd(s InstrSpec, n int, dir, script, log string) proc.Cmd {
	pgb := proc.Cmd{
		Path: filepath.Join(s.Install, "bin", "pgbench"),
		Args: []string{"-n", "-c", "1", "-j", "1", "-t", strconv.Itoa(n), "--random-seed=" + strconv.FormatInt(s.Seed, 10),
			"-M", s.Protocol, "-f", script, "-h", s.SocketDir, "-p", strconv.Itoa(s.Port)},
		Env: s.Env, Dir: dir, Log: filepath.Join(dir, log),
		// pgbench too runs as the server's account, never as root.
		User: s.RunAs,
	}
	if s.User != "" {
		pgb.Args = append(pgb.Args, "-U", s.User)
	}
	pgb.Args = append(pgb.Args, s.Database)
	return pgb
}

// instrDryRun prints a server's commands and the steps between them:
// the server, then each pgbench run (after the note pre[i], if any),
// then last.
func instrDryRun(ctx context.Context, run *proc.Runner, s InstrSpec, cmd proc.Cmd, script string, pgbs []proc.Cmd, pre []string, last string) error {
	if err := run.WriteFile(script, []byte(s.Workload.Script), 0o644); err != nil {
		return err
	}
	if _, err := run.Start(ctx, cmd); err != nil {
		return err
	}
	run.Note("wait until %s accepts connections", s.SocketDir)
	for i, pgb := range pgbs {
		if i < len(pre) && pre[i] != "" {
			run.Note("%s", pre[i])
		}
		if err := run.Run(ctx, pgb); err != nil {
			return err
		}
		if i < len(pgbs)-1 {
			run.Note("wait until the server has reaped its backends")
		}
	}
	run.Note("%s", last)
	return nil
}

// instrPgbench runs pgb and checks that all n transactions went through.
func instrPgbench(ctx context.Context, run *proc.Runner, s InstrSpec, n int, pgb proc.Cmd) error {
	var stdout strings.Builder
	pgb.Stdout = &stdout
	if err := run.Run(ctx, pgb); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return exitcode.Failure(fmt.Errorf("instructions: %s: %w", s.Workload.Name, err))
	}
	sum := ParseSummary(strings.NewReader(stdout.String()))
	if sum.Processed != int64(n) || sum.Failed != 0 {
		return exitcode.Failure(fmt.Errorf("instructions: %s: pgbench processed %d of %d transactions, %d failed (log: %s)", s.Workload.Name, sum.Processed, n, sum.Failed, pgb.Log))
	}
	return nil
}

// instrCounts reads a stopped server's counts into r: perf stat's
// report, or the callgrind files of the backends pids, summed.
func instrCounts(r *InstrRun, s InstrSpec, dir, statFile string, pids []int) (*perf.Cachegrind, error) {
	if s.Method == InstrPerfStat {
		f, err := os.Open(statFile)
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("instructions: perf stat wrote no report: %w", err))
		}
		defer f.Close()
		if r.Instructions, err = perf.ParseStat(f, perf.InstructionsEvent); err != nil {
			return nil, exitcode.Failure(fmt.Errorf("instructions: %w", err))
		}
		r.Files = []string{statFile}
		return nil, nil
	}
	total := &perf.Cachegrind{Funcs: map[perf.Func]int64{}}
	for _, pid := range pids {
		path := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", pid))
		c, err := readCachegrind(path)
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("instructions: backend %d: %w", pid, err))
		}
		total.Add(c)
		r.Files = append(r.Files, path)
	}
	r.Backends, r.Instructions = pids, total.Total
	return total, nil
}

func readCachegrind(path string) (*perf.Cachegrind, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := perf.ParseCachegrind(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// waitServer waits until the server accepts connections to the database,
// or exits, or StartTimeout passes.
func waitServer(ctx context.Context, p *proc.Process, s InstrSpec) error {
	c := Conn{Host: s.SocketDir, Port: s.Port, User: s.User, Database: s.Database}
	deadline := time.Now().Add(s.StartTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		conn, err := pgx.Connect(cctx, c.connString(s.Database))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
			return exitcode.BadInputf("instructions: %v: the data directory %s has no database %s (a cluster abtest started once has it)", err, s.DataDir, s.Database)
		}
		select {
		case <-p.Done():
			// p's error carries the log's last line and path.
			return exitcode.Failure(fmt.Errorf("instructions: the server exited: %w", p.Wait()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return exitcode.Failure(fmt.Errorf("instructions: no connection to %s after %s: %v", c.where(), s.StartTimeout, err))
		}
	}
}

// stopServer asks the postmaster for a fast shutdown (SIGINT), so that
// every backend exits and valgrind writes its counts, and waits for the
// process abtest started to exit; then SIGQUIT (immediate), then SIGKILL
// to the group. The postmaster is p itself under valgrind, its child
// under perf stat (which does not forward signals): its pid is read from
// postmaster.pid (cluster.PID: a live postgres working in dataDir) and
// checked to be p's child before it is signalled.
func stopServer(p *proc.Process, dataDir string) error {
	target := p.Pid()
	if pm, ok := cluster.PID(dataDir); ok && pm != target && parentPID(pm) == target {
		target = pm
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, 5 * time.Minute}, {syscall.SIGQUIT, 30 * time.Second}} {
		_ = syscall.Kill(target, step.sig)
		select {
		case <-p.Done():
			return p.Wait()
		case <-time.After(step.wait):
		}
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.Done()
	return fmt.Errorf("the server did not stop on SIGINT nor SIGQUIT and was killed")
}

// parentPID returns pid's parent, or 0.
func parentPID(pid int) int {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.PPID
}

// authorizedRE matches log_connections' line for a pgbench backend
// (log_line_prefix "%p ", lc_messages C).
var authorizedRE = regexp.MustCompile(`^([0-9]+) LOG:  connection authorized: .*\bapplication_name=pgbench\b`)

// pgbenchBackends returns the pids of the backends that served pgbench
// (its setup connection and its client) that the server logged past
// byte offset off.
func pgbenchBackends(serverLog string, off int64) ([]int, error) {
	f, err := os.Open(serverLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	pids := ParseBackends(f)
	if len(pids) == 0 {
		return nil, fmt.Errorf("instructions: no pgbench connection in the server log %s past byte %d", serverLog, off)
	}
	return pids, nil
}

// ParseBackends returns the pids of pgbench's backends from a server log
// written with log_connections=on and log_line_prefix='%p ', sorted.
func ParseBackends(r io.Reader) []int {
	var pids []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := authorizedRE.FindStringSubmatch(sc.Text()); m != nil {
			if pid, err := strconv.Atoi(m[1]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	sort.Ints(pids)
	return pids
}
