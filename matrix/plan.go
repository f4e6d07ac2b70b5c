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
//	      every commit, back to back — in ABBA order (reversed in every
//	      other block) or shuffled with a recorded seed
//
// Never all of A then all of B: slow drift (thermal, background load,
// page cache) then lands on one commit and looks like a regression.
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
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/workload"
)

// Options are what the user asked for.
type Options struct {
	Commits   []results.Commit
	Workloads []string
	Clients   []int
	CPUs      []int
	Settings  []results.Setting
	Repeats   int
	Duration  time.Duration
	Warmup    time.Duration
	Protocol  string
	SleepMS   int
	BuildType string
	Order     string // abba or random
	Seed      int64
	Shard     Shard
	Perf      bool
	// PerfWindow is how long --perf records, in the middle of the
	// measured period.
	PerfWindow time.Duration
}

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

// NewPlan builds the plan for o. Commits must be resolved (SHA, Build).
func NewPlan(o Options) (*results.Plan, error) {
	if len(o.Commits) == 0 {
		return nil, exitcode.BadInputf("-k: no commit given")
	}
	if len(o.Commits) == 1 && o.Repeats < 2 {
		return nil, exitcode.BadInputf("-k %s: one commit has nothing to compare with; give two (-k base,patch), or repeat it (-r 5) for a noise run", o.Commits[0].Label)
	}
	if o.Repeats < 1 {
		return nil, exitcode.BadInputf("-r %d: want at least 1 repeat", o.Repeats)
	}
	for _, c := range o.Clients {
		if c < 1 {
			return nil, exitcode.BadInputf("-c %d: want client counts of at least 1", c)
		}
	}
	for _, c := range o.CPUs {
		if c < 0 {
			return nil, exitcode.BadInputf("-C %d: want CPU counts of at least 1", c)
		}
	}
	if len(o.Workloads) == 0 || len(o.Clients) == 0 {
		return nil, exitcode.BadInputf("matrix: need at least one workload (-w) and client count (-c)")
	}
	if o.Order == "" {
		o.Order = "abba"
	}
	if o.Order != "abba" && o.Order != "random" {
		return nil, exitcode.BadInputf("--order %q: use abba or random", o.Order)
	}
	if o.Shard.N == 0 {
		o.Shard = Shard{1, 1}
	}
	seen := map[string]bool{}
	for _, c := range o.Commits {
		if seen[c.Label] {
			return nil, exitcode.BadInputf("-k: label %q given twice", c.Label)
		}
		seen[c.Label] = true
	}
	cpus := o.CPUs
	if len(cpus) == 0 {
		cpus = []int{0}
	}
	p := &results.Plan{
		Version:  results.Version,
		Commits:  o.Commits,
		Baseline: o.Commits[0].Label,
		Options: results.PlanOpts{
			Workloads: o.Workloads, Clients: o.Clients, CPUs: o.CPUs, Settings: o.Settings, Repeats: o.Repeats,
			DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds(), Protocol: o.Protocol, SleepMS: o.SleepMS,
			BuildType: o.BuildType, Order: o.Order, Seed: o.Seed, Perf: o.Perf, PerfWindowS: o.PerfWindow.Seconds(),
		},
		Shard:   o.Shard.String(),
		Metrics: workload.Metrics,
	}

	// Outer groups: settings × CPUs, each needs a cluster (re)start.
	type group struct {
		settings map[string]string
		cpus     int
	}
	var groups []group
	for _, s := range settingsProduct(o.Settings) {
		for _, c := range cpus {
			groups = append(groups, group{s, c})
		}
	}
	// The canonical configuration list decides shard membership.
	var all []results.Config
	for _, g := range groups {
		for _, w := range o.Workloads {
			for _, c := range o.Clients {
				all = append(all, results.Config{Workload: w, Clients: c, CPUs: g.cpus, Settings: g.settings})
			}
		}
	}
	mine := map[string]bool{}
	for i, c := range all {
		if i%o.Shard.N == o.Shard.I-1 {
			mine[c.ID()] = true
			p.Configs = append(p.Configs, c)
		}
	}
	rng := rand.New(rand.NewSource(o.Seed))
	block := 0
	for _, g := range groups {
		for r := 1; r <= o.Repeats; r++ {
			for _, w := range o.Workloads {
				for _, cl := range o.Clients {
					cfg := results.Config{Workload: w, Clients: cl, CPUs: g.cpus, Settings: g.settings}
					order := commitOrder(o.Commits, o.Order, block, rng)
					block++
					if !mine[cfg.ID()] {
						continue
					}
					for _, c := range order {
						p.Cells = append(p.Cells, results.Cell{
							ID:     fmt.Sprintf("%s/r%d/%s", cfg.ID(), r, c.Label),
							Seq:    len(p.Cells) + 1,
							Commit: c.Label, Repeat: r, Config: cfg,
						})
					}
				}
			}
		}
	}
	return p, nil
}

// commitOrder is the commits' order in block number block: forward and
// backward by turns (ABBA), or shuffled.
func commitOrder(cs []results.Commit, order string, block int, rng *rand.Rand) []results.Commit {
	out := append([]results.Commit(nil), cs...)
	if order == "random" {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	if block%2 == 1 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// settingsProduct is the cross product of the settings axes, in order.
func settingsProduct(axes []results.Setting) []map[string]string {
	out := []map[string]string{{}}
	for _, a := range axes {
		var next []map[string]string
		for _, m := range out {
			for _, v := range a.Values {
				n := map[string]string{}
				for k, x := range m {
					n[k] = x
				}
				n[a.Name] = v
				next = append(next, n)
			}
		}
		out = next
	}
	return out
}

// Estimate is the plan's expected wall time: measured and warm-up time
// plus an overhead per cell and per build.
func Estimate(p *results.Plan, perCell time.Duration) time.Duration {
	per := time.Duration((p.Options.DurationS+p.Options.WarmupS)*float64(time.Second)) + perCell
	return time.Duration(len(p.Cells)) * per
}

var labelRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseSpec parses one -k item: REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…]
// or LABEL=install:DIR (a prebuilt installation).
func ParseSpec(s string) (results.Commit, error) {
	label, rest, hasLabel := strings.Cut(s, "=")
	if !hasLabel {
		rest, label = s, s
	}
	if rest == "" {
		return results.Commit{}, exitcode.BadInputf("-k %q: empty ref", s)
	}
	if dir, ok := strings.CutPrefix(rest, "install:"); ok {
		if !hasLabel {
			return results.Commit{}, exitcode.BadInputf("-k %q: name a prebuilt installation: LABEL=install:DIR", s)
		}
		abs, _ := filepath.Abs(dir)
		c := results.Commit{Label: label, Install: abs, Build: label}
		return c, checkLabel(c.Label, s)
	}
	parts := strings.Split(rest, "+")
	c := results.Commit{Label: label, Ref: parts[0]}
	if !hasLabel && len(parts) > 1 {
		return results.Commit{}, exitcode.BadInputf("-k %q: name a patched commit: LABEL=REF+PATCH", s)
	}
	for _, f := range parts[1:] {
		abs, err := filepath.Abs(f)
		if err != nil {
			return results.Commit{}, exitcode.BadInput(err)
		}
		if _, err := os.Stat(abs); err != nil {
			return results.Commit{}, exitcode.BadInputf("-k %q: patch %s: %v", s, f, err)
		}
		c.Patches = append(c.Patches, results.Patch{File: abs})
	}
	return c, checkLabel(c.Label, s)
}

func checkLabel(label, spec string) error {
	if !labelRE.MatchString(label) || safepath.CheckName(label) != nil {
		return exitcode.BadInputf("-k %q: label %q must be 1 to 64 letters, digits, '.', '_' or '-'; write LABEL=REF", spec, label)
	}
	return nil
}
