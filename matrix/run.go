package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/workload"
	"github.com/pgabtest/abtest/worktree"
)

// ErrInterrupted: the run was stopped by a signal; finished cells are
// kept and --resume runs the rest.
var ErrInterrupted = errors.New("matrix: interrupted")

// Decider is the caller's decision rule for --until-decided: after look
// number look (1 after the planned repeats), the IDs (results.Config.ID)
// of the configurations that are still undecided. The matrix computes no
// statistics; the CLI and nightly pass one built on analysis.
type Decider func(dir string, look int) (undecided []string, err error)

// Deps are what Prepare and Run use: the one process runner and the
// managers built on it, where progress goes, and the caller's decision
// rule. Every process-level fact (time, CPUs, host) comes from here.
type Deps struct {
	Proc      *proc.Runner
	Worktrees *worktree.Manager
	Builder   *build.Builder
	Clusters  *cluster.Manager
	Workload  *workload.Runner
	// BuildOptions are every build's options; the type comes from the
	// plan.
	BuildOptions build.Options
	// SampleEvery is the live sampler's interval; zero means 5 s.
	SampleEvery time.Duration
	// Out receives progress lines; Quiet keeps only errors and the end.
	Out   io.Writer
	Quiet bool
	// Progress renders the builds and cells; nil means
	// progress.Console(Out, Quiet, Now): a status line redrawn in place
	// when Out is a terminal, one line per event otherwise.
	Progress progress.Sink
	// Decide is --until-decided's rule; required when the plan has it.
	Decide Decider
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Host describes the host and what doctor finds on it, for plan.json;
	// nil records nothing.
	Host func() (host.Host, []results.Finding)
	// Version is abtest's version, for plan.json.
	Version string
}

// Clock is the time by Now, or by time.Now when Now is nil.
func (d *Deps) Clock() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Deps) allowedCPUs() ([]int, error) { return cluster.AllowedCPUs() }

// sink is Progress, made from Out on first use when nil.
func (d *Deps) sink() progress.Sink {
	if d.Progress == nil {
		d.Progress = progress.Console(d.Out, d.Quiet, d.Now)
	}
	return d.Progress
}

// printf is a progress note (left out with Quiet).
func (d *Deps) printf(format string, args ...any) {
	d.sink().Emit(progress.Event{Kind: progress.Note, Detail: strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")})
}

// warnf is a line printed even with Quiet.
func (d *Deps) warnf(format string, args ...any) {
	d.sink().Emit(progress.Event{Kind: progress.Warn, Detail: strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")})
}

// run is one execution of a plan into a results directory.
type run struct {
	deps *Deps
	plan *results.Plan
	dir  string

	installs map[string]string // build name → install prefix
	// started are the clusters this run started, restore the user's
	// clusters its builds stopped (ClustersFile).
	started, restore map[string]bool
	// ownStopped are the run's own clusters its builds stopped: they stay
	// stopped at its end (leaveClusters).
	ownStopped []string
	// pgbench drives every timed cell (choosePgbench); servers are what
	// each commit's server runs with (noteServer).
	pgbench    string
	servers    results.Servers
	online     []int
	maxClients int
	// noPerf says why profiles are not recorded, once.
	noPerf string
	instr  instrState
	// workload is deps.Workload with the run's own kept connections
	// (workload.Sessions): a cell's window reuses its warm-up's
	// connection, whose backend has warm caches.
	workload *workload.Runner
	// setupSQL is the plan's setup SQL, read once (readSetup).
	setupSQL string
	// userSQL is the error of the user's SQL that failed the last cell
	// (noteUserSQL): it stops the run.
	userSQL error
	// peakTPS is the highest TPS each commit × configuration's windows
	// ran at so far (peakKey): it sizes later cells' latency logs.
	peakTPS map[string]float64
}

// RunLocked executes plan into held.Dir, a results directory its caller
// holds (results.LockRun) and releases: it builds every commit first,
// then runs the preflight (each script once against each server) and
// every cell not yet in cells.jsonl, then (with --until-decided) the
// extra blocks. The directory may hold this plan
// already (a resume: a torn last line is repaired first, records of
// cells the plan does not have are ignored with a note); another plan
// there is refused. Settings the server refuses, and a preflight that
// fails, discard a directory LockRun made (held.Discard, which releases
// the lock). On cancellation
// it stops pgbench and every cluster this run started, keeps the
// finished cells and returns ErrInterrupted.
func RunLocked(ctx context.Context, deps *Deps, plan *results.Plan, held *results.Held) (err error) {
	defer func() {
		if err != nil {
			deps.sink().Emit(progress.Event{Kind: progress.Abort})
		}
	}()
	dir := held.Dir
	// Bad settings are found only once the builds exist; a directory this
	// run made for nothing is removed then, last (after the clusters are
	// released), so bad input leaves nothing behind.
	discard := false
	defer func() {
		if discard {
			held.Discard()
		}
	}()
	if err := adopt(deps, plan, dir); err != nil {
		return err
	}
	r := &run{deps: deps, plan: plan, dir: dir}
	if deps.Workload != nil {
		wl := *deps.Workload
		wl.Sessions = &workload.Sessions{}
		defer wl.Sessions.Close()
		r.workload = &wl
	}
	untrack, err := r.trackProcesses()
	if err != nil {
		return err
	}
	defer untrack()
	if err := r.loadClusterLog(); err != nil {
		return err
	}
	defer r.leaveClusters()
	if err := r.builds(ctx); err != nil {
		return err
	}
	if err := r.checkSettings(ctx); err != nil {
		discard = true
		return err
	}
	if err := results.WritePlan(dir, plan); err != nil {
		return exitcode.Failure(err)
	}
	if err := r.prepareCells(); err != nil {
		return err
	}
	todo, err := r.todo()
	if err != nil {
		return err
	}
	if err := r.preflight(ctx, todo); err != nil {
		discard = exitcode.Code(err) == exitcode.Usage
		return err
	}
	if err := r.cells(ctx, todo); err != nil {
		return err
	}
	if err := r.confirmInstructions(ctx); err != nil {
		return err
	}
	if err := r.adaptive(ctx); err != nil {
		return err
	}
	deps.sink().Emit(progress.Event{Kind: progress.End})
	return nil
}

// adopt checks what dir holds already and repairs it for appending.
func adopt(deps *Deps, plan *results.Plan, dir string) error {
	stored, err := results.ReadPlan(dir)
	if err != nil {
		if _, serr := os.Stat(filepath.Join(dir, results.PlanFile)); serr == nil {
			return err
		}
		return nil // a fresh directory
	}
	if d := results.Diff(stored, plan); len(d) > 0 {
		return exitcode.BadInputf("-o %s already holds the results of another plan (%s); use --resume %s, or another -o", dir, strings.Join(d, "; "), dir)
	}
	note, err := results.Repair(dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	if note != "" {
		deps.warnf("resume: %s", note)
	}
	return nil
}

// builds builds every commit of the plan (cached by fingerprint), before
// any cell runs: a failed build stops everything with nothing measured.
// The plan's commits gain their fingerprints and versions.
func (r *run) builds(ctx context.Context) error {
	r.installs = map[string]string{}
	done := map[string]*results.Commit{}
	for i := range r.plan.Commits {
		c := &r.plan.Commits[i]
		if prev, ok := done[c.Build]; ok {
			c.Fingerprint, c.Version, c.BuildType, c.Extensions = prev.Fingerprint, prev.Version, prev.BuildType, prev.Extensions
			continue
		}
		done[c.Build] = c
		if err := r.build(ctx, c); err != nil {
			return err
		}
		if err := r.extensions(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) build(ctx context.Context, c *results.Commit) error {
	if c.Install != "" {
		r.installs[c.Build] = c.Install
		c.BuildType = "prebuilt"
		// Checked again on a resume: the install may have changed hands
		// since the plan was made.
		if err := build.CheckInstall(c.Install); err != nil {
			return exitcode.BadInputf("-k %s=install:%s: %w", c.Label, c.Install, err)
		}
		version, err := build.ServerVersion(ctx, r.deps.Proc, c.Install, nil)
		if ctx.Err() != nil {
			return exitcode.Failure(err) // interrupted: not the install's fault
		}
		if err != nil {
			return exitcode.BadInputf("-k %s=install:%s: %v", c.Label, c.Install, err)
		}
		c.Version = version
		// An install abtest built (install:$PG_INSTALL_DIR/NAME) has a
		// fingerprint, which the measured server must match.
		c.Fingerprint = installFingerprint(c.Install)
		return nil
	}
	if err := r.worktree(ctx, c); err != nil {
		return err
	}
	wt := r.deps.Worktrees
	prov, err := wt.Info(ctx, c.Build)
	if err != nil {
		return err
	}
	dir, _ := wt.Dir(c.Build)
	b := *r.deps.Builder
	if b.Servers != nil {
		b.Servers = &recordStops{Servers: b.Servers, r: r, why: fmt.Sprintf("a build of %s for the run %s", c.Label, r.dir)}
	}
	res, err := b.BuildShown(ctx, r.deps.sink(), prov, dir, buildOptions(r.deps.BuildOptions, r.plan.Options))
	if err != nil {
		return fmt.Errorf("building %s: %w", c.Label, err)
	}
	c.Fingerprint, c.Version, c.BuildType = res.Info.Fingerprint, res.Info.Version, string(res.Info.Type)
	r.installs[c.Build] = res.Info.Install
	return nil
}

// buildOptions are the builds' options: the caller's (ccache, contrib,
// --force) with the plan's (type, profiling, extra options).
func buildOptions(o build.Options, p results.PlanOpts) build.Options {
	o.Type = build.Type(p.BuildType)
	if o.Type == "" {
		o.Type = build.Release
	}
	o.Profiling = p.Profiling
	o.MesonOpts, o.ConfigureOpts = p.MesonOpts, p.ConfigureOpts
	// Extensions are installed into the build's prefix: never into
	// another name's.
	if len(p.Extensions) > 0 {
		o.ReuseFrom = nil
	}
	return o
}

// checkSettings refuses settings an install does not know before any
// cell runs (exit 2): otherwise every cell would fail on them.
func (r *run) checkSettings(ctx context.Context) error {
	if err := r.checkPreload(ctx); err != nil {
		return err
	}
	if err := r.readSetup(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range r.plan.Commits {
		for _, cfg := range r.plan.Configs {
			key := c.Build + "\x00" + fmt.Sprint(cfg.Settings) // fmt sorts map keys
			if seen[key] {
				continue
			}
			seen[key] = true
			if err := r.deps.Clusters.CheckSettings(ctx, r.installs[c.Build], cfg.Settings); err != nil {
				return err
			}
		}
	}
	return nil
}

// worktree puts worktree c.Build at c.SHA with exactly c's patches.
func (r *run) worktree(ctx context.Context, c *results.Commit) error {
	wt := r.deps.Worktrees
	if prov, err := wt.Info(ctx, c.Build); err == nil && current(prov, c) {
		return nil
	}
	// Another commit or other patches: the worktree is reset in place,
	// its build directory kept, so that the build compiles what differs.
	if _, err := wt.Reset(ctx, c.Build, c.SHA); err != nil {
		return err
	}
	if len(c.Patches) > 0 {
		files := make([]string, len(c.Patches))
		for i, p := range c.Patches {
			files[i] = p.File
		}
		if _, err := wt.Apply(ctx, c.Build, files); err != nil {
			return err
		}
	}
	return nil
}

// current says whether the worktree prov is c: its commit with exactly
// its patches, and nothing else changed.
func current(prov *worktree.Provenance, c *results.Commit) bool {
	same := prov.SHA == c.SHA && len(prov.Patches) == len(c.Patches) && !prov.Dirty
	for i := 0; same && i < len(c.Patches); i++ {
		same = prov.Patches[i].SHA256 == c.Patches[i].SHA256
	}
	return same
}

// Done returns the cells already recorded in the results directory.
func Done(dir string) (map[string]bool, error) {
	recs, _, err := results.ReadRecordsNoProgress(dir)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, r := range recs {
		done[r.Cell] = true
	}
	return done, nil
}

// prepareCells reads what every cell needs once.
func (r *run) prepareCells() error {
	var err error
	if r.online, err = r.deps.allowedCPUs(); err != nil {
		return exitcode.Failure(err)
	}
	if r.plan.Options.Perf {
		if err := perf.Check(); err != nil {
			r.noPerf = err.Error()
			r.deps.warnf("--perf: %v; going on without profiles", err)
		}
	}
	r.maxClients = max(1, slices.Max(r.plan.Options.Clients))
	r.pgbench = r.choosePgbench()
	return nil
}

// todo lists the plan's cells not yet recorded, and notes records of
// cells the plan does not have (they are ignored).
func (r *run) todo() ([]results.Cell, error) {
	done, err := Done(r.dir)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	var todo []results.Cell
	known := map[string]bool{}
	for _, c := range r.plan.Cells {
		known[c.ID] = true
		if !done[c.ID] {
			todo = append(todo, c)
		}
	}
	if unknown := len(done) - (len(r.plan.Cells) - len(todo)); unknown > 0 {
		r.deps.warnf("resume: %d record(s) in %s are for cells this plan does not have; ignored", unknown, results.CellsFile)
	}
	if len(todo) < len(r.plan.Cells) {
		r.deps.printf("resuming: %d of %d cells done, %d to run\n", len(r.plan.Cells)-len(todo), len(r.plan.Cells), len(todo))
	}
	return todo, nil
}

// cells runs todo, the last cells of the plan, appending one record each.
func (r *run) cells(ctx context.Context, todo []results.Cell) error {
	total := len(r.plan.Cells)
	first := total - len(todo)
	sink := r.deps.sink()
	for i, cell := range todo {
		per := cellTime(r.plan)
		if cell.Instructions {
			per = InstrCellTime(r.plan)
		}
		sink.Emit(progress.Event{Kind: progress.CellStart, Task: r.plan.ShownID(cell.ID), Done: first + i + 1, Total: total, Estimate: per})
		t0 := r.deps.Clock()
		rec := r.cell(ctx, cell)
		if ctx.Err() != nil {
			return exitcode.Failure(fmt.Errorf("%w after %d of %d cells; finished cells are in %s", ErrInterrupted, first+i, total, filepath.Join(r.dir, results.CellsFile)))
		}
		if rec == nil { // an instruction cell this host cannot measure
			sink.Emit(progress.Event{Kind: progress.CellDone, Task: r.plan.ShownID(cell.ID), Detail: "skipped: " + r.instr.skip})
			continue
		}
		rec.WallS = r.deps.Clock().Sub(t0).Seconds()
		if err := results.AppendRecord(r.dir, rec); err != nil {
			return exitcode.Failure(err)
		}
		detail, failed := result(rec)
		sink.Emit(progress.Event{Kind: progress.CellDone, Task: r.plan.ShownID(cell.ID), Detail: detail, Failed: failed})
		if r.userSQL != nil {
			return exitcode.Failure(fmt.Errorf("%w: the run stopped after %d of %d cells (SQL the server refused fails the next cells alike); fix it and start a new run", r.userSQL, first+i+1, total))
		}
	}
	return nil
}

// noteUserSQL keeps err when it is the user's SQL refused by the server
// (setup SQL, a workload file's setup or metric query): cells stops the
// run once the cell is recorded.
func (r *run) noteUserSQL(err error) {
	if _, ok := errors.AsType[*results.UserSQLError](err); ok {
		r.userSQL = err
	}
}

// result is a cell's outcome for its progress line, and whether it
// failed.
func result(rec *results.Record) (string, bool) {
	switch {
	case rec.Status != results.StatusOK:
		return rec.Error, true
	case rec.Instr != nil:
		return instrResult(rec), false
	}
	sat := ""
	if rec.Saturated {
		sat = " SATURATED"
	}
	return fmt.Sprintf("tps=%.0f p99=%.3fms deallocs=%.0f%s", rec.Metrics.Value(results.MetricTPS), rec.Metrics.Value(results.MetricLatencyP99), rec.Metrics.Value(results.MetricPGSSDeallocs), sat), false
}

// failed records a failed cell with the tail of the failing tool's
// output, or of the server log when the tool said nothing.
func failed(rec *results.Record, err error, serverLog string) *results.Record {
	rec.Status = results.StatusFailed
	rec.Error = withCause(err)
	var pe *proc.Error
	if errors.As(err, &pe) {
		rec.LogTail = pe.Tail
	}
	if len(rec.LogTail) == 0 {
		rec.LogTail = proc.TailFile(serverLog, 20)
	}
	return rec
}

// clusterOptions are the cluster options of a cell, and the CPUs left
// to pgbench.
func (r *run) clusterOptions(cell results.Cell, install string) (cluster.Options, []int, error) {
	// Port 0: the cluster's previous port while it is free, else a free
	// one (cluster.Start chooses).
	opts := cluster.Options{Install: install, MaxClients: r.maxClients, Preload: r.plan.Options.Preload, InitdbOpts: r.plan.Options.InitdbOpts}
	eff := cell.Effects()
	for _, k := range slices.Sorted(maps.Keys(eff.Settings)) {
		opts.Settings = append(opts.Settings, cluster.Setting{Name: k, Value: eff.Settings[k]})
	}
	var clientCPUs []int
	if eff.CPUs > 0 {
		opts.CPUs = r.online[:eff.CPUs]
		clientCPUs = cluster.Others(opts.CPUs, r.online)
	}
	return opts, clientCPUs, nil
}

// cell runs one cell and returns its record; a failure is recorded, not
// returned, so that the matrix goes on.
func (r *run) cell(ctx context.Context, cell results.Cell) *results.Record {
	rec := &results.Record{
		Cell: cell.ID, Seq: cell.Seq, Commit: cell.Commit, Config: cell.Config, Repeat: cell.Repeat, StartedAt: r.deps.Clock().UTC(),
		DurationS: r.plan.Options.DurationS,
	}
	if cell.Instructions {
		return r.instrCell(ctx, cell, rec)
	}
	commit, _ := r.plan.Commit(cell.Commit)
	cm := r.deps.Clusters
	name := ClusterName(commit.Build)
	serverLog := filepath.Join(cm.Root, name, "server.log")
	install := r.installs[commit.Build]
	opts, clientCPUs, err := r.clusterOptions(cell, install)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	// Held from the start to the identification of the server: no other
	// process stops or restarts it in between.
	release, err := cm.Acquire(ctx, name)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	defer release()
	if err := r.markStarted(name); err != nil {
		return failed(rec, err, serverLog)
	}
	if r.plan.Options.RestartCells {
		if _, err := cm.Stop(ctx, name); err != nil && !errors.Is(err, cluster.ErrNotFound) {
			return failed(rec, err, serverLog)
		}
	}
	st, err := cm.Start(ctx, name, opts)
	if err == nil {
		err = r.setup(ctx, st, cell)
	}
	if err != nil {
		r.noteUserSQL(err)
		return failed(rec, err, serverLog)
	}
	r.noteServer(ctx, commit, st)
	w, err := workload.Resolve(cell.Workload)
	if err != nil {
		return failed(rec, err, serverLog)
	}
	rec.Pgbench = r.pgbench
	// What the cell's axes ask of pgbench (results.Axes).
	eff := cell.Effects()
	spec := workload.Spec{
		Workload: w,
		Conn:     workload.Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database},
		Clients:  eff.Clients,
		Protocol: r.plan.Options.Protocol,
		SleepMS:  r.plan.Options.SleepMS,
		CPUs:     clientCPUs,
		Pgbench:  r.pgbench,
		Rate:     r.plan.Options.TxRate(cell.Config), Vars: eff.Vars, SetupDone: true,
	}
	if r.deps.SampleEvery > 0 {
		spec.SampleEvery = r.deps.SampleEvery
	}
	err = r.underCondition(ctx, cell, spec, rec, func() error { return r.measure(ctx, st, spec, cell, rec) })
	if ierr := checkServer(cm, name, commit, rec); err == nil {
		err = ierr
	}
	if err != nil {
		r.noteUserSQL(err)
		return failed(rec, err, serverLog)
	}
	return rec
}

// underCondition runs the workload's setup, then measure with the
// cell's condition held: started before the warm-up, checked active at
// the window's end (what it reached recorded in rec), and stopped on
// every way out, a failed or interrupted measurement included.
func (r *run) underCondition(ctx context.Context, cell results.Cell, spec workload.Spec, rec *results.Record, measure func() error) error {
	if err := workload.RunSetup(ctx, spec.Conn, spec.Workload); err != nil {
		return err
	}
	if cell.Condition == "" {
		return measure()
	}
	dir := results.CellDir(r.dir, cell.ID)
	if err := r.deps.Proc.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	held, err := workload.StartCondition(ctx, cell.Condition, workload.ConditionEnv{Conn: spec.Conn, Proc: r.deps.Proc, User: r.deps.Workload.User, OutDir: dir})
	if err != nil {
		return err
	}
	defer func() {
		if err := held.Stop(context.WithoutCancel(ctx)); err != nil {
			r.deps.warnf("cell %s: stopping condition %s: %v", cell.ID, cell.Condition, err)
		}
	}()
	if err := measure(); err != nil {
		return err
	}
	rec.ConditionFacts, err = held.Check(ctx)
	return err
}

// measure warms up, measures (and profiles, with --perf) one cell into
// rec.
func (r *run) measure(ctx context.Context, st *cluster.State, spec workload.Spec, cell results.Cell, rec *results.Record) error {
	o := r.plan.Options
	if o.WarmupS > 0 || o.WarmupTx > 0 {
		warm := spec
		warm.Duration, warm.Transactions = time.Duration(o.WarmupS*float64(time.Second)), o.WarmupTx
		// The warm-up's logs stay beside the cell's, so a failed
		// warm-up's error names a file that exists.
		warm.OutDir = filepath.Join(results.CellDir(r.dir, cell.ID), "warm-up")
		quiet := *r.workload
		quiet.Out = nil
		res, err := quiet.Run(ctx, warm)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		// The warm-up's throughput sizes the cell's latency log: a
		// bound would log several times the lines for the same pairs
		// (workload.LoggedTxPerSecond).
		if res != nil { // nil in a dry run
			spec.ExpectedTPS = res.Summary.TPS
		}
	}
	// So do the earlier repeats' windows: a warm-up of 1 s under load
	// read as little as a tenth of its window's TPS (issue 27).
	spec.PeakTPS = r.peakTPS[peakKey(cell)]
	// Stats are reset when the warm-up starts, so the measurement starts
	// from a warmed-up pg_stat_statements (steady-state eviction on churn).
	spec.NoReset = o.WarmupS > 0 || o.WarmupTx > 0
	// Nothing but abtest's own statements runs between the warm-up's
	// last reading of pg_stat_statements and the window's first, unless
	// a condition's sessions do: then the window reads its own.
	spec.Continues = spec.NoReset && cell.Condition == ""
	spec.Duration = time.Duration(o.DurationS * float64(time.Second))
	spec.OutDir = results.CellDir(r.dir, cell.ID)
	var prof chan *results.PerfInfo
	if o.Perf && r.noPerf == "" {
		prof = make(chan *results.PerfInfo, 1)
		go func() { prof <- r.profile(ctx, st, spec) }()
	}
	res, err := r.workload.Run(ctx, spec)
	if prof != nil {
		rec.Perf = <-prof
		if rec.Perf != nil && res != nil {
			rec.Perf.Tx = txInWindow(res, rec.Perf)
		}
	}
	if err != nil {
		return err
	}
	r.notePeak(cell, res.Summary.TPS)
	rec.Status = results.StatusOK
	rec.Metrics, rec.Saturated, rec.Samples, rec.Progress = results.ValuesOf(res.Metrics), res.Saturated, res.Samples, res.Progress
	rec.Saturation = res.Saturation
	rec.Waits, rec.Final, rec.Probe, rec.Warnings = &res.Waits, &res.Final, res.Probe, res.Warnings
	rec.LatencyMethod = string(res.LatencyMethod)
	rec.Void, rec.Observer = res.Void, res.Observer
	rec.Artifacts = map[string]string{}
	for k, v := range res.Artifacts {
		if rel, err := filepath.Rel(r.dir, v); err == nil {
			rec.Artifacts[k] = rel
		}
	}
	return nil
}

// peakKey names a cell's commit and configuration, its repeat left
// out.
func peakKey(cell results.Cell) string { return cell.Commit + "\x00" + cell.Config.ID() }

// notePeak keeps tps as its commit × configuration's peak if it is
// higher.
func (r *run) notePeak(cell results.Cell, tps float64) {
	if r.peakTPS == nil {
		r.peakTPS = map[string]float64{}
	}
	k := peakKey(cell)
	r.peakTPS[k] = max(r.peakTPS[k], tps)
}
