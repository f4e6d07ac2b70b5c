package workload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/perf"
)

// instrOneServer is the valgrind measurement on one server: started
// under callgrind, it serves a warm-up run (not counted), then the N and
// the 2N run, each waited for until the postmaster has reaped its
// backends, and is stopped once. A run's backends are the pgbench
// connections the server logged after the run began.
//
// Both measured runs must meet the same state, or the difference carries
// what the N run left behind:
//
//   - pg_stat_statements is emptied before each of them
//     (resetStatements), as a fresh server has it. Without that the 2N
//     run found the N run's entries: on Debian's PostgreSQL 15 select1
//     came out 0.021 % low, churn 3.9 %. A warm-up of N transactions with
//     the same seed instead (both runs then find the entries of their
//     first N transactions) moved churn by −0.16 %, and by +1.08 % on the
//     demo's build, where pg_stat_statements.max = 1000 evicts: what is
//     evicted depends on the replayed queries' usage counts.
//   - Every backend's heap starts as a copy of the postmaster's, whose
//     own allocations for the connections it has served decide where a
//     backend's blocks land, and some instructions depend on that
//     (namestrcpy's strncpy costs 68 or 72 instructions by alignment).
//     A warm-up run of one transaction makes the postmaster serve pgbench
//     once before the measured runs: without it select1 on the demo's
//     PostgreSQL 15 build gave 34 547.8 and 34 555.9 in two cells
//     (0.023 % apart), with it 34 559.9 in both.
//   - A file: workload may read tables, whose pages the N run would
//     leave in shared buffers for the 2N run: its warm-up is N
//     transactions with the same seed, so that both runs find the pages
//     of their first N transactions there, as the 2N run's second half
//     did on a fresh server. Point look-ups in a 50 MB table came out
//     0.78 % low with a warm-up of one transaction, and within 0.0001 %
//     of a server per run with N (105 550.9 against 105 550.8).
//
// The backends' own caches start empty in every connection; the relcache
// init file is built by the first connection after the start, abtest's.
func instrOneServer(ctx context.Context, run *proc.Runner, s InstrSpec) ([2]InstrRun, [2]*perf.Cachegrind, error) {
	var runs [2]InstrRun
	var counts [2]*perf.Cachegrind
	dir := filepath.Join(s.OutDir, "valgrind")
	serverLog := filepath.Join(dir, "server.log")
	if err := instrRunDir(run, s, dir); err != nil {
		return runs, counts, err
	}
	cmd := instrServerCmd(s, dir, "", serverLog)
	script := filepath.Join(dir, s.Workload.Name+".sql")
	// The warm-up, then the measured runs.
	ns := [3]int{instrWarmup(s), s.Transactions, 2 * s.Transactions}
	pgbs := []proc.Cmd{instrPgbenchCmd(s, ns[0], dir, script, "pgbench-warmup.log")}
	for _, n := range ns[1:] {
		pgbs = append(pgbs, instrPgbenchCmd(s, n, dir, script, fmt.Sprintf("pgbench-%d.log", n)))
	}
	if run.DryRun {
		reset := "empty pg_stat_statements from an untracked session (pg_stat_statements_reset()); wait until the server has reaped its backend"
		return runs, counts, instrDryRun(ctx, run, s, cmd, script, pgbs, []string{"", reset, reset},
			fmt.Sprintf("wait until the server has reaped pgbench's backends, stop it (SIGINT: fast shutdown) and read the counts of the last two runs' backends in %s", dir))
	}
	if err := safefile.WriteFile(script, []byte(s.Workload.Script), 0o644); err != nil {
		return runs, counts, exitcode.Failure(err)
	}
	srv, err := startInstrServer(ctx, run, s, cmd)
	if err != nil {
		return runs, counts, err
	}
	defer srv.stop()
	var pids [3][]int
	for i, pgb := range pgbs {
		began := time.Now()
		if i > 0 {
			if err := resetStatements(ctx, s); err != nil {
				return runs, counts, err
			}
		}
		if pids[i], err = instrLoggedRun(ctx, run, s, ns[i], pgb, serverLog); err != nil {
			return runs, counts, err
		}
		if i > 0 {
			runs[i-1] = InstrRun{Transactions: ns[i], ServerLog: serverLog, WallS: time.Since(began).Seconds()}
		}
	}
	if err := srv.stop(); err != nil {
		return runs, counts, exitcode.Failure(fmt.Errorf("instructions: stopping the server: %w (log: %s)", err, serverLog))
	}
	for i := range runs {
		if counts[i], err = instrCounts(&runs[i], s, dir, "", pids[i+1]); err != nil {
			return runs, counts, err
		}
	}
	return runs, counts, nil
}

// instrLoggedRun runs pgb and returns the pids of the pgbench backends
// the server logged after it began, once the server has reaped them.
func instrLoggedRun(ctx context.Context, run *proc.Runner, s InstrSpec, n int, pgb proc.Cmd, serverLog string) ([]int, error) {
	st, err := os.Stat(serverLog)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("instructions: the server log: %w", err))
	}
	if err := instrPgbench(ctx, run, s, n, pgb); err != nil {
		return nil, err
	}
	pids, err := pgbenchBackends(serverLog, st.Size())
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	return pids, waitReaped(ctx, pids, s.StartTimeout)
}

// resetStatements empties pg_stat_statements, as a server starts with
// it, from a session it does not track, and waits until that session's
// backend has exited.
func resetStatements(ctx context.Context, s InstrSpec) error {
	c := Conn{Host: s.SocketDir, Port: s.Port, User: s.User, Database: s.Database}
	cfg, err := pgx.ParseConfig(c.connString(s.Database))
	if err != nil {
		return exitcode.Failure(err)
	}
	cfg.RuntimeParams["pg_stat_statements.track"] = "none"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("instructions: resetting pg_stat_statements between the runs (it takes a superuser): %w", err))
	}
	var pid int
	var has bool
	// A server without pg_stat_statements loaded has nothing to reset
	// (and its functions fail).
	err = conn.QueryRow(ctx, `SELECT pg_backend_pid(), EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_stat_statements')
		AND current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'`).Scan(&pid, &has)
	if err == nil && has {
		_, err = conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
	}
	conn.Close(context.Background())
	if err != nil {
		return exitcode.Failure(fmt.Errorf("instructions: resetting pg_stat_statements between the runs (it takes a superuser): %w", err))
	}
	return waitReaped(ctx, []int{pid}, s.StartTimeout)
}

// waitReaped waits until the postmaster has reaped the backends pids
// (their /proc entries are gone): so that the server's shutdown does
// not reach a backend still on its way out (a SIGTERM there takes
// another exit path in some runs only), and so that the postmaster has
// freed their entries in its own heap, which the next backend's heap
// starts as a copy of.
func waitReaped(ctx context.Context, pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for {
			if _, err := procfs.ReadStat(pid); err != nil {
				break
			}
			if time.Now().After(deadline) {
				return exitcode.Failure(fmt.Errorf("instructions: backend %d has not exited %s after its client", pid, timeout))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// instrWarmup is the number of transactions of the warm-up run: one for
// a built-in workload, which reads no table, N for a file: workload.
func instrWarmup(s InstrSpec) int {
	if s.Workload.Builtin {
		return 1
	}
	return s.Transactions
}
