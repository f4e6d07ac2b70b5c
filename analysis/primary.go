package analysis

// The primary metric of each configuration: the question its gate
// answers first, which every other gated metric there is tested behind.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// PrimaryFor is the primary metric of configuration c of plan p when
// --primary names none (issue 40): in a closed loop tps (or
// instructions_per_tx for an instruction configuration); in an open
// loop (-R), where the committed rate is the offered one, the metric
// the workload file declares its primary (-- abtest:primary NAME), else
// latency_p99_ms. A declared primary the plan does not define, or one
// without a direction, is not used (latency_p99_ms instead; Analyze
// warns).
func PrimaryFor(c results.Config, p *results.Plan) string {
	switch {
	case c.Instructions:
		return results.MetricInstructionsPerTx
	case !c.Open():
		return results.MetricTPS
	}
	if m, ok := declaredPrimary(c, p); ok {
		return m
	}
	return results.MetricLatencyP99
}

// declaredPrimary is the primary c's workload file declares, and
// whether it is one the plan can judge by.
func declaredPrimary(c results.Config, p *results.Plan) (string, bool) {
	m := p.Options.Declares[c.Workload].Primary
	if m == "" {
		return "", false
	}
	def, ok := p.Metrics.Get(m)
	return m, ok && def.Direction != results.Descriptive
}

// wantPrimary lists the primary metrics configuration id may have, in
// order: --primary's (all of them), or PrimaryFor's, and in a closed
// loop the other of DefaultPrimary should its cells have only that.
func (a *analyzer) wantPrimary(id string) []string {
	if len(a.o.Primary) > 0 {
		return a.o.Primary
	}
	c := a.cfgs[id]
	first := PrimaryFor(c, a.p)
	if c.Open() && !c.Instructions {
		return []string{first}
	}
	out := []string{first}
	for _, m := range DefaultPrimary {
		if m != first {
			out = append(out, m)
		}
	}
	return out
}

// choosePrimary names each configuration's primary metrics: the ones
// --primary gave, or the one that fits it (wantPrimary). A primary or
// --gate metric that no usable cell has is the run not answering
// (incomplete, exit 3), never a metric silently dropped.
func (a *analyzer) choosePrimary() {
	explicit := len(a.o.Primary) > 0
	a.primary = map[string][]string{}
	a.warnDeclared()
	for _, id := range a.configs {
		for _, m := range a.wantPrimary(id) {
			has := false
			for _, g := range a.groups[id] {
				if len(a.values(g, m)) > 0 {
					has = true
					break
				}
			}
			if has && slices.Contains(a.r.Metrics, m) {
				a.primary[id] = append(a.primary[id], m)
				if !explicit {
					break
				}
			}
		}
	}
	usable := false
	for _, id := range a.configs {
		here := false
		for _, g := range a.groups[id] {
			here = here || len(g.usable) > 0
		}
		usable = usable || here
		if here && len(a.primary[id]) == 0 {
			a.noPrimary(id, a.wantPrimary(id))
		}
	}
	if !usable {
		return
	}
	var absent []string
	if explicit {
		absent = append(absent, a.o.Primary...)
	}
	absent = append(absent, a.o.Gate...)
	for _, m := range absent {
		if a.present[m] {
			continue
		}
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: "", Config: "every configuration", Metric: m,
			Why: fmt.Sprintf("%s is in no usable cell: a --primary or --gate metric the run did not measure", m), Gated: true})
	}
}

// warnDeclared says once per workload that its declared primary cannot
// be one (unknown to the plan, or descriptive), when it would be used.
func (a *analyzer) warnDeclared() {
	if len(a.o.Primary) > 0 {
		return
	}
	seen := map[string]bool{}
	for _, c := range a.p.Configs {
		m, ok := declaredPrimary(c, a.p)
		if !c.Open() || c.Instructions || m == "" || ok || seen[c.Workload] {
			continue
		}
		seen[c.Workload] = true
		a.r.Warnings = append(a.r.Warnings, fmt.Sprintf("%s declares the primary %s, which the plan does not define or which has no better or worse: its open-loop configurations are judged by %s", c.Workload, m, results.MetricLatencyP99))
	}
}

// noPrimary marks each commit incomplete in a configuration whose cells
// have none of the primary metrics: its gated metrics, tested only
// behind a primary, would otherwise never be tested there and the run
// would say ok.
func (a *analyzer) noPrimary(id string, want []string) {
	for _, c := range a.r.Commits {
		if c == a.r.Baseline {
			continue
		}
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: id, Metric: strings.Join(want, "|"),
			Why: fmt.Sprintf("no primary metric (%s) in this configuration's cells: nothing to test its gated metrics behind", strings.Join(want, " or ")), Gated: true})
	}
}

// primaryIn counts the configurations whose primary m is.
func (a *analyzer) primaryIn(m string) int {
	n := 0
	for _, id := range a.configs {
		if slices.Contains(a.primary[id], m) {
			n++
		}
	}
	return n
}

// gatedIn reports whether metric m gates in configuration id: by its
// tier, unless it gates only as the primary of other configurations
// (latency_p99_ms, declared report-only, is the primary of the open
// loop and reported in a closed one), or as id's own primary.
func (a *analyzer) gatedIn(m, id string) bool {
	return a.tiers[m].Gated && !a.primaryOnly[m] || slices.Contains(a.primary[id], m)
}
