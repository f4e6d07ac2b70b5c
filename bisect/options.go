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
	// Workloads is the workload (a -w list of one).
	Workloads string
	// Clients and CPUs (0: not pinned) are the configuration's.
	Clients, CPUs   int
	PgssMax         int
	Settings        []string
	Seconds, Warmup int
	// Rate is the offered rate (-R, one; empty or 0 a closed loop).
	Rate            string
	Protocol, Build string
	// InstrTransactions is N of each instruction cell (0: the default).
	InstrTransactions int
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
	m.Protocol, m.Clients, m.InstrTransactions = o.Protocol, []int{o.Clients}, o.InstrTransactions
	var err error
	if m.Workloads, err = matrix.WorkloadNames(o.Workloads); err != nil {
		return nil, err
	}
	if o.CPUs != 0 {
		m.CPUs = []int{o.CPUs}
	}
	if m.Duration, err = matrix.Seconds(o.Seconds, "-d"); err != nil {
		return nil, err
	}
	if m.Warmup, err = matrix.Seconds(o.Warmup, "--warmup"); err != nil {
		return nil, err
	}
	if m.Rates, err = matrix.ParseRates(o.Rate); err != nil {
		return nil, err
	}
	switch {
	case len(m.Rates) > 1:
		return nil, exitcode.BadInputf("--rate %s: bisect runs at one offered rate, e.g. --rate 1000", o.Rate)
	case len(m.Rates) == 1 && m.Rates[0] == 0:
		// --rate 0 is the closed loop of no --rate: the same
		// configuration, so the same bisection to resume.
		m.Rates = nil
	}
	if m.Build, err = build.ParseType(o.Build); err != nil {
		return nil, err
	}
	if m.Settings, err = matrix.SettingsAxes(strconv.Itoa(o.PgssMax), o.Settings); err != nil {
		return nil, err
	}
	return r, nil
}
