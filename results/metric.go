package results

import (
	"encoding/json"
	"fmt"
)

// Direction says which way a metric is better, or that it only describes.
type Direction string

const (
	// HigherIsBetter: tps.
	HigherIsBetter Direction = "higher_is_better"
	// LowerIsBetter: latencies, CPU or WAL per transaction, failures.
	LowerIsBetter Direction = "lower_is_better"
	// Descriptive metrics (entry counts, distributions) say higher or
	// lower, never better or worse, and are gated only when asked.
	Descriptive Direction = "descriptive"
)

// Valid reports whether d is one of the declared directions.
func (d Direction) Valid() bool {
	return d == HigherIsBetter || d == LowerIsBetter || d == Descriptive
}

// Tier is how a metric is gated (seed 001: gate tiers set by measured
// determinism).
type Tier string

const (
	// TierExact: the baseline's repeats never vary; any shift is real.
	TierExact Tier = "exact"
	// TierBand: a small spread; gated beyond the metric's threshold.
	TierBand Tier = "band"
	// TierReport: shown, never gated.
	TierReport Tier = "report"
)

// Rank orders tiers from the tightest (exact, 0) to the loosest (report, 2).
func (t Tier) Rank() int {
	switch t {
	case TierExact:
		return 0
	case TierBand:
		return 1
	}
	return 2
}

// Valid reports whether t is one of the declared tiers.
func (t Tier) Valid() bool { return t == TierExact || t == TierBand || t == TierReport }

// MeasuredBy names the kind of method a metric's value depends on
// besides the server: cells whose methods of that kind differ measured
// different things, and the analysis refuses to compare them
// (Record.Method says each cell's).
type MeasuredBy string

const (
	// ByLatency: the latency percentiles (completion intervals in a
	// closed loop, pgbench's own latencies with -R).
	ByLatency MeasuredBy = "latency"
	// ByInstructions: instruction counts (valgrind or the CPU's counter).
	ByInstructions MeasuredBy = "instructions"
)

// Valid reports whether b is empty (no method) or a declared kind.
func (b MeasuredBy) Valid() bool { return b == "" || b == ByLatency || b == ByInstructions }

// Validity is when a metric's value in a cell is a measurement. The
// sources that never lose data (pgbench, pg_stat_wal,
// pg_stat_user_tables, /proc) are always valid; a count taken from
// pg_stat_statements' calls or rows is not once entries were evicted
// inside the window, for an evicted entry takes its counts with it
// (churn, one statement per transaction, measured 0.76 and 0.64
// statements per transaction, and the difference was "better").
type Validity string

const (
	// ValidAlways: the source never loses data (the zero value).
	ValidAlways Validity = ""
	// ValidWithoutEvictions: void in a cell whose pg_stat_statements
	// deallocation count rose inside the window, or could not be read
	// (PostgreSQL < 14 has no pg_stat_statements_info).
	ValidWithoutEvictions Validity = "no_pgss_evictions"
)

// The reasons Validity.Void gives: one sentence per rule, the same in
// every cell, so that a report says it once per metric.
const (
	VoidEvicted         = "pg_stat_statements evicted entries inside the window"
	VoidDeallocsUnknown = "pg_stat_statements_info is missing (PostgreSQL < 14): evictions inside the window cannot be ruled out"
)

// Valid reports whether v is one of the declared validities.
func (v Validity) Valid() bool { return v == ValidAlways || v == ValidWithoutEvictions }

// Window is what a cell recorded of its measured window that decides
// whether its values are valid.
type Window struct {
	// Deallocs is how often pg_stat_statements deallocated entries
	// inside the window; DeallocsKnown whether it could be read.
	Deallocs      int64
	DeallocsKnown bool
}

// Void returns why a value of a metric of validity v is not a
// measurement in the window w, or "" when it is.
func (v Validity) Void(w Window) string {
	if v == ValidWithoutEvictions {
		switch {
		case !w.DeallocsKnown:
			return VoidDeallocsUnknown
		case w.Deallocs > 0:
			return VoidEvicted
		}
	}
	return ""
}

// Metric defines one metric of a cell's Metrics map. The definitions are
// written into plan.json, so results are judged by the rules they were
// run under, not by today's.
type Metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Direction: higher or lower is better, or descriptive.
	Direction Direction `json:"direction"`
	// ThresholdPct is the smallest change, in percent, that is called
	// better or worse even when it is statistically significant.
	ThresholdPct float64 `json:"threshold_pct"`
	// Tier is the tier the metric starts in; the analysis may loosen it
	// on measured spread, never tighten it.
	Tier Tier `json:"tier"`
	// SameAs names a metric this one is a function of (latency_avg_ms is
	// clients/tps in a closed loop): the two are one test, not two.
	SameAs string `json:"same_as,omitempty"`
	// MeasuredBy is the kind of method the value depends on, when it
	// depends on one: cells measured differently are not compared.
	MeasuredBy MeasuredBy `json:"measured_by,omitempty"`
	// Count marks an event count (failed transactions): compared by a
	// rate test on the arms' totals, so sporadic events at the
	// baseline's rate are not a change and a 5× rate is.
	Count bool `json:"count,omitempty"`
	// Positive: a value ≤ 0 is impossible (TPS): such a value, or a null
	// that decoded to 0, is invalid and counted as missing.
	Positive bool `json:"positive,omitempty"`
	// Validity says when a cell's value is a measurement: a void value
	// is recorded as missing with its reason (Record.Void) and never
	// judged.
	Validity Validity `json:"validity,omitempty"`
	// Doc says what the metric is.
	Doc string `json:"doc"`
}

// UnmarshalJSON reads both schema versions: version 1 wrote
// higher_is_better and min_effect_pct.
func (m *Metric) UnmarshalJSON(data []byte) error {
	type plain Metric
	var v struct {
		plain
		HigherIsBetter *bool    `json:"higher_is_better"`
		MinEffectPct   *float64 `json:"min_effect_pct"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*m = Metric(v.plain)
	if m.Direction == "" && v.HigherIsBetter != nil {
		m.Direction = LowerIsBetter
		if *v.HigherIsBetter {
			m.Direction = HigherIsBetter
		}
	}
	if v.MinEffectPct != nil && m.ThresholdPct == 0 {
		m.ThresholdPct = *v.MinEffectPct
	}
	if m.Direction == "" {
		m.Direction = Descriptive
	}
	if !m.Direction.Valid() {
		return fmt.Errorf("metric %s: direction %q: want %s, %s or %s", m.Name, m.Direction, HigherIsBetter, LowerIsBetter, Descriptive)
	}
	if m.Tier == "" {
		m.Tier = TierReport
	}
	if !m.Tier.Valid() {
		return fmt.Errorf("metric %s: tier %q: want %s, %s or %s", m.Name, m.Tier, TierExact, TierBand, TierReport)
	}
	if !m.MeasuredBy.Valid() {
		return fmt.Errorf("metric %s: measured_by %q: want %s or %s", m.Name, m.MeasuredBy, ByLatency, ByInstructions)
	}
	if !m.Validity.Valid() {
		return fmt.Errorf("metric %s: validity %q: want %s or none", m.Name, m.Validity, ValidWithoutEvictions)
	}
	return nil
}

// Metrics is a set of metric definitions in their declared order.
type Metrics []Metric

// Get returns the definition of name.
func (ms Metrics) Get(name string) (Metric, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Apply moves out of values each metric of ms whose value is void in the
// window w, and returns those metrics with why (nil when none is): what
// Record.Void records.
func (ms Metrics) Apply(values map[string]float64, w Window) map[string]string {
	var void map[string]string
	for _, m := range ms {
		if _, ok := values[m.Name]; !ok {
			continue
		}
		if why := m.Validity.Void(w); why != "" {
			if void == nil {
				void = map[string]string{}
			}
			void[m.Name] = why
			delete(values, m.Name)
		}
	}
	return void
}

// Names returns the metrics' names in order.
func (ms Metrics) Names() []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// Status is a cell's outcome.
type Status string

const (
	StatusOK     Status = "ok"
	StatusFailed Status = "failed"
)

// GateStatus is what a run's gate said (analysis.GateStatus): the status
// of a night in nightly's history and the store.
type GateStatus string

const (
	GateOK         GateStatus = "ok"
	GateRegression GateStatus = "regression"
	GateFailed     GateStatus = "failed"
	// GateUnanswered: the run ran, but could not have seen a regression
	// of the size asked about (analysis.ErrUnanswered); never "ok".
	GateUnanswered GateStatus = "unanswered"
)

// Verdict is the analysis' answer for one commit, configuration and
// metric against the baseline.
type Verdict string

const (
	// VerdictBaseline marks the baseline's own row.
	VerdictBaseline Verdict = "baseline"
	// Better and Worse: significant, and beyond the metric's threshold.
	Better Verdict = "better"
	Worse  Verdict = "worse"
	// Higher and Lower: the same for a descriptive metric.
	Higher Verdict = "higher"
	Lower  Verdict = "lower"
	// Same: equivalence, the change's interval lies within ±threshold.
	Same Verdict = "same"
	// Unknown: neither; the report gives the smallest change this run
	// could have detected.
	Unknown Verdict = "unknown"
	// Incomplete: fewer usable repeats than planned (failed, saturated,
	// missing): the run could not answer, and that gates.
	Incomplete Verdict = "incomplete"
)
