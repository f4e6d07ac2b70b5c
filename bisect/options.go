package bisect

import (
	"strconv"

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
	// Workloads (a -w list of one), PgssMax (-m) and Axes (by the
	// registry's axis names: -c, -C, --set, -R, --var, --condition…) are
	// matrix.Options': one value each, the one configuration.
	Workloads, PgssMax string
	Axes               map[string][]string
	Seconds, Warmup    int
	Protocol, Build    string
	// InstrTransactions is N of each instruction cell (0: the default).
	InstrTransactions int
	// Reuse are install name prefixes (--reuse; Request.Reuse).
	Reuse []string
	// Given reports a flag given by its long name (matrix.Options.Given).
	Given func(flag string) bool
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
	m.Protocol, m.InstrTransactions = o.Protocol, o.InstrTransactions
	mo := matrix.Options{Workloads: o.Workloads, PgssMax: o.PgssMax, Axes: o.Axes, Given: o.Given}
	if err := mo.ParseAxes(m); err != nil {
		return nil, err
	}
	if len(m.Rates) == 1 && m.Rates[0] == 0 {
		// --rate 0 is the closed loop of no --rate: the same
		// configuration, so the same bisection to resume.
		m.Rates, m.RateUnit = nil, ""
	}
	var err error
	if m.Duration, err = matrix.Seconds(o.Seconds, "-d"); err != nil {
		return nil, err
	}
	if m.Warmup, err = matrix.Seconds(o.Warmup, "--warmup"); err != nil {
		return nil, err
	}
	if m.Build, err = build.ParseType(o.Build); err != nil {
		return nil, err
	}
	return r, oneConfig(r.step("good", "step", "bad", max(2, r.Repeats)))
}

// oneConfig refuses a step of more than one configuration, naming the
// first axis given two values: a bisection follows one.
func oneConfig(step matrix.Request) error {
	var labels []results.Commit
	for _, c := range step.Commits {
		labels = append(labels, results.Commit{Label: c.Label, Build: c.Label})
	}
	p, err := matrix.PlanFor(step, labels)
	if err != nil || len(p.Configs) < 2 {
		return err
	}
	a, b := p.Configs[0].Values(nil), p.Configs[1].Values(nil)
	for i := range a {
		if i < len(b) && a[i] == b[i] {
			continue
		}
		flag, v := "-w", a[i].Value
		if a[i].Axis.Flag.Name != "" {
			flag = "--" + a[i].Axis.Flag.Name
		}
		if a[i].Axis.Flag.Each {
			v = a[i].Name + "=" + v
		}
		return exitcode.BadInputf("%s %s, …: bisect measures one configuration, one value of each axis (one workload, one client count, one offered rate…); give one", flag, v)
	}
	return nil
}
