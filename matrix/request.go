package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// Commit is one arm of a Request, as the user names it: a ref with
// patches, or a prebuilt installation.
type Commit struct {
	Label string
	Ref   string
	// Patches are patch files applied in order on top of Ref.
	Patches []string
	// Install is a prebuilt installation's prefix (then Ref is empty).
	Install string
}

// Order is how the commits of one block are ordered.
type Order string

const (
	// ABBA runs the commits forward and backward by turns, per
	// configuration.
	ABBA Order = "abba"
	// Random shuffles them with a recorded seed, balanced per
	// configuration.
	Random Order = "random"
)

// Adaptive asks for more blocks after the planned repeats, for the
// configurations the caller's Decider calls undecided.
type Adaptive struct {
	// UntilDecided turns adaptive repeats on.
	UntilDecided bool
	// MaxRepeats bounds the repeats of a configuration, planned ones
	// included; zero means twice the planned repeats.
	MaxRepeats int
	// Budget bounds the wall time of the extra blocks; zero means no bound
	// but MaxRepeats.
	Budget time.Duration
}

// Request is what a caller (the CLI, nightly, bisect, the demo) asks the
// matrix to run. Prepare turns it into a plan.
type Request struct {
	Commits []Commit
	// NameTemplate names worktrees, builds and clusters: %c the label, %s
	// the short sha. Empty means "%c".
	NameTemplate string
	Workloads    []string
	// Axes are the values of the registry's axes by axis name
	// (results.Axes), as their flags give them (Options.Axes): one LIST
	// (clients: {"1,16"}, rate: {"500,2000ops"}) or one NAME=V1,V2 an
	// item (settings, pg_stat_statements.max among them; vars). Check
	// parses them into the plan's options; nothing else reads them.
	Axes map[string][]string
	// MustNotSaturate: a saturated point fails the gate (PlanOpts).
	MustNotSaturate bool
	Repeats         int
	Duration        time.Duration
	Warmup          time.Duration
	// WarmupTx is a warm-up of that many transactions per client in
	// place of Warmup (results.PlanOpts.WarmupTx); RestartCells restarts
	// the server before every timed cell.
	WarmupTx     int
	RestartCells bool
	// Designable: neither -d nor -r was given (nor a preset), so the
	// cell length and repeats may come from this host's measured noise
	// (pipeline.Prepare).
	Designable bool
	Protocol   string
	SleepMS    int
	Build      build.Type
	// BuildOptions are the builds' options beside the type that the plan
	// records: Profiling (frame pointers, so --perf has call graphs),
	// MesonOpts and ConfigureOpts; the others (ccache, --force) are the
	// caller's Deps.BuildOptions.
	BuildOptions build.Options
	Order        Order
	Seed         int64
	Shard        Shard
	Perf         bool
	// PerfWindow is how long --perf records, in the middle of the
	// measured period.
	PerfWindow time.Duration
	Adaptive   Adaptive
	// Instructions adds one instruction cell per commit, workload and
	// settings combination (one client, fixed transactions; see
	// workload.Instructions) to every repeat block. The clients and CPU
	// axes apply to the timed cells only.
	Instructions bool
	// InstructionsOnly plans instruction cells only (bisect on
	// instructions_per_tx); it implies Instructions and wants one client.
	InstructionsOnly bool
	// InstrRepeats is how many times each instruction cell runs before
	// its confirmation (0: once); -r applies to the timed cells.
	InstrRepeats int
	// InstrTransactions is N of every instruction cell (0:
	// workload.DefaultInstrTransactions): a larger N reaches paths a
	// workload takes rarely, a smaller one runs faster.
	InstrTransactions int
	// NoInstrConfirm runs no confirmation block where the commits'
	// counts differ: bisect's steps, whose good and bad always differ.
	NoInstrConfirm bool
	// InitdbOpts are initdb options for every cluster (e.g.
	// --no-data-checksums: PG 18 turns them on by default); Pgbench is
	// the one pgbench of the timed cells (empty: the newest build's).
	InitdbOpts []string
	Pgbench    string
	// Extensions are extension source trees built with PGXS into every
	// build, Preload libraries preloaded beside pg_stat_statements,
	// SetupSQL a file run in every cluster before its cells, ${name}
	// replaced by the cell's setting or variable (extensions.go).
	Extensions, Preload []string
	SetupSQL            string
}

// Bounds of a plan: checked before it is built, so that a typo in -r
// cannot fill the machine's memory.
const (
	MaxCells    = 100_000
	MaxEstimate = 30 * 24 * time.Hour
	MaxDuration = workload.MaxDuration
	// Overhead is the orchestration time per cell the estimate assumes
	// (stats reset, probes, recording): make demo's 48 cells of 3 s + 1 s
	// warm-up took 4.10–4.26 s each.
	Overhead = 250 * time.Millisecond
	// ClusterSetup is the first start of a cluster (initdb, start, the
	// benchmark database: 1.8 s for Debian's PostgreSQL 15) and Restart
	// a restart with other settings or CPUs.
	ClusterSetup = 2 * time.Second
	Restart      = 500 * time.Millisecond
)

// Check validates the request without touching anything: every error is
// bad input (exit 2), and the size of the plan is bounded before it is
// built. It returns the plan's options of the workloads and axes.
func (r *Request) Check() (results.PlanOpts, error) {
	var o results.PlanOpts
	if len(r.Commits) == 0 {
		return o, exitcode.BadInputf("matrix: -k SPEC[,SPEC…] is required, e.g. -k base,patch")
	}
	if len(r.Commits) == 1 && r.Repeats < 2 {
		return o, exitcode.BadInputf("-k %s: one commit has nothing to compare with; give two (-k base,patch), or repeat it (-r 5) for a noise run", r.Commits[0].Label)
	}
	if r.Repeats < 1 {
		return o, exitcode.BadInputf("-r %d: want at least 1 repeat", r.Repeats)
	}
	o, err := r.planAxes()
	if err != nil {
		return o, err
	}
	if len(r.Workloads) == 0 || len(o.Clients) == 0 {
		return o, exitcode.BadInputf("matrix: need at least one workload (-w) and client count (-c)")
	}
	if err := checkAxes(r, &o); err != nil {
		return o, err
	}
	if r.InstructionsOnly && (len(o.Clients) != 1 || o.Clients[0] != 1) {
		return o, exitcode.BadInputf("-c %v: instruction cells run one client; give -c 1", o.Clients)
	}
	return o, r.checkRest(&o)
}

// checkRest checks the request's options beside its axes.
func (r *Request) checkRest(o *results.PlanOpts) error {
	if r.Duration < time.Second || r.Duration > MaxDuration {
		return exitcode.BadInputf("-d %s: want 1 s to %s", r.Duration, MaxDuration)
	}
	if r.Warmup < 0 || r.Warmup > MaxDuration {
		return exitcode.BadInputf("--warmup %s: want 0 to %s", r.Warmup, MaxDuration)
	}
	if r.WarmupTx < 0 || r.WarmupTx > maxWarmupTx {
		return exitcode.BadInputf("--warmup-tx %d: want 0 to %d transactions per client", r.WarmupTx, maxWarmupTx)
	}
	if r.SleepMS < 0 {
		return exitcode.BadInputf("-S %d: want a think time of at least 0 ms", r.SleepMS)
	}
	switch r.Order {
	case "", ABBA, Random:
	default:
		return exitcode.BadInputf("--order %q: use abba or random", r.Order)
	}
	if err := cluster.CheckInitdbOpts(r.InitdbOpts); err != nil {
		return err
	}
	if r.Pgbench != "" {
		if fi, err := os.Stat(r.Pgbench); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 || !filepath.IsAbs(r.Pgbench) {
			return exitcode.BadInputf("--pgbench %s: want the absolute path of a pgbench program", r.Pgbench)
		}
	}
	if r.InstrRepeats < 0 || r.InstrRepeats > 100 {
		return exitcode.BadInputf("--instr-repeats %d: want 1 to 100 runs of each instruction cell", r.InstrRepeats)
	}
	if r.InstrTransactions < 0 || r.InstrTransactions > 1_000_000 {
		return exitcode.BadInputf("--instr-transactions %d: want 1 to 1000000 transactions per instruction run", r.InstrTransactions)
	}
	seen := map[string]bool{}
	for _, c := range r.Commits {
		if seen[c.Label] {
			return exitcode.BadInputf("-k: label %q given twice", c.Label)
		}
		seen[c.Label] = true
	}
	if err := r.checkAdaptive(); err != nil {
		return err
	}
	return r.checkSize(o)
}

// checkAxes refuses duplicates and values no cell could run, beyond
// what each axis' parse refuses (planAxes).
func checkAxes(r *Request, o *results.PlanOpts) error {
	if d := firstDup(r.Workloads); d != "" {
		return exitcode.BadInputf("-w: workload %s given twice", d)
	}
	if d := firstDup(o.Clients); d != "" {
		return exitcode.BadInputf("-c: client count %s given twice", d)
	}
	if d := firstDup(o.CPUs); d != "" {
		return exitcode.BadInputf("-C: CPU count %s given twice", d)
	}
	for _, c := range o.Clients {
		if c > 100_000 {
			return exitcode.BadInputf("-c %d: want client counts from 1 to 100000", c)
		}
		if err := workload.CheckClients(c); err != nil {
			return err
		}
	}
	if o.RateUnit == results.PerOp && !slices.ContainsFunc(o.Rates, func(x float64) bool { return x > 0 }) {
		return exitcode.BadInputf("matrix: rate unit %q: want rates in transactions a second, or ops with at least one offered rate (-R 2000ops)", o.RateUnit)
	}
	for i, s := range o.Settings {
		if slices.ContainsFunc(o.Settings[:i], func(b results.Axis) bool { return b.Name == s.Name }) {
			return exitcode.BadInputf("--set %s given twice: give one axis with all its values, --set %s=V1,V2", s.Name, s.Name)
		}
		if err := checkMaxConnections(s, slices.Max(o.Clients)); err != nil {
			return err
		}
	}
	for i, v := range o.Vars {
		if slices.ContainsFunc(o.Vars[:i], func(b results.Axis) bool { return b.Name == v.Name }) {
			return exitcode.BadInputf("--var %s given twice: give one axis with all its values, --var %s=V1,V2", v.Name, v.Name)
		}
	}
	if (r.Instructions || r.InstructionsOnly) && len(o.Rates)+len(o.Vars)+len(o.Conditions)+len(o.Extra) > 0 {
		return exitcode.BadInputf("--instructions counts one client's transactions on a quiet server: run it in a matrix without -R, --var, --condition and the other axes")
	}
	if r.MustNotSaturate && len(o.Rates) == 0 {
		return exitcode.BadInputf("--must-not-saturate goes with -R: only an offered rate can saturate")
	}
	return nil
}

// checkMaxConnections refuses a max_connections axis value below what
// the largest client count needs: the clients, PostgreSQL's default 3
// superuser-reserved slots and 2 for abtest (the sampler and a spare),
// as workload's connect check counts them when every cell would fail.
func checkMaxConnections(s results.Axis, clients int) error {
	if !strings.EqualFold(s.Name, "max_connections") {
		return nil
	}
	for _, v := range s.Values {
		if n, err := strconv.Atoi(v); err == nil && n < clients+3+2 {
			return exitcode.BadInputf("--set max_connections=%s: -c %d needs at least %d (the clients, 3 reserved, 2 for abtest)", v, clients, clients+5)
		}
	}
	return nil
}

func firstDup[T comparable](xs []T) string {
	seen := map[T]bool{}
	for _, x := range xs {
		if seen[x] {
			return fmt.Sprint(x)
		}
		seen[x] = true
	}
	return ""
}

func (r *Request) checkAdaptive() error {
	a := r.Adaptive
	if !a.UntilDecided {
		if a.MaxRepeats != 0 || a.Budget != 0 {
			return exitcode.BadInputf("--max-repeats and --budget go with --until-decided")
		}
		return nil
	}
	if a.MaxRepeats != 0 && a.MaxRepeats < r.Repeats {
		return exitcode.BadInputf("--max-repeats %d: below -r %d; want at least the planned repeats", a.MaxRepeats, r.Repeats)
	}
	if a.Budget < 0 {
		return exitcode.BadInputf("--budget %s: want a positive duration", a.Budget)
	}
	if block := r.blockTime(); a.Budget > 0 && a.Budget < block {
		return exitcode.BadInputf("--budget %s: one extra block (%d commits × %s) takes about %s; give at least that", a.Budget, len(r.Commits), r.cellTime(), block)
	}
	return nil
}

// instrRepeats is InstrRepeats, at least 1.
func (r *Request) instrRepeats() int { return max(1, r.InstrRepeats) }

// maxWarmupTx bounds --warmup-tx: a million transactions per client is
// minutes of warm-up at any rate this tool measures.
const maxWarmupTx = 1_000_000

func (r *Request) cellTime() time.Duration { return r.Duration + r.Warmup + Overhead }

func (r *Request) blockTime() time.Duration {
	return time.Duration(len(r.Commits)) * r.cellTime()
}

// maxRepeats is the most repeats a configuration can get.
func (r *Request) maxRepeats() int {
	if !r.Adaptive.UntilDecided {
		return r.Repeats
	}
	if r.Adaptive.MaxRepeats > 0 {
		return r.Adaptive.MaxRepeats
	}
	return 2 * r.Repeats
}

// configs is the number of configurations of o (before sharding).
func (r *Request) configs(o *results.PlanOpts) float64 {
	n := float64(len(r.Workloads) * len(o.Clients) * max(1, len(o.CPUs)))
	if r.InstructionsOnly {
		n = 0
	}
	if r.Instructions || r.InstructionsOnly {
		n += float64(len(r.Workloads))
	}
	for _, s := range slices.Concat(o.Settings, o.Vars, o.Extra) {
		n *= float64(len(s.Values))
	}
	return n * float64(max(1, len(o.Rates))*max(1, len(o.Conditions)))
}

// checkSize bounds the worst case (adaptive repeats included) in float64
// arithmetic, which cannot overflow at these sizes.
func (r *Request) checkSize(o *results.PlanOpts) error {
	cells := r.configs(o) * float64(len(r.Commits)) * float64(r.maxRepeats())
	if n := float64(max(1, r.Shard.N)); n > 1 {
		cells /= n
	}
	secs := cells * r.cellTime().Seconds()
	if cells > MaxCells || secs > MaxEstimate.Seconds() {
		return exitcode.BadInputf("matrix: %.0f cells, about %s: above the limit of %d cells or %.0f days; use fewer repeats, axes or a shard",
			cells, longTime(secs), MaxCells, MaxEstimate.Hours()/24)
	}
	return nil
}

// longTime says secs in the unit a reader takes in at a glance.
func longTime(secs float64) string {
	switch day := 24 * 3600.0; {
	case secs >= 730*day:
		return fmt.Sprintf("%.0f years", secs/(365.25*day))
	case secs >= 2*day:
		return fmt.Sprintf("%.0f days", secs/day)
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second).String()
}

// Prepare checks req, resolves its refs, hashes its patches, names its
// builds (arms with the same binaries share one: an A/A run) and returns
// the plan. It changes nothing on disk.
func Prepare(ctx context.Context, deps *Deps, req Request) (*results.Plan, error) {
	o, err := req.Check()
	if err != nil {
		return nil, err
	}
	var wls []workload.Workload
	for _, w := range req.Workloads {
		wl, err := workload.Resolve(w)
		if err != nil {
			return nil, err
		}
		spec := workload.Spec{Workload: wl, Protocol: req.Protocol, Clients: 1, Pgbench: req.Pgbench}
		if err := spec.Check(); err != nil {
			return nil, err
		}
		wls = append(wls, wl)
	}
	if len(o.CPUs) > 0 {
		online, err := deps.allowedCPUs()
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		for _, n := range o.CPUs {
			if n > len(online) {
				return nil, exitcode.BadInputf("-C %d: this host has %d CPUs online", n, len(online))
			}
		}
	}
	commits, err := resolve(deps, req)
	if err != nil {
		return nil, err
	}
	if err := checkDeclares(&o, wls); err != nil {
		return nil, err
	}
	p := newPlan(req, o, commits)
	if err := prepareExtras(ctx, deps, req, p); err != nil {
		return nil, err
	}
	if err := checkVars(deps, o.Vars, wls, p.Options.SetupSQL); err != nil {
		return nil, err
	}
	if slices.Contains(o.Rates, 0) && len(o.Rates) > 1 && (deps.Out != nil || deps.Progress != nil) {
		// Issue 40: -R 0,300 mixed the two without a word.
		deps.warnf("-R %s: rate 0 is a closed loop (as fast as the server goes) beside open-loop points: its latencies and throughput answer another question than theirs", strings.Join(req.Axes["rate"], ","))
	}
	p.Created = deps.Clock().UTC()
	if deps.Host != nil {
		p.Host, p.Doctor = deps.Host()
	}
	p.AbtestVersion = deps.Version
	return p, nil
}

// checkVars refuses --var names no workload (nor the setup SQL, as
// ${name}) reads and :names a workload reads that nothing sets
// (workload.CheckVars), and notes the --var names some workloads ignore.
func checkVars(deps *Deps, axes []results.Axis, wls []workload.Workload, setupSQL string) error {
	var vars, elsewhere []string
	sql := ""
	if setupSQL != "" {
		data, _ := os.ReadFile(setupSQL) // read and checked by prepareExtras
		sql = string(data)
	}
	for _, v := range axes {
		vars = append(vars, v.Name)
		if strings.Contains(sql, "${"+v.Name+"}") {
			elsewhere = append(elsewhere, v.Name)
		}
	}
	notes, err := workload.CheckVars(wls, vars, elsewhere)
	for _, n := range notes {
		if deps.Out != nil || deps.Progress != nil {
			deps.warnf("%s", n)
		}
	}
	return err
}

// resolve turns the request's commits into the plan's: shas, patch
// hashes, build names.
func resolve(deps *Deps, req Request) ([]results.Commit, error) {
	tmpl := req.NameTemplate
	if tmpl == "" {
		tmpl = "%c"
	}
	var out []results.Commit
	builds := map[string]string{} // identity → build name
	for _, rc := range req.Commits {
		c := results.Commit{Label: rc.Label, Ref: rc.Ref, Install: rc.Install}
		if c.Install == "" {
			sha, err := deps.Worktrees.Resolve(rc.Ref)
			if err != nil {
				return nil, err
			}
			c.SHA = sha.SHA
		} else if deps.Proc == nil || !deps.Proc.DryRun {
			// Checked before the results directory exists; a dry run may
			// plan for an install still to be made.
			if err := build.CheckInstall(c.Install); err != nil {
				return nil, exitcode.BadInputf("-k %s=install:%s: %w", c.Label, c.Install, err)
			}
		} else if _, err := os.Stat(filepath.Join(c.Install, "bin", "postgres")); err == nil {
			// A dry run asks an install that exists for its version:
			// not one of another account's.
			if err := build.CheckTrusted(c.Install); err != nil {
				return nil, exitcode.BadInputf("-k %s=install:%s: %w", c.Label, c.Install, err)
			}
		}
		for _, f := range rc.Patches {
			data, err := safefile.Input(f)
			if err != nil {
				return nil, exitcode.BadInputf("-k %s: patch %s: %v", rc.Label, f, err)
			}
			sum := sha256.Sum256(data)
			c.Patches = append(c.Patches, results.Patch{File: f, SHA256: hex.EncodeToString(sum[:])})
		}
		id := c.Identity()
		if name, ok := builds[id]; ok {
			c.Build = name // an A/A arm: same binaries
		} else {
			c.Build = strings.NewReplacer("%c", c.Label, "%s", text.Short(c.SHA)).Replace(tmpl)
			if err := safepath.CheckName(c.Build); err != nil {
				return nil, exitcode.BadInputf("-W %q gives %q: %v", tmpl, c.Build, err)
			}
			builds[id] = c.Build
		}
		out = append(out, c)
	}
	return out, nil
}

// PlanFor is the plan of a request whose commits are already resolved
// (shas, patch hashes and build names given): for synthetic result
// directories and tests, which have no git repository to resolve refs in.
func PlanFor(req Request, commits []results.Commit) (*results.Plan, error) {
	req.Commits = make([]Commit, len(commits))
	for i, c := range commits {
		req.Commits[i] = Commit{Label: c.Label, Ref: c.Ref, Install: c.Install}
	}
	o, err := req.Check()
	if err != nil {
		return nil, err
	}
	var wls []workload.Workload
	for _, w := range req.Workloads {
		wl, err := workload.Resolve(w)
		if err != nil {
			return nil, err
		}
		wls = append(wls, wl)
	}
	if err := checkDeclares(&o, wls); err != nil {
		return nil, err
	}
	return newPlan(req, o, commits), nil
}

// checkDeclares refuses, before anything runs, what a workload declares
// that this run cannot evaluate (-- abtest:ops-per-tx :NAME without a
// --var NAME, or with a value that is no positive number) and rates in
// operations for a workload that does not say what one is. wls are
// o.Workloads resolved, in order.
func checkDeclares(o *results.PlanOpts, wls []workload.Workload) error {
	for i, wl := range wls {
		d := wl.Declares()
		if o.RateUnit == results.PerOp && d.OpsPerTx == "" {
			return exitcode.BadInputf("-R …ops: workload %s does not say what an operation is; declare -- abtest:ops-per-tx EXPR in its file, or give -R in transactions a second", o.Workloads[i])
		}
		name := d.OpsVar()
		if name == "" {
			if _, err := d.Ops(nil); err != nil {
				return exitcode.BadInputf("workload %s: %v", o.Workloads[i], err)
			}
			continue
		}
		j := slices.IndexFunc(o.Vars, func(a results.Axis) bool { return a.Name == name })
		if j < 0 {
			return exitcode.BadInputf("workload %s: -- abtest:ops-per-tx %s: the run has no --var %s; give --var %s=V1,V2", o.Workloads[i], d.OpsPerTx, name, name)
		}
		for _, v := range o.Vars[j].Values {
			if _, err := d.Ops(map[string]string{name: v}); err != nil {
				return exitcode.BadInputf("workload %s: %v", o.Workloads[i], err)
			}
		}
	}
	return nil
}
