// Package matrix plans and runs A/B benchmarks: commits × workloads ×
// clients × CPUs × settings × repeats, interleaved so that drift of the
// machine hits every commit alike, with durable, resumable results.
//
// The plan is a value (results.Plan) built first and executed second; -n prints
// it, tests snapshot it, plan.json stores it. Order of the cells:
//
//	for each settings × CPU combination (a cluster restart when it changes)
//	  for each repeat
//	    for each workload × client count
//	      every commit, back to back — in ABBA order (per configuration,
//	      reversed in every other repeat) or shuffled with a recorded
//	      seed, balanced per configuration
//
// With --until-decided (Adaptive), the caller's Decider is asked after the
// planned repeats which configurations are still undecided; they get
// more blocks (new repeats, appended to plan.json) until decided, out of
// repeats or out of budget.
//
// Never all of A then all of B: slow drift (thermal, background load,
// page cache) then lands on one commit and looks like a regression.
//
// Prepare turns a Request into the plan (checked and bounded before it is
// built); Run executes it with the Deps the caller names.
//
// Results: plan.json before the first cell, then one fsynced line per
// finished cell in cells.jsonl, raw artefacts under cells/<cell-id>/. A
// killed run loses at most the cell in flight; Resume runs exactly the
// missing cells. A shard (I/N) runs a deterministic 1/N of the
// configurations, all commits of a configuration together so the pairing
// survives; the analysis merges shard directories.
package matrix

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/workload"
)

// Shard is I of N.
type Shard struct {
	I, N int
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard parses I/N.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{1, 1}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, exitcode.BadInputf("--shard %q: want I/N with 1 ≤ I ≤ N, e.g. 1/2", s)
	}
	return Shard{i, n}, nil
}

// newPlan builds the plan of a checked request with resolved commits; o
// are its workloads and axes as check parsed them.
func newPlan(req Request, o results.PlanOpts, commits []results.Commit) *results.Plan {
	if req.Order == "" {
		req.Order = ABBA
	}
	if req.Shard.N == 0 {
		req.Shard = Shard{1, 1}
	}
	o.Repeats, o.DurationS, o.WarmupS, o.WarmupTx, o.RestartCells = req.Repeats, req.Duration.Seconds(), req.Warmup.Seconds(), req.WarmupTx, req.RestartCells
	o.Protocol, o.SleepMS, o.BuildType, o.Order, o.Seed = req.Protocol, req.SleepMS, string(req.Build), string(req.Order), req.Seed
	o.Perf, o.PerfWindowS, o.Instructions, o.InstructionsOnly = req.Perf, req.PerfWindow.Seconds(), req.Instructions || req.InstructionsOnly, req.InstructionsOnly
	o.Profiling, o.MesonOpts, o.ConfigureOpts = req.BuildOptions.Profiling, req.BuildOptions.MesonOpts, req.BuildOptions.ConfigureOpts
	o.MustNotSaturate, o.InitdbOpts, o.Pgbench, o.Declares = req.MustNotSaturate, req.InitdbOpts, req.Pgbench, planDeclares(req.Workloads)
	p := &results.Plan{Version: results.Version, Commits: commits, Baseline: commits[0].Label, Options: o, Shard: req.Shard.String(), Metrics: planMetrics(req.Workloads)}
	if req.Adaptive.UntilDecided {
		p.Options.UntilDecided = true
		p.Options.MaxRepeats = req.maxRepeats()
		// A look every -r blocks, not after each: the looks share α, so
		// each of many looks gets little of it, and looking after every
		// block cost 1.26× the cells of a fixed design of the same power
		// for a 3 % change at this VM's noise; every 8 blocks, 0.77×
		// (bench/until_decided.sh).
		p.Options.UntilStep = req.Repeats
		p.Options.BudgetS = req.Adaptive.Budget.Seconds()
	}
	groups := canonical(p.Options)
	for _, g := range groups {
		for _, c := range g {
			if c.index%req.Shard.N == req.Shard.I-1 {
				p.Configs = append(p.Configs, c.Config)
			}
		}
	}
	p.Options.InstrRepeats, p.Options.NoInstrConfirm, p.Options.InstrTransactions = req.instrRepeats(), req.NoInstrConfirm, req.InstrTransactions
	for _, g := range groups {
		for r := 1; r <= max(req.Repeats, p.Options.InstrRepeats); r++ {
			for _, c := range g {
				// An instruction count repeats to 0.001 %: its cells run
				// InstrRepeats times (confirmInstructions adds a block
				// where they differ), the timed ones -r times.
				if c.Instructions && r > p.Options.InstrRepeats || !c.Instructions && r > req.Repeats {
					continue
				}
				if c.index%req.Shard.N == req.Shard.I-1 {
					appendBlock(p, c, r)
				}
			}
		}
	}
	return p
}

// planMetrics are the built-in metrics and those the plan's workload
// files declare, judged like them (a file that cannot be read declares
// none here: the request's check has refused it already).
func planMetrics(workloads []string) results.Metrics {
	ms := slices.Clone(results.Builtin)
	for _, name := range workloads {
		w, err := workload.Resolve(name)
		if err != nil {
			continue
		}
		for _, d := range w.Metrics {
			if _, ok := ms.Get(d.Metric.Name); !ok {
				ms = append(ms, d.Metric)
			}
		}
	}
	return ms
}

// planDeclares is what the plan's workload files declare of themselves,
// by workload as the plan names it (nil when none declares anything).
func planDeclares(workloads []string) map[string]results.WorkloadDeclares {
	var out map[string]results.WorkloadDeclares
	for _, name := range workloads {
		w, err := workload.Resolve(name)
		if d := w.Declares(); err == nil && d != (results.WorkloadDeclares{}) {
			if out == nil {
				out = map[string]results.WorkloadDeclares{}
			}
			out[name] = d
		}
	}
	return out
}

// indexed is a configuration and its index in the canonical list, which
// decides its shard and its blocks' orders (the same on every host).
type indexed struct {
	results.Config
	index int
}

// canonical lists the configurations grouped by settings × CPUs (each
// group needs a cluster restart), then workloads × clients. With
// --instructions the first group of each settings combination ends with
// one instruction configuration per workload: one client and no CPU
// placement, because an instruction count depends on neither (the
// clients and CPU axes would only repeat the same measurement).
func canonical(o results.PlanOpts) [][]indexed {
	cpus := o.CPUs
	if len(cpus) == 0 {
		cpus = []int{0}
	}
	var groups [][]indexed
	n := 0
	for _, s := range settingsProduct(o.Settings) {
		for i, cpu := range cpus {
			var g []indexed
			for _, w := range o.Workloads {
				for _, cl := range o.Clients {
					for _, p := range points(o) {
						if !o.InstructionsOnly {
							g = append(g, indexed{results.Config{Workload: w, Clients: cl, CPUs: cpu, Settings: s, Rate: p.Rate, RateUnit: p.RateUnit, Vars: p.Vars, Condition: p.Condition, Extra: p.Extra}, n})
							n++
						}
					}
				}
			}
			if o.Instructions && i == 0 {
				for _, w := range o.Workloads {
					g = append(g, indexed{results.Config{Workload: w, Clients: 1, Settings: s, Instructions: true}, n})
					n++
				}
			}
			groups = append(groups, g)
		}
	}
	return groups
}

// points are the rate × variables × condition combinations of a plan, in
// the order given (a sweep runs its rates in the order the user wrote).
// Instruction cells have none of them (Request.Check).
func points(o results.PlanOpts) []results.Config {
	rates := o.Rates
	if len(rates) == 0 {
		rates = []float64{0}
	}
	conds := o.Conditions
	if len(conds) == 0 {
		conds = []string{workload.ConditionNone}
	}
	var out []results.Config
	for _, r := range rates {
		for _, v := range settingsProduct(o.Vars) {
			for _, c := range conds {
				for _, x := range settingsProduct(o.Extra) {
					p := results.Config{Rate: r, Condition: c}
					if r > 0 {
						p.RateUnit = o.RateUnit
					}
					if len(v) > 0 {
						p.Vars = v
					}
					if len(x) > 0 {
						p.Extra = x
					}
					if c == workload.ConditionNone {
						p.Condition = ""
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// appendBlock appends configuration c's block of repeat r: every commit
// once, back to back.
func appendBlock(p *results.Plan, c indexed, r int) {
	for _, cm := range blockOrder(p.Commits, Order(p.Options.Order), p.Options.Seed, c.index, r) {
		p.Cells = append(p.Cells, results.Cell{
			ID:     fmt.Sprintf("%s/r%d/%s", c.ID(), r, cm.Label),
			Seq:    len(p.Cells) + 1,
			Commit: cm.Label, Repeat: r, Config: c.Config,
		})
	}
}

// blockOrder is the commits' order in the block of repeat r of the
// configuration with canonical index ci. Per configuration, repeats come
// in pairs whose second block is the first reversed, so every
// configuration has as many baseline-first as baseline-last blocks
// whatever the number of configurations (a global block counter gave
// each configuration the same order in every repeat when a repeat had an
// even number of them). ABBA starts forward or backward by the
// configuration's parity, which balances an odd number of repeats over
// the configurations; random shuffles the first block of each pair with
// a generator seeded by (seed, configuration, pair), so an order never
// depends on which other cells a shard or an extra block has.
func blockOrder(cs []results.Commit, order Order, seed int64, ci, r int) []results.Commit {
	out := slices.Clone(cs)
	pair, second := (r-1)/2, (r-1)%2 == 1
	reverse := second
	if order == Random {
		rng := rand.New(rand.NewSource(mix(seed, int64(ci), int64(pair))))
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	} else if ci%2 == 1 {
		reverse = !reverse
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}

// mix combines the seed with a block's coordinates (splitmix64 steps).
func mix(xs ...int64) int64 {
	var h uint64 = 0x9e3779b97f4a7c15
	for _, x := range xs {
		h ^= uint64(x)
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return int64(h >> 1)
}

// settingsProduct is the cross product of the settings axes, in order.
func settingsProduct(axes []results.Axis) []map[string]string {
	out := []map[string]string{{}}
	for _, a := range axes {
		var next []map[string]string
		for _, m := range out {
			for _, v := range a.Values {
				n := maps.Clone(m)
				n[a.Name] = v
				next = append(next, n)
			}
		}
		out = next
	}
	return out
}

// Estimate is the plan's expected wall time: measured and warm-up time
// plus an overhead per cell, a cluster setup for the first cell of each
// cluster and a restart whenever a cell's settings or CPUs differ from
// the previous cell on its cluster (builds not counted).
func Estimate(p *results.Plan) time.Duration {
	var d time.Duration
	last := map[string]string{} // cluster → configuration it runs
	for _, c := range p.Cells {
		commit, _ := p.Commit(c.Commit)
		name := c.Commit
		if commit != nil {
			name = commit.Build
		}
		if c.Instructions {
			d += InstrCellTime(p)
			last[name] = "" // the instruction run leaves it stopped
			continue
		}
		d += cellTime(p)
		conf := fmt.Sprint(c.CPUs, c.Settings)
		switch prev, ok := last[name]; {
		case !ok:
			d += ClusterSetup
		case prev != conf || p.Options.RestartCells:
			d += Restart
		}
		last[name] = conf
	}
	return d
}

// InstrCellTime is about what an instruction cell of p takes: the
// cluster start that writes the cell's settings and its stop, one
// server start under valgrind and its shutdown (instrCellFixed), and a
// warm-up, N and 2N transactions at about instrTxTime each under
// valgrind. abtest bench --instructions on make demo's PostgreSQL 15
// (2 cores, load 0.8) took 7.9 s for select1 and 10.9 s for churn at
// N = 2000, 5.7 s for both at N = 500: 0.49 and 1.16 ms a transaction
// beside 4–5 s of server start, connections and shutdown; the matrix
// adds the cluster's stop and start around it.
func InstrCellTime(p *results.Plan) time.Duration {
	n := p.Options.InstrTransactions
	if n <= 0 {
		n = workload.DefaultInstrTransactions
	}
	return instrCellFixed + time.Duration(3*n)*instrTxTime
}

const (
	instrCellFixed = 7 * time.Second
	instrTxTime    = time.Millisecond
)

func cellTime(p *results.Plan) time.Duration {
	return time.Duration((p.Options.DurationS+p.Options.WarmupS)*float64(time.Second)) + Overhead
}

// WorstCase is how many cells and how long the plan can take at most:
// with --until-decided, every configuration undecided up to the maximum
// repeats or the budget.
func WorstCase(p *results.Plan) (int, time.Duration) {
	cells, d := len(p.Cells), Estimate(p)
	if !p.Options.UntilDecided {
		return cells, d
	}
	extra := len(p.Configs) * len(p.Commits) * max(0, p.Options.MaxRepeats-p.Options.Repeats)
	extraD := time.Duration(extra) * cellTime(p)
	if b := time.Duration(p.Options.BudgetS * float64(time.Second)); b > 0 && extraD > b {
		per := time.Duration(len(p.Commits)) * cellTime(p)
		extraD = b / per * per
		extra = int(b/per) * len(p.Commits)
	}
	return cells + extra, d + extraD
}

var labelRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseSpec parses one -k item: REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…]
// or LABEL=install:DIR (a prebuilt installation).
func ParseSpec(s string) (Commit, error) {
	label, rest, hasLabel := strings.Cut(s, "=")
	if !hasLabel {
		rest, label = s, s
	}
	if rest == "" {
		return Commit{}, exitcode.BadInputf("-k %q: empty ref", s)
	}
	if dir, ok := strings.CutPrefix(rest, "install:"); ok {
		if !hasLabel {
			return Commit{}, exitcode.BadInputf("-k %q: name a prebuilt installation: LABEL=install:DIR", s)
		}
		abs, _ := filepath.Abs(dir)
		c := Commit{Label: label, Install: abs}
		return c, checkLabel(c.Label, s)
	}
	parts := strings.Split(rest, "+")
	c := Commit{Label: label, Ref: parts[0]}
	if !hasLabel && len(parts) > 1 {
		return Commit{}, exitcode.BadInputf("-k %q: name a patched commit: LABEL=REF+PATCH", s)
	}
	for _, f := range parts[1:] {
		abs, err := filepath.Abs(f)
		if err != nil {
			return Commit{}, exitcode.BadInput(err)
		}
		if _, err := os.Stat(abs); err != nil {
			return Commit{}, exitcode.BadInputf("-k %q: patch %s: %v", s, f, err)
		}
		c.Patches = append(c.Patches, abs)
	}
	return c, checkLabel(c.Label, s)
}

func checkLabel(label, spec string) error {
	if !labelRE.MatchString(label) || safepath.CheckName(label) != nil {
		return exitcode.BadInputf("-k %q: label %q must be 1 to 64 letters, digits, '.', '_' or '-'; write LABEL=REF", spec, label)
	}
	return nil
}
