package bisect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// DefaultMetric is the metric a bisection follows unless told another.
const DefaultMetric = results.MetricTPS

// Options are a bisection as a person writes it (abtest bisect's flags):
// one configuration, durations in seconds. Request checks and types
// them.
type Options struct {
	Good, Bad, Metric string
	// Threshold is the minimum change in percent; zero means the
	// metric's own.
	Threshold float64
	// Repeats per step; RepeatsGiven says the user chose it (an exact
	// metric is otherwise decided by one).
	Repeats, MaxRepeats int
	RepeatsGiven        bool
	// Matrix are the options of each step's matrix: its workload (-w),
	// axes (-c, -C, -m, --set, -R, --var, --condition…; one value each:
	// one configuration), durations, protocol, build type and
	// --instr-transactions. Commits, repeats and order are the
	// bisection's.
	Matrix matrix.Options
	// Reuse are install name prefixes (--reuse; Request.Reuse).
	Reuse []string
}

// Request returns the Request o asks for (Dir aside).
func (o Options) Request() (*Request, error) {
	if err := build.CheckReusePrefixes(o.Reuse); err != nil {
		return nil, err
	}
	// The bar of analyze --threshold, by its rule: a bar the size of
	// the measurement would call any step's change the same.
	if _, err := analysis.ParseThresholds([]string{o.Metric + "=" + strconv.FormatFloat(o.Threshold, 'g', -1, 64)}); err != nil {
		return nil, exitcode.BadInputf("--threshold %v: want a percentage from 0 to 50, e.g. 5", o.Threshold)
	}
	r := &Request{Good: o.Good, Bad: o.Bad, Metric: o.Metric, Threshold: o.Threshold, Repeats: o.Repeats, MaxRepeats: o.MaxRepeats, Reuse: o.Reuse}
	if def, ok := results.Builtin.Get(r.Metric); ok && def.Tier == results.TierExact && !o.RepeatsGiven {
		// An exact metric (instructions_per_tx) is decided by one
		// repeat per step.
		r.Repeats = 1
	}
	m := &r.Matrix
	m.Protocol, m.InstrTransactions = o.Matrix.Protocol, o.Matrix.InstrTransactions
	if err := o.Matrix.ParseAxes(m); err != nil {
		return nil, err
	}
	if rates, _, _ := matrix.ParseRateList(strings.Join(m.Axes["rate"], ",")); len(rates) == 1 && rates[0] == 0 {
		// --rate 0 is the closed loop of no --rate: the same
		// configuration, so the same bisection to resume.
		delete(m.Axes, "rate")
	}
	var err error
	if m.Duration, err = matrix.Seconds(o.Matrix.Seconds, "-d"); err != nil {
		return nil, err
	}
	if m.Warmup, err = matrix.Seconds(o.Matrix.Warmup, "--warmup"); err != nil {
		return nil, err
	}
	if m.Build, err = build.ParseType(o.Matrix.Build); err != nil {
		return nil, err
	}
	_, err = oneConfig(r.step("good", "step", "bad", max(2, r.Repeats)))
	return r, err
}

// oneConfig is the plan of a step (its request checked), refusing more
// than one configuration (an axis given two values, -w two workloads):
// a bisection follows one.
func oneConfig(step matrix.Request) (*results.Plan, error) {
	var labels []results.Commit
	for _, c := range step.Commits {
		labels = append(labels, results.Commit{Label: c.Label, Build: c.Label})
	}
	p, err := matrix.PlanFor(step, labels)
	if err != nil || len(p.Configs) < 2 {
		return p, err
	}
	a, b := p.Configs[0].Values(nil), p.Configs[1].Values(nil)
	return nil, exitcode.BadInputf("bisect measures one configuration, one workload, one offered rate, one value of each axis: not %s and %s", only(a, b), only(b, a))
}

// only are the values of x that are not in y, as axis NAME=VALUE.
func only(x, y []results.AxisValue) []string {
	out := []string{}
	for _, v := range slices.DeleteFunc(slices.Clone(x), func(v results.AxisValue) bool { return slices.Contains(y, v) }) {
		out = append(out, v.Axis.Name+" "+strings.TrimPrefix(v.Name+"="+v.Value, "="))
	}
	return out
}
