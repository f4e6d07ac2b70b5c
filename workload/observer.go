package workload

// What measuring a run costs (results.Observer): the CPU time of
// abtest's own work, against the window it measured.

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/results"
)

// Observer is what measuring a run cost.
type Observer = results.Observer

// pgbenchLogLine is pgbench's CPU time per line of its transaction log
// (--log): formatting and writing it. One cell cannot run with and
// without the log, so it is measured apart: bench/observer_cost.sh runs
// pgbench -t on select1 with --sampling-rate 1 and without --log and
// divides the difference by the lines (Debian's PostgreSQL 15,
// select1, -c 8 -j 2, user time). On the 2-core VM of sessions 11–13,
// quiet: twelve pairs of 80 000 and 400 000 lines gave −888 to 2 112
// ns, median 575 (runs' medians 962, 662 and 511); 1 µs is above ten
// of the twelve. An older, slower machine of
// this kind gave 1 962–3 025 ns, median 2 331 (machines differ about
// 2× in speed); there the observer's figures read about 0.4 % of one
// core low.
const pgbenchLogLine = 1000 * time.Nanosecond

// observerClock reads the CPU time of abtest's process and of its
// connection's backend when a run begins; finish reads them again.
type observerClock struct {
	backendPID int
	backend    time.Duration
	self       time.Duration
	// ok: the backend's schedstat is readable (a local server).
	ok bool
}

// startObserving starts the clock for conn's backend; where the server
// is not local, the backend's part is left at 0 and only abtest's own
// process is counted.
func startObserving(conn *pgx.Conn) *observerClock {
	c := &observerClock{backendPID: int(conn.PgConn().PID()), self: procfs.SelfCPU()}
	if t, err := procfs.RunTime(c.backendPID); err == nil {
		c.backend, c.ok = t, true
	}
	return c
}

// finish fills o with the parts measured since startObserving; o
// already holds the window and pgbench's time. before and after are the
// probe's readings around the window (the server's CPU ticks).
func (c *observerClock) finish(o *Observer, before, after Counters) {
	o.AbtestS = (procfs.SelfCPU() - c.self).Seconds()
	if c.ok {
		if t, err := procfs.RunTime(c.backendPID); err == nil {
			o.BackendS = (t - c.backend).Seconds()
		}
	}
	if before.HasCPU && after.HasCPU {
		o.ServerS = float64(after.CPUTicks-before.CPUTicks) / procfs.ClockTicks
	}
}

// logCost adds pgbench's latency logging: loggedTx lines.
func logCost(o *Observer, loggedTx int) {
	o.LoggedTx, o.LogLineS = loggedTx, pgbenchLogLine.Seconds()
	o.PgbenchLogS = float64(loggedTx) * o.LogLineS
}
