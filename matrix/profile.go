package matrix

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// A cell's perf profile: recorded beside the workload, in the middle of
// its window.

// profile records the middle of a cell's measured period. It runs
// beside the workload: it waits for pgbench's first progress report (the
// measurement has begun), then for half of what the window leaves of the
// duration, and records the window.
func (r *run) profile(ctx context.Context, st *cluster.State, spec workload.Spec) *results.PerfInfo {
	window := time.Duration(r.plan.Options.PerfWindowS * float64(time.Second))
	if window <= 0 || window > spec.Duration {
		window = spec.Duration
	}
	info := &results.PerfInfo{WindowS: window.Seconds()}
	// pgbench starts after the runner's checks: poll for its backends.
	deadline := r.deps.Clock().Add(30 * time.Second)
	for cluster.ClientBackends(st.DataDir) < spec.Clients && r.deps.Clock().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After((spec.Duration - window) / 2):
	}
	path := filepath.Join(spec.OutDir, "profile.pb.gz")
	res, err := perf.Record(ctx, r.deps.Proc, perf.Options{
		Processes: func() []int { return cluster.Processes(st.DataDir) }, Duration: window,
		Raw: filepath.Join(spec.OutDir, "perf.data"), Log: filepath.Join(spec.OutDir, "perf.log"),
	})
	if err != nil {
		info.Error = err.Error()
		return info
	}
	if err := profiles.Write(res.Profile, path); err != nil {
		info.Error = err.Error()
		return info
	}
	rel, _ := filepath.Rel(r.dir, path)
	info.Profile, info.Samples, info.Event, info.CallGraphs = rel, res.Samples, res.Event, res.CallGraphs
	if res.Samples == 0 {
		// perf -a takes long to start on a busy host: its window can begin
		// after the workload has ended.
		info.Error = fmt.Sprintf("perf recorded no sample of the server in its %s window (on a busy host perf can start late: a longer -d, or a shorter --perf-window, leaves it room)", window)
	}
	return info
}

// txInWindow integrates pgbench's progress reports (TPS per interval)
// over the profiled window.
func txInWindow(res *workload.Result, info *results.PerfInfo) float64 {
	if info.Profile == "" || len(res.Progress) == 0 {
		return 0
	}
	d := res.Duration
	lo := (d - info.WindowS) / 2
	hi := lo + info.WindowS
	var tx, prev float64
	for _, p := range res.Progress {
		a, b := math.Max(prev, lo), math.Min(p.T, hi)
		if b > a {
			tx += p.TPS * (b - a)
		}
		prev = p.T
	}
	return tx
}
