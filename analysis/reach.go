package analysis

import (
	"fmt"
	"math"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// AssumedCVPct is the cell-to-cell spread of TPS a plan's power is
// stated at before the run has measured its own: what repeated cells of
// one build on a 2-core VM show (5–8 %); a quiet bare-metal host shows
// 1–2 % (abtest doctor, or an A/A run, measures yours).
const AssumedCVPct = 5.0

// minRepeats is the least number of pairs a t test needs to estimate
// its own noise with some confidence (two degrees of freedom).
const minRepeats = 3

// Reach is what a plan's gate can see before it runs: for the primary
// metric, the least repeats at which its tests can reach their level and
// the smallest change it detects with 80 % power at an assumed noise.
type Reach struct {
	Metric  string `json:"metric"`
	Configs int    `json:"configs"`
	// Repeats is the most pairs a configuration can reach: -r, or
	// --max-repeats under --until-decided.
	Repeats int `json:"repeats"`
	// RMin is the least repeats its tests can reach their level at.
	RMin int `json:"r_min"`
	// Level is each configuration's test's share of α at the start.
	Level float64 `json:"level"`
	// Exact: the metric is compared, not tested (instructions), so one
	// repeat answers and no MDE applies.
	Exact bool `json:"exact,omitzero"`
	// CVPct is the cell spread the MDEs assume; RunMDEPct and
	// ConfigMDEPct the changes the run-level test and one
	// configuration's detect with 80 % power at it.
	CVPct        float64 `json:"cv_pct"`
	RunMDEPct    float64 `json:"run_mde_pct"`
	ConfigMDEPct float64 `json:"config_mde_pct"`
}

// PlanReach states the gate's reach for each primary metric of a plan:
// Options.Primary's over the timed (or, for instructions_per_tx, the
// instruction) configurations, or each configuration's own (PrimaryFor:
// tps in a closed loop, instructions_per_tx for instruction cells, the
// workload's declared primary or latency_p99_ms in an open loop), one
// Reach per metric over the configurations it is the primary of, as
// Analyze pools them.
func PlanReach(p *results.Plan, o Options) []Reach {
	alpha := o.Alpha
	if alpha == 0 {
		alpha = 0.01
	}
	n := p.Options.Repeats
	if p.Options.UntilDecided {
		n = max(n, p.Options.MaxRepeats)
	}
	primaries := o.Primary
	configs := map[string]int{}
	if len(primaries) == 0 {
		for _, c := range p.Configs {
			m := PrimaryFor(c, p)
			if configs[m] == 0 {
				primaries = append(primaries, m)
			}
			configs[m]++
		}
	} else {
		timed, instr := 0, 0
		for _, c := range p.Configs {
			if c.Instructions {
				instr++
			} else {
				timed++
			}
		}
		for _, m := range primaries {
			configs[m] = timed
			if m == results.MetricInstructionsPerTx {
				configs[m] = instr
			}
		}
	}
	var out []Reach
	for _, m := range primaries {
		k := configs[m]
		def, _ := p.Metrics.Get(m)
		r := Reach{Metric: m, Configs: k, Repeats: n, RMin: minRepeats, CVPct: AssumedCVPct}
		share := alpha / float64(len(primaries))
		r.Level = share / float64(max(k, 1))
		if k > 1 {
			r.Level /= 2
		}
		if def.Tier == results.TierExact && !def.Count {
			r.Exact, r.RMin = true, 1
			out = append(out, r)
			continue
		}
		sd := math.Sqrt2 * AssumedCVPct / 100
		if n >= 2 {
			se := sd / math.Sqrt(float64(n))
			r.ConfigMDEPct = 100 * -math.Expm1(-mdeT(se, float64(n-1), r.Level))
			r.RunMDEPct = r.ConfigMDEPct
			if k > 1 {
				r.RunMDEPct = 100 * -math.Expm1(-mdeT(se/math.Sqrt(float64(k)), float64(k*(n-1)), share/2))
			}
		} else {
			r.ConfigMDEPct, r.RunMDEPct = math.Inf(1), math.Inf(1)
		}
		out = append(out, r)
	}
	return out
}

// detects is what a smallest detectable change lets a run see: "12.2%",
// or "no change at all" when it has no size.
func detects(mde float64) string {
	if !isFinite(mde) {
		return "no change at all"
	}
	return pctAbs(mde)
}

// String is the plan's gate line.
func (r Reach) String() string {
	if r.Exact {
		return fmt.Sprintf("gate: %s in %s, compared exactly within its band: one repeat answers", r.Metric, text.Count(r.Configs, "configuration"))
	}
	s := fmt.Sprintf("gate: %s in %s at %d repeats (reachable from r ≥ %d); at %.0f%% cell noise it detects ", r.Metric, text.Count(r.Configs, "configuration"), r.Repeats, r.RMin, r.CVPct)
	if r.Configs > 1 {
		s += fmt.Sprintf("%s over the run and ", detects(r.RunMDEPct))
	}
	return s + fmt.Sprintf("%s in one configuration (80%% power; each configuration's test at level %.2g)", detects(r.ConfigMDEPct), r.Level)
}

// CheckReach refuses a plan whose primary's tests cannot reach their
// level at any repeats it allows: exit 2 with r_min, before anything
// runs (--fail-on-regression would otherwise end in exit 3 after the
// whole run).
func CheckReach(p *results.Plan, o Options) error {
	for _, r := range PlanReach(p, o) {
		if r.Repeats < r.RMin && r.Configs > 0 {
			return exitcode.BadInputf("the gate cannot answer for %s at %d repeats: its tests need r ≥ %d (use -r %d, or --until-decided --max-repeats %d)", r.Metric, r.Repeats, r.RMin, r.RMin, r.RMin)
		}
	}
	return nil
}
