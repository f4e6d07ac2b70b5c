package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/workload"
	"github.com/pgabtest/abtest/worktree"
)

// ErrInterrupted: the run was stopped by a signal; finished cells are
// kept and --resume runs the rest.
var ErrInterrupted = errors.New("matrix: interrupted")

// Executor runs a plan into a results directory.
type Executor struct {
	Plan *results.Plan
	// Dir is the results directory.
	Dir string
	WT  *worktree.Manager
	B   *build.Builder
	CM  *cluster.Manager
	WR  *workload.Runner
	// Build are the options for every build.
	Build build.Options
	// Out receives progress lines; Quiet keeps only errors and the end.
	Out   io.Writer
	Quiet bool
	// SampleEvery is the live sampler's interval; zero means 5 s.
	SampleEvery time.Duration

	installs map[string]string // build name → install prefix
	started  map[string]bool   // clusters this run started
	online   []int
	// noPerf says why profiles are not recorded, once.
	noPerf string
	aux    map[string]int
}

func (e *Executor) printf(format string, args ...any) {
	if e.Out != nil && !e.Quiet {
		fmt.Fprintf(e.Out, format, args...)
	}
}

// Builds builds every commit of the plan (cached by fingerprint), before
// any cell runs: a failed build stops everything with nothing measured.
// The plan's commits gain their fingerprints and versions.
func (e *Executor) Builds(ctx context.Context) error {
	e.installs = map[string]string{}
	done := map[string]*results.Commit{}
	for i := range e.Plan.Commits {
		c := &e.Plan.Commits[i]
		if prev, ok := done[c.Build]; ok {
			c.Fingerprint, c.Version, c.BuildType = prev.Fingerprint, prev.Version, prev.BuildType
			continue
		}
		done[c.Build] = c
		if c.Install != "" {
			e.installs[c.Build] = c.Install
			c.BuildType = "prebuilt"
			out, err := e.WT.Run.Output(ctx, proc.Cmd{Path: filepath.Join(c.Install, "bin", "postgres"), Args: []string{"--version"}, ReadOnly: true})
			if err != nil {
				return exitcode.BadInputf("-k %s=install:%s: %v", c.Label, c.Install, err)
			}
			c.Version = strings.TrimSpace(out)
			continue
		}
		if err := e.worktree(ctx, c); err != nil {
			return err
		}
		prov, err := e.WT.Info(ctx, c.Build)
		if err != nil {
			return err
		}
		dir, _ := e.WT.Dir(c.Build)
		e.printf("build %s (%s %s)\n", c.Build, c.Ref, short(c.SHA))
		res, err := e.B.Build(ctx, prov, dir, e.Build)
		if err != nil {
			return fmt.Errorf("building %s: %w", c.Label, err)
		}
		if res.Skipped {
			e.printf("build %s: unchanged, skipped\n", c.Build)
		}
		c.Fingerprint, c.Version, c.BuildType = res.Info.Fingerprint, res.Info.Version, string(res.Info.Type)
		e.installs[c.Build] = res.Info.Install
	}
	return nil
}

// worktree puts worktree c.Build at c.SHA with exactly c's patches.
func (e *Executor) worktree(ctx context.Context, c *results.Commit) error {
	if prov, err := e.WT.Info(ctx, c.Build); err == nil {
		same := prov.SHA == c.SHA && len(prov.Patches) == len(c.Patches) && !prov.Dirty
		for i := 0; same && i < len(c.Patches); i++ {
			same = prov.Patches[i].SHA256 == c.Patches[i].SHA256
		}
		if same {
			return nil
		}
		// Another commit or other patches: a fresh worktree (ccache
		// keeps the rebuild cheap).
		if err := e.WT.Remove(ctx, c.Build); err != nil {
			return err
		}
	}
	if _, err := e.WT.Switch(ctx, c.Build, c.SHA); err != nil {
		return err
	}
	if len(c.Patches) > 0 {
		files := make([]string, len(c.Patches))
		for i, p := range c.Patches {
			files[i] = p.File
		}
		if _, err := e.WT.Apply(ctx, c.Build, files); err != nil {
			return err
		}
	}
	return nil
}

// Done returns the cells already recorded in the results directory.
func Done(dir string) (map[string]bool, error) {
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, r := range recs {
		done[r.Cell] = true
	}
	return done, nil
}

// Run runs every cell of the plan not yet in cells.jsonl. On
// cancellation it stops pgbench and every cluster this run started, keeps
// the finished cells and returns ErrInterrupted.
func (e *Executor) Run(ctx context.Context) error {
	if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	if err := results.WritePlan(e.Dir, e.Plan); err != nil {
		return exitcode.Failure(err)
	}
	done, err := Done(e.Dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	e.started = map[string]bool{}
	defer e.stopClusters()
	if e.online, err = cluster.OnlineCPUs(); err != nil {
		return exitcode.Failure(err)
	}
	if e.Plan.Options.Perf {
		if err := perf.Check(); err != nil {
			e.noPerf = err.Error()
			if e.Out != nil {
				fmt.Fprintf(e.Out, "--perf: %v; going on without profiles\n", err)
			}
		}
	}
	maxClients := 1
	for _, c := range e.Plan.Options.Clients {
		maxClients = max(maxClients, c)
	}
	var todo []results.Cell
	for _, c := range e.Plan.Cells {
		if !done[c.ID] {
			todo = append(todo, c)
		}
	}
	if len(todo) < len(e.Plan.Cells) {
		e.printf("resuming: %d of %d cells done, %d to run\n", len(e.Plan.Cells)-len(todo), len(e.Plan.Cells), len(todo))
	}
	var spent time.Duration
	for i, cell := range todo {
		eta := ""
		if i > 0 {
			eta = " ETA " + (spent / time.Duration(i) * time.Duration(len(todo)-i)).Round(time.Second).String()
		}
		e.printf("[%d/%d] %s%s\n", len(e.Plan.Cells)-len(todo)+i+1, len(e.Plan.Cells), cell.ID, eta)
		t0 := time.Now()
		rec := e.cell(ctx, cell, maxClients)
		if ctx.Err() != nil {
			return exitcode.Failure(fmt.Errorf("%w after %d of %d cells; finished cells are in %s", ErrInterrupted, len(e.Plan.Cells)-len(todo)+i, len(e.Plan.Cells), filepath.Join(e.Dir, results.CellsFile)))
		}
		rec.WallS = time.Since(t0).Seconds()
		spent += time.Since(t0)
		if err := results.AppendRecord(e.Dir, rec); err != nil {
			return exitcode.Failure(err)
		}
		if rec.Status == "ok" {
			sat := ""
			if rec.Saturated {
				sat = " SATURATED"
			}
			e.printf("    tps=%.0f p99=%.3fms deallocs=%.0f%s (%.1fs)\n", rec.Metrics["tps"], rec.Metrics["latency_p99_ms"], rec.Metrics["pgss_deallocs"], sat, rec.WallS)
		} else if e.Out != nil {
			fmt.Fprintf(e.Out, "    FAILED: %s\n", rec.Error)
		}
	}
	return nil
}

// cell runs one cell and returns its record; a failure is recorded, not
// returned, so that the matrix goes on.
func (e *Executor) cell(ctx context.Context, cell results.Cell, maxClients int) *results.Record {
	rec := &results.Record{
		Cell: cell.ID, Seq: cell.Seq, Commit: cell.Commit, Workload: cell.Workload, Clients: cell.Clients,
		CPUs: cell.CPUs, Settings: cell.Settings, Repeat: cell.Repeat, StartedAt: time.Now().UTC(),
		DurationS: e.Plan.Options.DurationS,
	}
	commit := e.commit(cell.Commit)
	serverLog := filepath.Join(e.CM.Root, commit.Build, "server.log")
	// fail records a failed cell with the tail of the failing tool's
	// output, or of the server log when the tool said nothing.
	fail := func(err error) *results.Record {
		rec.Status = "failed"
		rec.Error = err.Error()
		var pe *proc.Error
		if errors.As(err, &pe) {
			rec.LogTail = pe.Tail
		}
		if len(rec.LogTail) == 0 {
			rec.LogTail = proc.TailFile(serverLog, 20)
		}
		return rec
	}
	install := e.installs[commit.Build]
	opts := cluster.Options{Install: install, MaxClients: maxClients}
	for _, k := range slices.Sorted(maps.Keys(cell.Settings)) {
		v := cell.Settings[k]
		if k == "pg_stat_statements.max" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fail(fmt.Errorf("pg_stat_statements.max=%q: %v", v, err))
			}
			opts.PgssMax = n
			continue
		}
		opts.Settings = append(opts.Settings, cluster.Setting{Name: k, Value: v})
	}
	var clientCPUs []int
	if cell.CPUs > 0 {
		opts.CPUs = e.online[:cell.CPUs]
		clientCPUs = cluster.Others(opts.CPUs, e.online)
	}
	if dir, err := e.CM.DataDir(commit.Build); err == nil {
		if _, running := cluster.PID(dir); !running {
			e.started[commit.Build] = true
		}
	}
	st, err := e.CM.Start(ctx, commit.Build, opts)
	if err != nil {
		return fail(err)
	}
	w, err := workload.Resolve(cell.Workload)
	if err != nil {
		return fail(err)
	}
	spec := workload.Spec{
		Workload: w,
		Conn:     workload.Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database},
		Clients:  cell.Clients,
		Protocol: e.Plan.Options.Protocol,
		SleepMS:  e.Plan.Options.SleepMS,
		CPUs:     clientCPUs,
		Pgbench:  filepath.Join(install, "bin", "pgbench"),
	}
	if e.SampleEvery > 0 {
		spec.SampleEvery = e.SampleEvery
	}
	if e.Plan.Options.WarmupS > 0 {
		warm := spec
		warm.Duration = time.Duration(e.Plan.Options.WarmupS * float64(time.Second))
		quiet := *e.WR
		quiet.Out = nil
		if _, err := quiet.Run(ctx, warm); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	// Stats are reset when the warm-up starts, so the measurement starts
	// from a warmed-up pg_stat_statements (steady-state eviction on churn).
	spec.NoReset = e.Plan.Options.WarmupS > 0
	spec.Duration = time.Duration(e.Plan.Options.DurationS * float64(time.Second))
	spec.OutDir = results.CellDir(e.Dir, cell.ID)
	var prof chan *results.PerfInfo
	if e.Plan.Options.Perf && e.noPerf == "" {
		prof = make(chan *results.PerfInfo, 1)
		go func() { prof <- e.profile(ctx, st, spec) }()
	}
	res, err := e.WR.Run(ctx, spec)
	if prof != nil {
		rec.Perf = <-prof
		if rec.Perf != nil && res != nil {
			rec.Perf.Tx = txInWindow(res, rec.Perf)
		}
	}
	if err != nil {
		return fail(err)
	}
	rec.Status = "ok"
	rec.Metrics = res.Metrics
	rec.Saturated = res.Saturated
	rec.Samples = res.Samples
	rec.Progress = res.Progress
	rec.Waits = &res.Waits
	rec.Final = &res.Final
	rec.Probe = res.Probe
	rec.Warnings = res.Warnings
	rec.Artifacts = map[string]string{}
	for k, v := range res.Artifacts {
		if rel, err := filepath.Rel(e.Dir, v); err == nil {
			rec.Artifacts[k] = rel
		}
	}
	return rec
}

// profile records the middle of a cell's measured period. It runs
// beside the workload: it waits for pgbench's first progress report (the
// measurement has begun), then for half of what the window leaves of the
// duration, and records the window.
func (e *Executor) profile(ctx context.Context, st *cluster.State, spec workload.Spec) *results.PerfInfo {
	window := time.Duration(e.Plan.Options.PerfWindowS * float64(time.Second))
	if window <= 0 || window > spec.Duration {
		window = spec.Duration
	}
	info := &results.PerfInfo{WindowS: window.Seconds()}
	// pgbench starts after the runner's checks: poll for its backends.
	deadline := time.Now().Add(30 * time.Second)
	for len(cluster.Processes(st.DataDir)) <= e.auxProcesses(st) && time.Now().Before(deadline) {
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
	res, err := perf.Record(ctx, &proc.Runner{}, perf.Options{
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
	rel, _ := filepath.Rel(e.Dir, path)
	info.Profile, info.Samples, info.Event, info.CallGraphs = rel, res.Samples, res.Event, res.CallGraphs
	return info
}

// auxProcesses is how many processes the cluster has without clients:
// the postmaster and its auxiliary processes, counted once.
func (e *Executor) auxProcesses(st *cluster.State) int {
	if n, ok := e.aux[st.DataDir]; ok {
		return n
	}
	if e.aux == nil {
		e.aux = map[string]int{}
	}
	n := len(cluster.Processes(st.DataDir))
	e.aux[st.DataDir] = n
	return n
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

func (e *Executor) commit(label string) *results.Commit {
	for i := range e.Plan.Commits {
		if e.Plan.Commits[i].Label == label {
			return &e.Plan.Commits[i]
		}
	}
	panic("matrix: cell of unknown commit " + label)
}

// stopClusters stops the clusters this run started, even after an
// interrupt: a matrix leaves the machine as it found it.
func (e *Executor) stopClusters() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := make([]string, 0, len(e.started))
	for n := range e.started {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := e.CM.Stop(ctx, n); err != nil && e.Out != nil {
			fmt.Fprintf(e.Out, "stopping cluster %s: %v\n", n, err)
		}
	}
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
