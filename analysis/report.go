package analysis

// The report model: rows of Stats per configuration and metric, the
// changes, the incomplete answers, the run-level Geomeans and each
// commit's Summary, each type with the JSON it writes (a number that is
// not finite as null).

import (
	"fmt"
	"math"

	"github.com/pgabtest/abtest/results"
)

// Stat is one commit's numbers for one metric in one configuration.
type Stat struct {
	Commit string `json:"commit"`
	N      int    `json:"n"`
	// Values are the cells' values (not in the JSON: cells.jsonl has
	// them, and at 100 000 cells they would dominate the report).
	Values []float64 `json:"-"`
	Median float64   `json:"median"`
	// Lo and Hi bound the 95 % confidence interval of the median; they
	// are ±Inf (null in JSON) when there are too few values for one.
	Lo float64 `json:"ci_lo"`
	Hi float64 `json:"ci_hi"`
	// DeltaPct is the change against the baseline in percent: the
	// geometric mean of the pairs' ratios when the blocks are complete
	// (the t test's estimate), the ratio of medians otherwise; DeltaLo
	// and DeltaHi bound it at 95 %.
	DeltaPct float64 `json:"delta_pct,omitempty"`
	DeltaLo  float64 `json:"delta_lo_pct,omitempty"`
	DeltaHi  float64 `json:"delta_hi_pct,omitempty"`
	// DecideLo and DecideHi bound the change at 1−2·EquivalenceAlpha(α)
	// (90 % at the default α): same is decided on it (the two one-sided
	// tests of equivalence).
	DecideLo float64 `json:"decide_lo_pct,omitempty"`
	DecideHi float64 `json:"decide_hi_pct,omitempty"`
	// Geomean is the geometric mean of the values DeltaPct rests on (the
	// pairs, when paired) and BaseGeomean the baseline's over the same
	// blocks: for a paired log test Geomean/BaseGeomean − 1 is DeltaPct
	// exactly (issue 43: medians +2.05 % beside Δ +3.98 %). On the
	// baseline's Stat, Geomean is over its values and BaseGeomean NaN.
	// NaN (null) where a value is ≤ 0 or there are none.
	Geomean     float64 `json:"geomean,omitempty"`
	BaseGeomean float64 `json:"base_geomean,omitempty"`
	// MediansDisagree: DeltaPct points the other way than the medians
	// (Median against the baseline's): the report marks the Δ and says
	// why (boundDeltas).
	MediansDisagree bool `json:"medians_disagree,omitzero"`
	// DeltaAbs is the mean difference in the metric's unit where the
	// baseline is 0 and a change in percent has no size.
	DeltaAbs float64 `json:"delta_abs,omitzero,omitempty"`
	// P is the test's raw p-value (NaN for exact and baseline rows).
	P float64 `json:"p,omitempty"`
	// Method is how the verdict was reached: "paired", "unpaired",
	// "exact", "as tps".
	Method string `json:"method,omitempty"`
	// MinEffectPct is the bar a change must pass and an equivalence
	// must fit: the threshold, or under --bar auto max(threshold, noise).
	MinEffectPct float64 `json:"min_effect_pct,omitempty"`
	// DetectablePct is the smallest regression this number of pairs and
	// this noise had 80 % power to call at the test's level (set for
	// every paired test; the report shows it for unknown verdicts).
	DetectablePct float64 `json:"detectable_pct,omitempty"`
	// Look is the look (1-based) the verdict was reached at, and Blocks,
	// under a sequential design (--until-decided), how many interleaved
	// blocks (pairs) it rests on: what the run needed to decide.
	Look    int             `json:"look,omitzero"`
	Blocks  int             `json:"blocks,omitzero"`
	Verdict results.Verdict `json:"verdict"`
	Gated   bool            `json:"gated"`
	// Primary: the metric is its configuration's primary (PrimaryFor,
	// or --primary): the answer a run gives first.
	Primary bool `json:"primary,omitzero"`
	// Behind: a secondary gated metric left untested because its
	// configuration's primary was not called better or worse (its verdict is unknown;
	// it is counted apart, as Summary.Behind).
	Behind bool `json:"behind_primary,omitzero"`
	// Note explains the verdict when it needs it.
	Note string `json:"note,omitempty"`
	// NoSignal says why the row has nothing to judge against the
	// baseline (validity.go): every form shows "—" and this reason,
	// never a verdict or a Δ.
	NoSignal string `json:"no_signal,omitempty"`
}

// MarshalJSON writes every number that is not finite as null
// (marshalJSON), and says why in "undefined". The baseline's Stat has no
// change, interval of the change or p; a row without a signal no change
// either (validity.go).
func (s Stat) MarshalJSON() ([]byte, error) {
	type plain Stat
	und := map[string]string{}
	why := func(name string, x float64, why string) {
		if !isFinite(x) && why != "" {
			und[name] = why
		}
	}
	base := s.Verdict == results.VerdictBaseline
	if s.N > 0 {
		ciWhy := fmt.Sprintf("%d values are too few for a 95%% interval", s.N)
		why("ci_lo", s.Lo, ciWhy)
		why("ci_hi", s.Hi, ciWhy)
	} else {
		why("median", s.Median, "no values")
	}
	nan := math.NaN()
	switch {
	case base || s.N == 0:
		s.DeltaPct, s.DeltaLo, s.DeltaHi, s.DecideLo, s.DecideHi, s.P = nan, nan, nan, nan, nan, nan
	case s.NoSignal != "":
		why("delta_pct", s.DeltaPct, "no signal: "+s.NoSignal)
	default:
		why("delta_pct", s.DeltaPct, "the baseline's median is 0: the change has no size")
		if s.Method != "exact" {
			dciWhy := "too few pairs for an interval at this level, or no pairs"
			why("delta_lo_pct", s.DeltaLo, dciWhy)
			why("delta_hi_pct", s.DeltaHi, dciWhy)
			why("p", s.P, "not tested")
		}
	}
	if s.Verdict != results.Unknown {
		s.DetectablePct = nan
	} else if !base && s.N > 0 && s.NoSignal == "" {
		why("detectable_pct", s.DetectablePct, fmt.Sprintf("%d pairs, or a secondary never given α: no change of any size could have been called", s.N))
	}
	if base || s.Verdict == results.Incomplete {
		s.MinEffectPct = nan
	} else {
		why("min_effect_pct", s.MinEffectPct, "the baseline varied around a median of 0")
	}
	out := struct {
		plain
		Undefined map[string]string `json:"undefined,omitempty"`
	}{plain: plain(s)}
	if len(und) > 0 {
		out.Undefined = und
	}
	return marshalJSON(out)
}

// Finite is x, or nil (JSON null, SQL NULL) when x is ±Inf or NaN.
func Finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// Row is one configuration and metric across commits.
type Row struct {
	Config string `json:"config"`
	Metric string `json:"metric"`
	Stats  []Stat `json:"stats"`
}

// Tier is a metric's measured tier, pooled over the configurations.
type Tier struct {
	Metric string       `json:"metric"`
	Tier   results.Tier `json:"tier"`
	// Gated is false for report-only metrics.
	Gated bool `json:"gated"`
	// SpreadPct is the median over configurations of the baseline's
	// robust CV.
	SpreadPct    float64 `json:"spread_pct"`
	ThresholdPct float64 `json:"threshold_pct"`
	Why          string  `json:"why"`
}

// Change is a called change (better, worse, higher, lower), for the
// summary and the gate.
type Change struct {
	Commit   string          `json:"commit"`
	Config   string          `json:"config"`
	Metric   string          `json:"metric"`
	DeltaPct float64         `json:"delta_pct"`
	P        float64         `json:"p"`
	Verdict  results.Verdict `json:"verdict"`
	Gated    bool            `json:"gated"`
	Note     string          `json:"note,omitempty"`
}

// Incomplete is a commit × configuration (× metric, when only a metric
// is missing) with fewer usable repeats than planned: the run could not
// answer there.
type Incomplete struct {
	Commit string `json:"commit"`
	Config string `json:"config"`
	// Metric is set when the cells are there but lack this metric.
	Metric  string `json:"metric,omitempty"`
	Usable  int    `json:"usable"`
	Planned int    `json:"planned"`
	Why     string `json:"why"`
	// Gated: a missing cell always gates; a missing metric gates when
	// the metric does.
	Gated bool `json:"gated"`
}

// Geomean is a commit's run-level answer for a primary metric: the
// geometric mean of its ratio to the baseline over the configurations
// with complete blocks, tested as one (the pooled test of the primary:
// each configuration's mean log ratio, the standard error from their own
// pair spreads, Student's t with Welch–Satterthwaite's degrees of
// freedom). Lo and Hi bound a 95 % interval; DecideLo and DecideHi the
// equivalence one that same is decided on, of confidence DecidePct
// (1−2·EquivalenceAlpha, less at a sequential run's look).
type Geomean struct {
	Commit    string  `json:"commit"`
	Metric    string  `json:"metric"`
	Ratio     float64 `json:"ratio"`
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	DecideLo  float64 `json:"decide_lo"`
	DecideHi  float64 `json:"decide_hi"`
	DecidePct float64 `json:"decide_pct,omitempty"`
	Configs   int     `json:"configs"`
	// P is the pooled test's p-value; Verdict its answer (better, worse,
	// same or unknown), at the bar MinEffectPct (the mean of the
	// configurations' bars).
	P            float64         `json:"p"`
	Verdict      results.Verdict `json:"verdict"`
	MinEffectPct float64         `json:"min_effect_pct"`
	// Bar is where MinEffectPct came from (Options.Bar).
	Bar Bar `json:"bar"`
	// DetectablePct is the change it had 80 % power to call, and
	// NeedRepeats the repeats its equivalence interval would need to fit
	// ±MinEffectPct at the spread it measured (set when the verdict is
	// unknown); HalfWidthPct is that interval's half-width now.
	DetectablePct float64 `json:"detectable_pct,omitempty"`
	NeedRepeats   int     `json:"need_repeats,omitzero"`
	// NeedMinutes is what NeedRepeats would take here: repeats ×
	// configurations × commits × the median time from one cell's start
	// to the next in this run (0 when the run does not show it).
	NeedMinutes  float64 `json:"need_minutes,omitempty"`
	HalfWidthPct float64 `json:"half_width_pct,omitzero,omitempty"`
	Look         int     `json:"look,omitzero"`
}

// Summary is one commit's answer.
type Summary struct {
	Commit     string `json:"commit"`
	Better     int    `json:"better"`
	Worse      int    `json:"worse"`
	Higher     int    `json:"higher"`
	Lower      int    `json:"lower"`
	Same       int    `json:"same"`
	Unknown    int    `json:"unknown"`
	Incomplete int    `json:"incomplete"`
	// Behind counts the secondary gated tests left untested behind a
	// primary that did not change.
	Behind int `json:"behind_primary"`
	// GatedUnknown counts the unknown verdicts of gated metrics.
	GatedUnknown int `json:"gated_unknown"`
	// Tests is how many gated tests the family controlled (the pooled
	// run-level tests and counters against a baseline that varied among
	// them); Exact how many deterministic counters were compared exactly;
	// Mirrored how many metrics were judged by the one they are a
	// function of.
	Tests    int `json:"tests"`
	Exact    int `json:"exact"`
	Mirrored int `json:"mirrored"`
	// NoChangePct is set when every gated verdict is same: no gated
	// metric changed by this much or more.
	NoChangePct float64 `json:"no_change_pct,omitzero,omitempty"`
	// DetectablePct is the largest smallest-detectable change over the
	// gated unknown verdicts: changes below it could have been missed
	// (in JSON only when there are some).
	DetectablePct float64 `json:"detectable_pct,omitempty"`
	// Unreachable counts gated tests whose repeats can never reach their
	// level (one pair; a counter's range test on too few repeats).
	Unreachable int `json:"unreachable"`
	// Blocks, under a sequential design, is the most blocks a gated
	// verdict of the commit rested on.
	Blocks int `json:"blocks,omitzero"`
}

// MarshalJSON leaves the detectable change out when no gated verdict
// is unknown.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	if s.GatedUnknown == 0 {
		s.DetectablePct = math.NaN()
	}
	return marshalJSON(plain(s))
}

// CellNote is a failed or saturated cell.
type CellNote struct {
	Cell   string         `json:"cell"`
	Status results.Status `json:"status"`
	Error  string         `json:"error,omitempty"`
	Tail   []string       `json:"log_tail,omitempty"`
}

// Report is the analysis, rendered by WriteMarkdown, WriteJSON and
// WriteBench.
type Report struct {
	// Plan is the plan without its cell list (cells.jsonl and plan.json
	// have it); PlannedCells counts them.
	Plan         *results.Plan `json:"plan"`
	PlannedCells int           `json:"planned_cells"`
	Dirs         []string      `json:"dirs"`
	Baseline     string        `json:"baseline"`
	Alpha        float64       `json:"alpha"`
	// Bar is where the bars came from (Options.Bar).
	Bar Bar `json:"bar"`
	// Sequential is the adaptive design the run was judged under, when
	// there was one.
	Sequential *Sequential `json:"sequential,omitempty"`
	Commits    []string    `json:"commits"`
	Metrics    []string    `json:"metrics"`
	// Incomplete comes first: where the run could not answer.
	Incomplete []Incomplete `json:"incomplete"`
	Summaries  []Summary    `json:"summaries"`
	Rows       []Row        `json:"rows"`
	// Sweeps are the plan's series of rate and variable points (sweeps).
	Sweeps []Sweep `json:"sweeps,omitempty"`
	// ServerDiffs are the settings in which the commits' servers differ
	// (serverDiffs); servers is what each ran with (servers.json).
	ServerDiffs []ServerDiff `json:"server_diffs,omitempty"`
	servers     results.Servers
	// Conditions are the configurations held under a condition, beside
	// the same without one (underConditions).
	Conditions []UnderCondition `json:"conditions,omitempty"`
	// WaitShifts are the wait events whose share moved (waitShifts).
	WaitShifts []WaitShift `json:"wait_shifts,omitempty"`
	Tiers      []Tier      `json:"tiers"`
	// Noise are the configurations' variance components of their
	// primary (within a cell, between cells, between a block's two
	// cells): where the noise is, and what run would answer sooner.
	// The within-cell part is the same whatever the format: records
	// read without their progress keep its summary.
	Noise    []Components `json:"noise,omitempty"`
	Changes  []Change     `json:"changes"`
	Geomeans []Geomean    `json:"geomeans"`
	// Regressions are the gated changes for the worse (and, for a
	// descriptive metric gated with Options.Gate, any called change).
	Regressions []Change   `json:"regressions"`
	Failed      []CellNote `json:"failed"`
	Saturated   []CellNote `json:"saturated"`
	// Unanswered says, per commit, which primary answers were unknown,
	// and what would answer them (Gate's ErrUnanswered).
	Unanswered []string `json:"unanswered,omitempty"`
	// AA describes the noise floor when two arms share one build.
	AA *AA `json:"aa,omitempty"`
	// TimeWent compares the cells' CPU profiles (matrix --perf).
	TimeWent []TimeWent `json:"time_went,omitempty"`
	Warnings []string   `json:"warnings"`
	Plots    []string   `json:"plots,omitempty"`
	// PlotNotes say which plots WritePlots did not draw, and why.
	PlotNotes []string `json:"plot_notes,omitempty"`

	// Observer is what measuring the cells cost (nil when no cell
	// recorded it).
	Observer *ObserverCost `json:"observer,omitempty"`

	// Instructions compares the instruction cells (matrix --instructions).
	Instructions []InstrWent `json:"instructions,omitempty"`

	// Trend is a nightly report's trend over the past nights (the
	// nightly sets it); WriteMarkdown ends with it.
	Trend *TrendSection `json:"-"`

	records   []results.Record
	undecided []string
	ids       *configIDs // the configurations' IDs, remembered (configID)
}

// Line is the change as a night lists it: "config metric -x.xx%".
func (c Change) Line() string {
	return fmt.Sprintf("%s %s %+.2f%%", c.Config, c.Metric, c.DeltaPct)
}

// Undecided lists the configurations (IDs) where some gated test is
// unknown and another look of the sequential design could decide it: the
// matrix gives each Sequential.Step more blocks and analyses again. Empty
// without Options.Sequential, and once every configuration is decided or
// at MaxRepeats.
func (r *Report) Undecided() []string { return r.undecided }

// Line is the run-level answer as the summaries print it.
func (g Geomean) Line(alpha float64) string {
	s := fmt.Sprintf("run-level %s: geometric mean ×%.4f (%s, 95%% CI %s … %s) over %d configurations: %s",
		g.Metric, g.Ratio, pct(100*(g.Ratio-1)), pct(100*(g.Lo-1)), pct(100*(g.Hi-1)), g.Configs, g.Verdict)
	bar := barText(g.MinEffectPct, g.Bar)
	level := g.DecidePct
	if level == 0 { // a Geomean from before DecidePct
		level = 100 * (1 - 2*EquivalenceAlpha(alpha))
	}
	switch g.Verdict {
	case results.Better, results.Worse:
		s += fmt.Sprintf(" (%s, beyond %s)", pIs(g.P), bar)
	case results.Same:
		s += fmt.Sprintf(" (its %.0f%% interval %s … %s lies within %s)", level, pct(100*(g.DecideLo-1)), pct(100*(g.DecideHi-1)), bar)
	case results.Unknown:
		s += " ("
		if !math.IsInf(g.DetectablePct, 0) && g.DetectablePct > 0 {
			s += cannotDetect(g.DetectablePct) + "; "
		}
		s += "neither a change nor within " + bar
		if lo, hi := g.DecideLo, g.DecideHi; !math.IsInf(lo, 0) && !math.IsInf(hi, 0) && !math.IsNaN(lo) && !math.IsNaN(hi) {
			s += fmt.Sprintf(": its %.0f%% interval is %s … %s", level, pct(100*(lo-1)), pct(100*(hi-1)))
		}
		if g.NeedRepeats > 0 {
			s += fmt.Sprintf("; needs r ≥ %d or a quieter host: abtest doctor", g.NeedRepeats)
		}
		s += ")"
	}
	return s
}
