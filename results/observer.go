package results

import "fmt"

// ObserverTargetPct is the most measuring may cost, in percent of one
// core: the sampler, the probes and pgbench's latency log together
// (DESIGN: "abtest's target is under 1 %").
const ObserverTargetPct = 1.0

// Observer is what measuring a cell cost: CPU seconds of the work that
// is abtest's, not the workload's, against the window it measured (from
// pgbench's start to its exit). The probes before and after the window
// count in it too: they are paid for per window.
type Observer struct {
	// WindowS is the measured window's wall time.
	WindowS float64 `json:"window_s"`
	// BackendS is the run time of the server backend serving abtest's
	// connection (the sampler's and the probes' queries), from
	// /proc/PID/schedstat: exact.
	BackendS float64 `json:"backend_s"`
	// AbtestS is abtest's own process over the same span (getrusage:
	// the sampler's goroutine, reading pgbench's progress and output
	// and its latency log, the Go runtime).
	AbtestS float64 `json:"abtest_s"`
	// PgbenchLogS is pgbench's latency logging: LoggedTx lines at
	// LogLineS each (measured apart by bench/observer_cost.sh, since one
	// cell cannot run both with and without the log).
	PgbenchLogS float64 `json:"pgbench_log_s"`
	LoggedTx    int     `json:"logged_tx"`
	LogLineS    float64 `json:"log_line_s"`
	// PgbenchS is pgbench's whole CPU time (wait4's rusage); ServerS
	// the server's processes' over the window, abtest's backend included
	// (utime+stime, in ticks of 10 ms: a total, not a part).
	PgbenchS float64 `json:"pgbench_s"`
	ServerS  float64 `json:"server_s"`
	// Queries counts the sampler's queries in the window.
	Queries int `json:"queries"`
}

// CostS is the CPU seconds measuring cost.
func (o Observer) CostS() float64 { return o.BackendS + o.AbtestS + o.PgbenchLogS }

// PctOfCore is the cost in percent of one core over the window.
func (o Observer) PctOfCore() float64 { return pctOf(o.CostS(), o.WindowS) }

// PctOfTotal is the cost in percent of the window's whole CPU time
// (server and pgbench).
func (o Observer) PctOfTotal() float64 { return pctOf(o.CostS(), o.ServerS+o.PgbenchS) }

func pctOf(x, of float64) float64 {
	if of <= 0 {
		return 0
	}
	return 100 * x / of
}

// Add sums o and p (the parts and the windows), for a run's total.
func (o Observer) Add(p Observer) Observer {
	return Observer{
		WindowS: o.WindowS + p.WindowS, BackendS: o.BackendS + p.BackendS, AbtestS: o.AbtestS + p.AbtestS,
		PgbenchLogS: o.PgbenchLogS + p.PgbenchLogS, LoggedTx: o.LoggedTx + p.LoggedTx, LogLineS: max(o.LogLineS, p.LogLineS),
		PgbenchS: o.PgbenchS + p.PgbenchS, ServerS: o.ServerS + p.ServerS, Queries: o.Queries + p.Queries,
	}
}

// Line is the cost as the reports print it: "0.42 % of one core
// (sampler backend 0.10 %, abtest 0.20 %, pgbench logging 0.12 %; 0.21 %
// of the window's CPU)".
func (o Observer) Line() string {
	return fmt.Sprintf("%.2f %% of one core (sampler backend %.2f %%, abtest %.2f %%, pgbench logging %.2f %%; %.2f %% of the window's server and pgbench CPU)",
		o.PctOfCore(), pctOf(o.BackendS, o.WindowS), pctOf(o.AbtestS, o.WindowS), pctOf(o.PgbenchLogS, o.WindowS), o.PctOfTotal())
}
