package workload

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// MaxDuration bounds a measured duration (bench -d, matrix -d): a longer
// one is a typo, and no product of it overflows.
const MaxDuration = 24 * time.Hour

// Bench is `abtest bench`: workloads run one after another against one
// running server, all with the same settings. Numbers are as given on
// the command line (seconds, milliseconds), checked by Specs before any
// arithmetic.
type Bench struct {
	Conn Conn
	// Seconds is each workload's duration, unless Transactions (per
	// client) is set.
	Seconds, Transactions int
	Clients, Threads      int
	Protocol              string
	SleepMS               int
	// Rate is pgbench's -R (open loop), in TPS; 0 is closed loop. Vars
	// are pgbench variables (-D), each read by some workload.
	Rate float64
	Vars map[string]string
	// ExpectedTPS sizes the latency log (Spec.ExpectedTPS); 0: unknown.
	ExpectedTPS float64
	// WarmupS runs each workload this many seconds, unmeasured, before
	// its window (0: none); in a closed loop of -d seconds without
	// ExpectedTPS its throughput sizes the window's latency log, as a
	// matrix cell's warm-up does (BenchWarmup).
	WarmupS                int
	SampleEvery, WaitEvery time.Duration
	Pgbench                string
	// Workloads is a comma-separated list (ResolveList).
	Workloads string
	// CPUs pins pgbench: a count or a list (cluster.ParseCPUs).
	CPUs []int
	// OutDir, when set, keeps each workload's files in OutDir/NAME,
	// transaction logs included.
	OutDir string
}

// Check refuses, before anything runs, every value pgbench or the
// samplers cannot take.
func (b *Bench) Check() error {
	most := int(MaxDuration / time.Second)
	if t := b.Transactions; t < 0 || t > 1_000_000_000 {
		return exitcode.BadInputf("-t %d: want 1 to 1000000000 transactions per client", t)
	}
	if d := b.Seconds; b.Transactions == 0 && (d < 1 || d > most) {
		return exitcode.BadInputf("-d %d: want 1 to %d seconds", d, most)
	}
	if w := b.WarmupS; w < 0 || w > most {
		return exitcode.BadInputf("--warmup %d: want 0 to %d seconds", w, most)
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"sample-every", b.SampleEvery}, {"wait-every", b.WaitEvery}} {
		if d.d <= 0 || d.d > time.Hour {
			return exitcode.BadInputf("--%s %s: want an interval above 0 and at most 1h", d.flag, d.d)
		}
	}
	for _, n := range []struct {
		flag string
		n    int
	}{{"jobs", b.Threads}, {"sleep", b.SleepMS}} {
		if n.n < 0 {
			return exitcode.BadInputf("--%s %d: want 0 or more", n.flag, n.n)
		}
	}
	if r := b.Rate; !(r >= 0 && r <= 1e9) {
		return exitcode.BadInputf("-R %g: want a rate from 0 (closed loop) to 1e9 TPS", r)
	}
	if r := b.ExpectedTPS; !(r >= 0 && r <= 1e9) {
		return exitcode.BadInputf("--expected-tps %g: want 0 (unknown) to 1e9 TPS", r)
	}
	if b.ExpectedTPS > 0 && (b.Rate > 0 || b.Transactions > 0) {
		return exitcode.BadInputf("--expected-tps sizes the latency log of a closed loop of -T seconds: -R and -t give the count themselves; drop --expected-tps")
	}
	if b.Clients != 0 {
		if err := CheckClients(b.Clients); err != nil {
			return err
		}
	}
	var names []string
	for _, w := range strings.Split(b.Workloads, ",") {
		if w = strings.TrimSpace(w); w != "" {
			if slices.Contains(names, w) {
				return exitcode.BadInputf("-w: workload %s given twice", w)
			}
			names = append(names, w)
		}
	}
	return nil
}

// Specs checks b and returns one checked Spec per workload.
func (b *Bench) Specs() ([]Spec, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	ws, err := ResolveList(b.Workloads)
	if err != nil {
		return nil, err
	}
	base := Spec{
		Conn: b.Conn, Duration: time.Duration(b.Seconds) * time.Second, Transactions: b.Transactions,
		Clients: b.Clients, Threads: b.Threads, Protocol: b.Protocol, SleepMS: b.SleepMS, Rate: b.Rate,
		CPUs: b.CPUs, SampleEvery: b.SampleEvery, WaitEvery: b.WaitEvery, Pgbench: b.Pgbench, ExpectedTPS: b.ExpectedTPS, Vars: b.Vars,
	}
	if _, err := CheckVars(ws, slices.Sorted(maps.Keys(b.Vars)), nil); len(b.Vars) > 0 && err != nil {
		return nil, err
	}
	if base.Transactions > 0 {
		base.Duration = 0
	}
	if base.Clients < 1 {
		return nil, exitcode.BadInputf("-c %d: want at least 1 client", base.Clients)
	}
	specs := make([]Spec, len(ws))
	for i, w := range ws {
		specs[i] = base
		specs[i].Workload = w
		if b.OutDir != "" {
			specs[i].OutDir = filepath.Join(b.OutDir, w.Name)
			specs[i].KeepTxLog = true
		}
		if err := specs[i].Check(); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

// Bench runs specs one after another, each after warmup (unmeasured),
// after a header line on r.Out; nothing is returned in a dry run.
func (r *Runner) Bench(ctx context.Context, specs []Spec, warmup time.Duration) ([]*Result, error) {
	if !r.Proc.DryRun && r.Out != nil && len(specs) > 0 {
		s := specs[0]
		d := fmt.Sprintf("%.0fs", s.Duration.Seconds())
		if s.Transactions > 0 {
			d = fmt.Sprintf("%d transactions per client", s.Transactions)
		}
		if warmup > 0 {
			d += fmt.Sprintf(" after %.0fs of warm-up", warmup.Seconds())
		}
		fmt.Fprintf(r.Out, "=== abtest bench ===\nDuration: %s, Clients: %d, Protocol: %s\n", d, s.Clients, s.Protocol)
	}
	if r.Sessions == nil {
		// One connection serves every workload's run.
		kept := *r
		kept.Sessions = &Sessions{}
		defer kept.Sessions.Close()
		r = &kept
	}
	var out []*Result
	for _, s := range specs {
		s, err := r.warmUp(ctx, s, warmup)
		if err != nil {
			return out, err
		}
		res, err := r.Run(ctx, s)
		if err != nil {
			return out, err
		}
		if res != nil {
			out = append(out, res)
		}
	}
	return out, nil
}

// BenchWarmup is bench's default warm-up. Its throughput sizes the
// window's latency log: without it, a closed loop's log is sized for an
// upper bound, and `bench -w select1 -c 4 -d 5` logged every
// transaction (107 000 lines, 3.0 % of a core; 2-vCPU VM, 2026-12-04).
const BenchWarmup = time.Second

// warmUp runs s for warmup, unmeasured and unlogged, and returns s for
// its window: the setup SQL done, and in a closed loop of seconds with
// no ExpectedTPS the warm-up's throughput as ExpectedTPS.
func (r *Runner) warmUp(ctx context.Context, s Spec, warmup time.Duration) (Spec, error) {
	if warmup <= 0 {
		return s, nil
	}
	warm := s
	warm.Duration, warm.Transactions, warm.KeepTxLog = warmup, 0, false
	if s.OutDir != "" {
		// Beside the window's, as a matrix cell's: a failed warm-up's
		// error names a log that is kept.
		warm.OutDir = filepath.Join(s.OutDir, "warm-up")
	}
	quiet := *r
	quiet.Out = nil
	res, err := quiet.Run(ctx, warm)
	if err != nil {
		return s, fmt.Errorf("%s: warm-up: %w", s.Workload.Name, err)
	}
	s.SetupDone = true
	if res != nil && s.ExpectedTPS == 0 && s.Rate == 0 && s.Transactions == 0 {
		s.ExpectedTPS = res.Summary.TPS
		if r.Out != nil {
			fmt.Fprintf(r.Out, "%s: warm-up %.0fs at %.0f tps (sizes the latency log)\n", s.Workload.Name, warmup.Seconds(), s.ExpectedTPS)
		}
	}
	return s, nil
}

// WriteTPSSummary prints each result's TPS, saturated ones marked.
func WriteTPSSummary(w io.Writer, all []*Result) {
	fmt.Fprintln(w, "\n=== TPS Summary ===")
	for _, res := range all {
		mark := ""
		if res.Saturated {
			mark = "  (saturated)"
		}
		fmt.Fprintf(w, "  %-15s %.0f%s\n", res.Workload, res.Metrics[results.MetricTPS], mark)
	}
}
