// Package analysis turns result directories into verdicts: per
// configuration and metric, the median of every commit with a
// distribution-free confidence interval (golang.org/x/perf/benchmath,
// what benchstat uses) and the change against the baseline.
//
// Verdicts (results.Verdict), per commit × configuration × metric:
// better/worse when significant and beyond the metric's minimum effect;
// same when the change's 1−2α interval lies within ±that effect;
// unknown otherwise, with the smallest change this run could have
// detected; incomplete when fewer repeats than planned are usable
// (failed, saturated, absent, metric missing or not a measurement),
// which gates (Report.Gate). When the interleaved blocks are complete,
// the two cells of a block are a pair: a paired t test of the per-pair
// log ratios, the change their geometric mean; otherwise the unpaired
// U-test is shown. Per commit, one family at α (issue 21): each primary
// metric (Options.Primary; tps, instructions_per_tx) is tested over all
// configurations at once (the run-level answer, Report.Geomeans) and in
// each, and the other gated metrics only behind their configuration's
// primary (a graph of Bretz et al., hierarchy); a sequential design
// (Options.Sequential) spends α over its looks. Counters within their
// band are compared, event counts tested by their rates, report-only
// and descriptive metrics say higher/lower in a family of their own.
// Tiers come from the declarations (seed 001): measured noise raises a
// metric's bar and never switches its gate off.
//
// It reads only result files (plan.json, cells.jsonl), so results copied
// from another host, shards, and resumed runs all analyse the same way.
package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pgabtest/abtest/results"

	"golang.org/x/perf/benchmath"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// Options shape the analysis.
type Options struct {
	// Baseline is the commit label compared against; empty means the
	// plan's first commit.
	Baseline string
	// Alpha is the family-wise significance level per commit, over all
	// its gated tests and every look; zero means 0.01.
	Alpha float64
	// Thresholds override metrics' minimum effects, in percent.
	Thresholds map[string]float64
	// Metrics limits the metrics analysed; empty means every metric the
	// cells carry.
	Metrics []string
	// Gate names metrics to gate although they are descriptive or
	// declared report-only (--gate).
	Gate []string
	// Primary names the primary metrics (--primary): each configuration's
	// gate asks first whether they changed, and the other gated metrics
	// are tested behind them. Empty means DefaultPrimary: tps for timed
	// cells, instructions_per_tx for instruction cells.
	Primary []string
	// Sequential, when Step > 0, judges the run as a sequential design
	// (--until-decided): a look at the plan's repeats, then one every
	// Step blocks up to MaxRepeats, with α spent across the looks.
	Sequential Sequential
}

// DefaultPrimary is the primary metric of a configuration when
// Options.Primary names none: the first of these its cells have.
var DefaultPrimary = []string{results.MetricTPS, results.MetricInstructionsPerTx}

// Sequential is the adaptive design of --until-decided. The matrix runs
// the planned repeats, calls Analyze with the same Sequential after each
// batch, and gives Step more blocks to each configuration of
// Report.Undecided() until that is empty or the budget is spent.
type Sequential struct {
	// Step is the number of blocks each extra look adds.
	Step int `json:"step"`
	// MaxRepeats is the most repeats a configuration may reach.
	MaxRepeats int `json:"max_repeats"`
}

// Input is one or more merged result directories.
type Input struct {
	Dirs     []string
	Plan     *results.Plan
	Records  []results.Record
	Warnings []string
}

// ErrPlansDiffer: result directories of different plans cannot merge.
var ErrPlansDiffer = errors.New("analysis: plans differ")

// Load reads and merges result directories (shards of one plan, or a run
// and its resumption). Plans must agree on everything but the shard.
func Load(dirs ...string) (*Input, error) {
	if len(dirs) == 0 {
		return nil, exitcode.BadInputf("analyze: give at least one results directory")
	}
	shards := make([]Shard, 0, len(dirs))
	for _, d := range dirs {
		p, err := results.ReadPlan(d)
		if err != nil {
			return nil, err
		}
		recs, warnings, err := results.ReadRecords(d)
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		shards = append(shards, Shard{Dir: d, Plan: p, Records: recs, Warnings: warnings})
	}
	return Merge(shards)
}

// Shard is one results directory's plan and records, read from its files
// (Load) or rebuilt from a results store.
type Shard struct {
	Dir      string
	Plan     *results.Plan
	Records  []results.Record
	Warnings []string
}

// Merge merges the shards of one plan (or a run and its resumption) into
// one input: plans must agree on everything but the shard; a cell in
// several shards counts once, from the first. Shards that ran on
// different kinds of host are said to have.
func Merge(shards []Shard) (*Input, error) {
	if len(shards) == 0 {
		return nil, exitcode.BadInputf("analyze: give at least one results directory")
	}
	in := &Input{}
	seen := map[string]bool{}
	var names []string
	for _, sh := range shards {
		p := sh.Plan
		if in.Plan == nil {
			first := *p
			in.Plan = &first
		} else {
			a, b := *in.Plan, *p
			a.Shard, b.Shard = "", ""
			if diff := results.Diff(&a, &b); len(diff) > 0 {
				return nil, exitcode.BadInputf("%w: %s and %s are not shards of one plan (%s)", ErrPlansDiffer, shards[0].Dir, sh.Dir, strings.Join(diff, "; "))
			}
			in.Plan.Configs = mergeConfigs(in.Plan.Configs, p.Configs)
			in.Plan.Cells = append(in.Plan.Cells[:len(in.Plan.Cells):len(in.Plan.Cells)], p.Cells...)
		}
		in.Dirs = append(in.Dirs, sh.Dir)
		names = append(names, p.Shard)
		in.Warnings = append(in.Warnings, sh.Warnings...)
		for _, r := range sh.Records {
			if seen[r.Cell] {
				continue
			}
			seen[r.Cell] = true
			in.Records = append(in.Records, r)
		}
	}
	if len(shards) > 1 {
		in.Plan.Shard = strings.Join(names, "+")
	}
	in.dropUnplanned()
	if w := mixedHosts(shards); w != "" {
		in.Warnings = append(in.Warnings, w)
	}
	if missing := len(in.Plan.Cells) - len(in.Records); missing > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d of %d planned cells have no result (interrupted run or missing shard?)", missing, len(in.Plan.Cells)))
	}
	return in, nil
}

// dropUnplanned ignores, with a warning, records of cells the plan does
// not have (a hand-edited or foreign cells.jsonl): counted, they made
// "7 of 6 cells recorded". A plan without its cell list keeps them all.
func (in *Input) dropUnplanned() {
	if len(in.Plan.Cells) == 0 {
		return
	}
	planned := make(map[string]bool, len(in.Plan.Cells))
	for _, c := range in.Plan.Cells {
		planned[c.ID] = true
	}
	kept := in.Records[:0]
	var unknown []string
	for _, r := range in.Records {
		if planned[r.Cell] {
			kept = append(kept, r)
		} else {
			unknown = append(unknown, r.Cell)
		}
	}
	in.Records = kept
	if len(unknown) > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d record(s) of cells not in the plan ignored (first: %s)", len(unknown), unknown[0]))
	}
}

func mergeConfigs(a, b []results.Config) []results.Config {
	have := map[string]bool{}
	for _, c := range a {
		have[c.ID()] = true
	}
	for _, c := range b {
		if !have[c.ID()] {
			a = append(a, c)
		}
	}
	return a
}

// Stat is one commit's numbers for one metric in one configuration.
type Stat struct {
	Commit string `json:"commit"`
	N      int    `json:"n"`
	// Values are the cells' values (not in the JSON: cells.jsonl has
	// them, and at 100 000 cells they would dominate the report).
	Values []float64 `json:"-"`
	Median float64   `json:"-"`
	// Lo and Hi bound the 95 % confidence interval of the median; they
	// are ±Inf (null in JSON) when there are too few values for one.
	Lo float64 `json:"-"`
	Hi float64 `json:"-"`
	// DeltaPct is the change against the baseline in percent: the
	// geometric mean of the pairs' ratios when the blocks are complete
	// (the t test's estimate), the ratio of medians otherwise; DeltaLo
	// and DeltaHi bound it at 95 %.
	DeltaPct float64 `json:"-"`
	DeltaLo  float64 `json:"-"`
	DeltaHi  float64 `json:"-"`
	// DecideLo and DecideHi bound the change at 1−2α: same is decided on
	// it (the two one-sided tests of equivalence at α each).
	DecideLo float64 `json:"-"`
	DecideHi float64 `json:"-"`
	// DeltaAbs is the mean difference in the metric's unit where the
	// baseline is 0 and a change in percent has no size.
	DeltaAbs float64 `json:"delta_abs,omitempty"`
	// P is the test's raw p-value (NaN for exact and baseline rows).
	P float64 `json:"-"`
	// Method is how the verdict was reached: "paired", "unpaired",
	// "exact", "as tps".
	Method string `json:"method,omitempty"`
	// MinEffectPct is the bar a change must pass: max(threshold, noise).
	MinEffectPct float64 `json:"-"`
	// DetectablePct is the smallest regression this number of pairs and
	// this noise had 80 % power to call at the test's level (set for
	// every paired test; the report shows it for unknown verdicts).
	DetectablePct float64 `json:"-"`
	// Look is the look (1-based) the verdict was reached at, and Blocks,
	// under a sequential design (--until-decided), how many interleaved
	// blocks (pairs) it rests on: what the run needed to decide.
	Look    int             `json:"look,omitempty"`
	Blocks  int             `json:"blocks,omitempty"`
	Verdict results.Verdict `json:"verdict"`
	Gated   bool            `json:"gated"`
	// Behind: a secondary gated metric left untested because its
	// configuration's primary did not change (its verdict is unknown;
	// it is counted apart, as Summary.Behind).
	Behind bool `json:"behind_primary,omitempty"`
	// Note explains the verdict when it needs it.
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes every number that is not finite as null, and says
// why in "undefined".
func (s Stat) MarshalJSON() ([]byte, error) {
	type plain Stat
	und := map[string]string{}
	f := func(name string, x float64, why string) *float64 {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			if why != "" {
				und[name] = why
			}
			return nil
		}
		return &x
	}
	base := s.Verdict == results.VerdictBaseline
	ciWhy := ""
	if s.N > 0 {
		ciWhy = fmt.Sprintf("%d values are too few for a 95%% interval", s.N)
	}
	deltaWhy, dciWhy, pWhy, mdeWhy := "", "", "", ""
	if !base && s.N > 0 {
		deltaWhy = "the baseline's median is 0: the change has no size"
		dciWhy = "too few pairs for an interval at this level, or no pairs"
		if s.Method == "exact" {
			dciWhy, pWhy = "", ""
		} else {
			pWhy = "not tested"
		}
		if s.Verdict == results.Unknown {
			mdeWhy = fmt.Sprintf("%d pairs, or a secondary never given α: no change of any size could have been called", s.N)
		}
	}
	var mde *float64
	if s.Verdict == results.Unknown {
		mde = f("detectable_pct", s.DetectablePct, mdeWhy)
	}
	var minEffect *float64
	if !base && s.Verdict != results.Incomplete {
		minEffect = f("min_effect_pct", s.MinEffectPct, "the baseline varied around a median of 0")
	}
	out := struct {
		plain
		Median        *float64          `json:"median"`
		Lo            *float64          `json:"ci_lo"`
		Hi            *float64          `json:"ci_hi"`
		DeltaPct      *float64          `json:"delta_pct,omitempty"`
		DeltaLo       *float64          `json:"delta_lo_pct,omitempty"`
		DeltaHi       *float64          `json:"delta_hi_pct,omitempty"`
		DecideLo      *float64          `json:"decide_lo_pct,omitempty"`
		DecideHi      *float64          `json:"decide_hi_pct,omitempty"`
		P             *float64          `json:"p,omitempty"`
		MinEffectPct  *float64          `json:"min_effect_pct,omitempty"`
		DetectablePct *float64          `json:"detectable_pct,omitempty"`
		Undefined     map[string]string `json:"undefined,omitempty"`
	}{plain: plain(s), Median: f("median", s.Median, "no values"), Lo: f("ci_lo", s.Lo, ciWhy), Hi: f("ci_hi", s.Hi, ciWhy),
		MinEffectPct: minEffect, DetectablePct: mde}
	if !base && s.N > 0 {
		out.DeltaPct = f("delta_pct", s.DeltaPct, deltaWhy)
		out.DeltaLo = f("delta_lo_pct", s.DeltaLo, dciWhy)
		out.DeltaHi = f("delta_hi_pct", s.DeltaHi, dciWhy)
		out.DecideLo = f("decide_lo_pct", s.DecideLo, "")
		out.DecideHi = f("decide_hi_pct", s.DecideHi, "")
		out.P = f("p", s.P, pWhy)
	}
	if len(und) > 0 {
		out.Undefined = und
	}
	return json.Marshal(out)
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

// MarshalJSON writes an infinite change (from a zero baseline) or an
// undefined p (an exact comparison) as null.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	return json.Marshal(struct {
		plain
		DeltaPct *float64 `json:"delta_pct"`
		P        *float64 `json:"p"`
	}{plain(c), Finite(c.DeltaPct), Finite(c.P)})
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
// 1−2α one that same is decided on.
type Geomean struct {
	Commit   string  `json:"commit"`
	Metric   string  `json:"metric"`
	Ratio    float64 `json:"ratio"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	DecideLo float64 `json:"decide_lo"`
	DecideHi float64 `json:"decide_hi"`
	Configs  int     `json:"configs"`
	// P is the pooled test's p-value; Verdict its answer (better, worse,
	// same or unknown), at the bar MinEffectPct (the mean of the
	// configurations' bars).
	P            float64         `json:"p"`
	Verdict      results.Verdict `json:"verdict"`
	MinEffectPct float64         `json:"min_effect_pct"`
	// DetectablePct is the change it had 80 % power to call, and
	// NeedRepeats the repeats it would need for that to be MinEffectPct
	// (set when the verdict is unknown).
	DetectablePct float64 `json:"-"`
	NeedRepeats   int     `json:"need_repeats,omitempty"`
	Look          int     `json:"look,omitempty"`
}

// MarshalJSON writes non-finite numbers as null.
func (g Geomean) MarshalJSON() ([]byte, error) {
	type plain Geomean
	return json.Marshal(struct {
		plain
		Ratio         *float64 `json:"ratio"`
		Lo            *float64 `json:"lo"`
		Hi            *float64 `json:"hi"`
		DecideLo      *float64 `json:"decide_lo"`
		DecideHi      *float64 `json:"decide_hi"`
		P             *float64 `json:"p"`
		DetectablePct *float64 `json:"detectable_pct,omitempty"`
	}{plain(g), Finite(g.Ratio), Finite(g.Lo), Finite(g.Hi), Finite(g.DecideLo), Finite(g.DecideHi), Finite(g.P), Finite(g.DetectablePct)})
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
	NoChangePct float64 `json:"no_change_pct,omitempty"`
	// DetectablePct is the largest smallest-detectable change over the
	// gated unknown verdicts: changes below it could have been missed.
	DetectablePct float64 `json:"-"`
	// Unreachable counts gated tests whose repeats can never reach their
	// level (one pair; a counter's range test on too few repeats).
	Unreachable int `json:"unreachable"`
	// Blocks, under a sequential design, is the most blocks a gated
	// verdict of the commit rested on.
	Blocks int `json:"blocks,omitempty"`
}

// MarshalJSON writes an infinite detectable change as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	var d *float64
	if s.GatedUnknown > 0 {
		d = Finite(s.DetectablePct)
	}
	return json.Marshal(struct {
		plain
		DetectablePct *float64 `json:"detectable_pct,omitempty"`
	}{plain(s), d})
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
	// Sequential is the adaptive design the run was judged under, when
	// there was one.
	Sequential *Sequential `json:"sequential,omitempty"`
	Commits    []string    `json:"commits"`
	Metrics    []string    `json:"metrics"`
	// Incomplete comes first: where the run could not answer.
	Incomplete []Incomplete `json:"incomplete"`
	Summaries  []Summary    `json:"summaries"`
	Rows       []Row        `json:"rows"`
	Tiers      []Tier       `json:"tiers"`
	Changes    []Change     `json:"changes"`
	Geomeans   []Geomean    `json:"geomeans"`
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

	// Instructions compares the instruction cells (matrix --instructions).
	Instructions []InstrWent `json:"instructions,omitempty"`

	records   []results.Record
	undecided []string
}

// AA is what an A/A run (two arms of one build) says about noise.
type AA struct {
	Arms []string `json:"arms"`
	// MaxDeltaPct is the largest |Δ| of TPS between the arms.
	MaxDeltaPct float64 `json:"max_delta_pct"`
	// DetectablePct is the smallest TPS change this run could have
	// called in its least precise configuration.
	DetectablePct float64 `json:"-"`
	Note          string  `json:"note"`
}

// MarshalJSON writes an infinite detectable change as null.
func (a AA) MarshalJSON() ([]byte, error) {
	type plain AA
	return json.Marshal(struct {
		plain
		DetectablePct *float64 `json:"detectable_pct"`
	}{plain(a), Finite(a.DetectablePct)})
}

// Errors of Gate, for errors.Is.
var (
	// ErrRegression: a gated metric got worse (exit 1).
	ErrRegression = errors.New("analysis: regression")
	// ErrIncomplete: the run could not answer for some gated
	// configuration (exit 3).
	ErrIncomplete = errors.New("analysis: incomplete")
	// ErrUnanswered: every cell is there, but the primary's answer is
	// unknown: the run could not have seen a regression of the size
	// asked about (exit 3; --allow-unknown accepts it).
	ErrUnanswered = errors.New("analysis: could not answer")
)

// Gate is the run's answer as an error, for --fail-on-regression and
// nightly: nil when the primary answered and no gated test regressed;
// an ErrRegression with exit code 1 when a gated metric got worse (a
// regression is an answer, so it wins); an ErrIncomplete with exit code
// 3 when cells, repeats or a gated metric are missing, failed or
// saturated; an ErrUnanswered with exit code 3 when a primary's
// run-level answer (its pooled test, or the configuration's own where
// it has none) is unknown.
func (r *Report) Gate() error {
	if len(r.Regressions) > 0 {
		var names []string
		for _, c := range r.Regressions {
			names = append(names, fmt.Sprintf("%s %s %s %s", c.Commit, c.Config, c.Metric, pct(c.DeltaPct)))
		}
		return exitcode.Regressed(fmt.Errorf("%w: %d in gated metrics: %s", ErrRegression, len(names), strings.Join(names, "; ")))
	}
	var names []string
	for _, in := range r.Incomplete {
		if in.Gated {
			n := strings.TrimSpace(in.Commit + " " + in.Config)
			if in.Metric != "" {
				n += " " + in.Metric
			}
			names = append(names, fmt.Sprintf("%s (%d of %d: %s)", n, in.Usable, in.Planned, in.Why))
		}
	}
	if len(names) > 0 {
		return exitcode.Failure(fmt.Errorf("%w: the run could not answer for %d: %s", ErrIncomplete, len(names), strings.Join(names, "; ")))
	}
	if len(r.Unanswered) > 0 {
		return exitcode.Failure(fmt.Errorf("%w: %s", ErrUnanswered, strings.Join(r.Unanswered, "; ")))
	}
	return nil
}

// GateStatus names a night by its report's gate (Report.Gate): a
// regression (exit 1), unanswered when the primary's answer was unknown,
// failed when the run could not answer for missing cells (exit 3, never
// a baseline), else ok. Nightly and the store both call it, so a night's
// status is the one rule.
func GateStatus(gate error) results.GateStatus {
	switch {
	case gate == nil:
		return results.GateOK
	case errors.Is(gate, ErrRegression):
		return results.GateRegression
	case errors.Is(gate, ErrUnanswered):
		return results.GateUnanswered
	}
	return results.GateFailed
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

// group is one commit's cells in one configuration.
type group struct {
	planned           int
	usable            map[int]*results.Record // by repeat
	failed, saturated int
}

// Analyze computes the report.
func Analyze(in *Input, o Options) (*Report, error) {
	a, err := newAnalyzer(in, o)
	if err != nil {
		return nil, err
	}
	a.groupCells()
	a.chooseMetrics()
	a.choosePrimary()
	a.findIncomplete()
	a.measureTiers()
	a.planTests()
	for _, c := range a.r.Commits {
		a.decideCommit(c)
	}
	a.finish()
	return a.r, nil
}

// analyzer carries Analyze's state from one step to the next.
type analyzer struct {
	in *Input
	o  Options
	p  *results.Plan
	r  *Report
	d  design

	configs []string
	groups  map[string]map[string]*group // config → commit
	ids     map[string]string            // a configuration's settings key → ID, to spare fmt at 10⁵ cells
	present map[string]bool              // metrics with a valid value in some usable cell
	// positive: metrics whose values must be > 0 (results.Metric.Positive)
	positive map[string]bool
	// invalid counts, per metric, the usable cells whose value was not
	// a measurement (null, zero where impossible, non-finite).
	invalid map[string]int
	// primary: the primary metric(s) of each configuration.
	primary map[string][]string
	cellWhy map[string]map[string]string // config → commit → why

	tiers     map[string]Tier
	minEffect map[string]map[string]float64 // metric → config → percent

	rowIdx    map[[2]string]int // config, metric → index in r.Rows
	byCommit  map[string][]*cellTest
	undecided map[string]bool // configs
	pools     []*test         // the commit being decided's pooled tests
}

// covered reports whether a primary test is part of a pooled test: the
// pooled one then answers for it.
func (a *analyzer) covered(t *test) bool {
	for _, p := range a.pools {
		if slices.Contains(p.parts, t) {
			return true
		}
	}
	return false
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

// declaredGated reports whether a metric gates by its declaration or
// the options, whatever its measured tier: a metric missing from the
// baseline has no spread to measure, and must not thereby stop gating
// (tps absent from the baseline's cells exited 0).
func (a *analyzer) declaredGated(m string) bool {
	def, _ := a.p.Metrics.Get(m)
	return contains(a.o.Gate, m) || contains(a.o.Primary, m) || def.Direction != results.Descriptive && def.Tier != results.TierReport
}

// poolDecided reports whether a pooled test covering t was decided.
func (a *analyzer) poolDecided(t *test) bool {
	for _, p := range a.pools {
		if slices.Contains(p.parts, t) && p.verdict != results.Unknown {
			return true
		}
	}
	return false
}

// unit is a metric's unit.
func (a *analyzer) unit(m string) string {
	def, _ := a.p.Metrics.Get(m)
	return def.Unit
}

// cellTest is one test of a commit × configuration × metric, and the
// Stat its verdict goes to.
type cellTest struct {
	t     *test
	row   int
	stat  int
	exact bool
	// observed: exact only because the baseline never varied here (the
	// metric is declared banded).
	observed bool
	gated    bool
	mirror   string
	metric   string
	// answer: the test answers the run's question (a primary metric);
	// count: an event count, judged by a rate test.
	answer, count bool
}

// newAnalyzer checks the options against the plan and starts the report.
func newAnalyzer(in *Input, o Options) (*analyzer, error) {
	p := in.Plan
	if o.Alpha == 0 {
		o.Alpha = 0.01
	}
	if o.Alpha <= 0 || o.Alpha >= 1 {
		return nil, exitcode.BadInputf("--alpha %v: want a level between 0 and 1, e.g. 0.01", o.Alpha)
	}
	plan := *p
	plan.Cells = nil
	r := &Report{Plan: &plan, PlannedCells: len(p.Cells), Dirs: in.Dirs, Alpha: o.Alpha, Warnings: append([]string(nil), in.Warnings...), records: in.Records}
	r.Commits = p.Labels()
	r.Baseline = o.Baseline
	if r.Baseline == "" {
		r.Baseline = p.Baseline
	}
	if !contains(r.Commits, r.Baseline) {
		return nil, exitcode.BadInputf("--baseline %q: the plan's commits are %s", r.Baseline, strings.Join(r.Commits, ", "))
	}
	for name := range o.Thresholds {
		if _, ok := p.Metrics.Get(name); !ok {
			return nil, exitcode.BadInputf("--threshold %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
	}
	if err := CheckMetrics(p, o); err != nil {
		return nil, err
	}
	a := &analyzer{in: in, o: o, p: p, r: r, d: design{alpha: o.Alpha, r0: p.Options.Repeats}, undecided: map[string]bool{}}
	if err := a.sequentialDesign(); err != nil {
		return nil, err
	}
	return a, nil
}

// CheckMetrics refuses a --gate or --primary metric the plan does not
// define, and a descriptive --primary (it has no better or worse): the
// one rule, for Analyze and for a run before anything starts.
func CheckMetrics(p *results.Plan, o Options) error {
	for _, name := range o.Gate {
		if _, ok := p.Metrics.Get(name); !ok {
			return exitcode.BadInputf("--gate %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
	}
	for _, name := range o.Primary {
		def, ok := p.Metrics.Get(name)
		if !ok {
			return exitcode.BadInputf("--primary %s: unknown metric; known: %s", name, strings.Join(p.Metrics.Names(), ", "))
		}
		if def.Direction == results.Descriptive {
			return exitcode.BadInputf("--primary %s: a descriptive metric has no better or worse; choose one with a direction", name)
		}
	}
	return nil
}

// sequentialDesign sets the design of --until-decided, from the options
// or, when they have none, from the plan.
func (a *analyzer) sequentialDesign() error {
	p := a.p
	if a.o.Sequential == (Sequential{}) && p.Options.UntilDecided {
		// The plan says how the run looked: UntilStep extra blocks per
		// look (1 before it was recorded), so a re-analysis spends α as
		// the run did.
		a.o.Sequential = Sequential{Step: max(1, p.Options.UntilStep), MaxRepeats: p.Options.MaxRepeats}
		if a.o.Sequential.MaxRepeats == 0 {
			a.o.Sequential.MaxRepeats = 2 * p.Options.Repeats
		}
	}
	if s := a.o.Sequential; s.Step != 0 || s.MaxRepeats != 0 {
		if s.Step < 1 || s.MaxRepeats < p.Options.Repeats || p.Options.Repeats < 1 {
			return exitcode.BadInputf("--until-decided: step %d, max repeats %d: want a step ≥ 1 and max repeats ≥ the plan's %d", s.Step, s.MaxRepeats, p.Options.Repeats)
		}
		a.d.step, a.d.limit = s.Step, s.MaxRepeats
		a.r.Sequential = &s
	}
	return nil
}

// group returns a commit's group in a configuration, made on first use.
func (a *analyzer) group(cfg, commit string) *group {
	if a.groups[cfg] == nil {
		a.groups[cfg] = map[string]*group{}
	}
	g := a.groups[cfg][commit]
	if g == nil {
		g = &group{usable: map[int]*results.Record{}}
		a.groups[cfg][commit] = g
	}
	return g
}

// configID is c.ID(), remembered by settings.
func (a *analyzer) configID(c results.Config) string {
	k := fmt.Sprint(c.Workload, "\x00", c.Clients, "\x00", c.CPUs, "\x00", c.Settings, "\x00", c.Instructions)
	id, ok := a.ids[k]
	if !ok {
		id = c.ID()
		a.ids[k] = id
	}
	return id
}

// groupCells sorts the planned cells and the records into groups, and
// notes the failed and saturated cells and the metrics present.
func (a *analyzer) groupCells() {
	p, r := a.p, a.r
	a.configs = make([]string, 0, len(p.Configs))
	for _, c := range p.Configs {
		a.configs = append(a.configs, c.ID())
	}
	a.groups = map[string]map[string]*group{}
	a.ids = map[string]string{}
	for i := range p.Cells {
		a.group(a.configID(p.Cells[i].Config), p.Cells[i].Commit).planned++
	}
	a.present, a.positive, a.invalid = map[string]bool{}, map[string]bool{}, map[string]int{}
	for _, m := range p.Metrics {
		a.positive[m.Name] = m.Positive
	}
	for i := range a.in.Records {
		rec := &a.in.Records[i]
		g := a.group(a.configID(rec.Config()), rec.Commit)
		switch {
		case rec.Status != results.StatusOK:
			r.Failed = append(r.Failed, CellNote{Cell: rec.Cell, Status: rec.Status, Error: rec.Error, Tail: rec.LogTail})
			g.failed++
			continue
		case rec.Saturated:
			r.Saturated = append(r.Saturated, CellNote{Cell: rec.Cell, Status: "saturated"})
			g.saturated++
			continue
		}
		g.usable[rec.Repeat] = rec
		for m, v := range rec.Metrics {
			if a.valid(m, v) {
				a.present[m] = true
			} else {
				a.invalid[m]++
			}
		}
	}
	if len(p.Cells) == 0 {
		a.planFromRecords()
	}
}

// planFromRecords plans, for a plan without its cell list (tests,
// hand-made plans), the repeats, or the most any commit has.
func (a *analyzer) planFromRecords() {
	for _, byCommit := range a.groups {
		most := a.p.Options.Repeats
		for _, g := range byCommit {
			most = max(most, len(g.usable)+g.failed+g.saturated)
		}
		for _, c := range a.r.Commits {
			if byCommit[c] == nil {
				byCommit[c] = &group{usable: map[int]*results.Record{}}
			}
			byCommit[c].planned = most
		}
	}
}

// chooseMetrics keeps the plan's metrics that some cell has and the
// options ask for, in the plan's order.
func (a *analyzer) chooseMetrics() {
	for _, m := range a.p.Metrics {
		if a.present[m.Name] && (len(a.o.Metrics) == 0 || contains(a.o.Metrics, m.Name)) {
			a.r.Metrics = append(a.r.Metrics, m.Name)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(a.invalid)) {
		why := "null, non-finite or 0"
		if !a.positive[m] {
			why = "null or non-finite"
		}
		a.r.Warnings = append(a.r.Warnings, fmt.Sprintf("%s was %s in %d usable cell(s): not a measurement, counted as missing", m, why, a.invalid[m]))
	}
}

// choosePrimary names each configuration's primary metrics: the ones
// --primary gave, or the first of tps and instructions_per_tx the
// configuration's cells have. A primary or --gate metric that no usable
// cell has is the run not answering (incomplete, exit 3), never a
// metric silently dropped.
func (a *analyzer) choosePrimary() {
	want := a.o.Primary
	explicit := len(want) > 0
	if !explicit {
		want = DefaultPrimary
	}
	a.primary = map[string][]string{}
	for _, id := range a.configs {
		for _, m := range want {
			has := false
			for _, g := range a.groups[id] {
				if len(a.values(g, m)) > 0 {
					has = true
					break
				}
			}
			if has && contains(a.r.Metrics, m) {
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
			a.noPrimary(id, want)
		}
	}
	if !usable {
		return
	}
	var absent []string
	if explicit {
		absent = append(absent, want...)
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

// findIncomplete notes each commit × configuration whose cells are fewer
// than planned, and the saturation where the baseline held the rate.
func (a *analyzer) findIncomplete() {
	r := a.r
	a.cellWhy = map[string]map[string]string{}
	for _, id := range a.configs {
		base := a.groups[id][r.Baseline]
		for _, c := range r.Commits {
			g := a.groups[id][c]
			if g == nil {
				g = &group{usable: map[int]*results.Record{}}
			}
			why := groupWhy(g)
			if c != r.Baseline && why == "" && base != nil {
				if bw := groupWhy(base); bw != "" {
					why = "baseline " + bw
				}
			}
			if c != r.Baseline && base != nil && g.saturated > 0 && base.saturated == 0 {
				r.Regressions = append(r.Regressions, Change{Commit: c, Config: id, Metric: "rate", DeltaPct: math.NaN(), P: math.NaN(), Verdict: results.Worse, Gated: true,
					Note: fmt.Sprintf("saturated in %d of %d cells where %s held the rate in all", g.saturated, g.planned, r.Baseline)})
			}
			if why == "" {
				continue
			}
			if a.cellWhy[id] == nil {
				a.cellWhy[id] = map[string]string{}
			}
			a.cellWhy[id][c] = why
			r.Incomplete = append(r.Incomplete, Incomplete{Commit: c, Config: id, Usable: len(g.usable), Planned: g.planned, Why: why, Gated: true})
		}
	}
}

// measureTiers gives each metric its tier, pooled over the
// configurations' baseline repeats, and its minimum effect in each
// configuration.
func (a *analyzer) measureTiers() {
	p, r, o := a.p, a.r, a.o
	a.tiers = map[string]Tier{}
	a.minEffect = map[string]map[string]float64{}
	for _, m := range r.Metrics {
		def, _ := p.Metrics.Get(m)
		th := def.ThresholdPct
		if v, ok := o.Thresholds[m]; ok {
			th = v
		}
		var spreads []float64
		a.minEffect[m] = map[string]float64{}
		for _, id := range a.configs {
			vs := a.values(a.groups[id][r.Baseline], m)
			if len(vs) < 2 {
				a.minEffect[m][id] = th
				continue
			}
			s := spreadPct(vs)
			spreads = append(spreads, s)
			a.minEffect[m][id] = math.Max(th, noiseK*s)
		}
		t := measureTier(def, contains(o.Gate, m) || contains(o.Primary, m), th, spreads)
		if t.Tier == results.TierExact {
			// A counter's bar is its threshold: a varying baseline is
			// weighed by its range (measureRange) in the commit's
			// family (one failed transaction in a
			// baseline cell made failed_tx's noise bar infinite, and 5 000
			// failures a cell passed).
			for id := range a.minEffect[m] {
				a.minEffect[m][id] = th
			}
		}
		a.tiers[m] = t
		r.Tiers = append(r.Tiers, t)
	}
}

// planTests makes the rows, one per configuration × metric that has
// values, and one test per commit × configuration × metric.
func (a *analyzer) planTests() {
	a.rowIdx = map[[2]string]int{}
	a.byCommit = map[string][]*cellTest{}
	for _, id := range a.configs {
		for _, m := range a.r.Metrics {
			a.planRow(id, m)
		}
	}
}

// rowInputs is what the commits of one row share.
type rowInputs struct {
	id, m string
	def   results.Metric
	tier  Tier
	bg    *group
	base  []float64
}

// planRow makes the row of a configuration and metric, if any commit has
// values there.
func (a *analyzer) planRow(id, m string) {
	expected := false
	for _, c := range a.r.Commits {
		if len(a.values(a.groups[id][c], m)) > 0 {
			expected = true
		}
	}
	if !expected {
		return
	}
	def, _ := a.p.Metrics.Get(m)
	bg := a.groups[id][a.r.Baseline]
	in := &rowInputs{id: id, m: m, def: def, tier: a.tiers[m], bg: bg, base: a.values(bg, m)}
	row := Row{Config: id, Metric: m}
	for _, c := range a.r.Commits {
		st, ct := a.planStat(in, c, len(row.Stats))
		if ct != nil {
			a.byCommit[c] = append(a.byCommit[c], ct)
		}
		row.Stats = append(row.Stats, st)
	}
	a.rowIdx[[2]string{id, m}] = len(a.r.Rows)
	a.r.Rows = append(a.r.Rows, row)
}

// planStat makes a commit's Stat in a row: the median and its interval,
// and either the verdict (baseline, incomplete) or the test to decide it.
func (a *analyzer) planStat(in *rowInputs, c string, stat int) (Stat, *cellTest) {
	g := a.groups[in.id][c]
	vs := a.values(g, in.m)
	st := Stat{Commit: c, N: len(vs), Values: vs, Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN(),
		DeltaPct: math.NaN(), DeltaLo: math.NaN(), DeltaHi: math.NaN(), DecideLo: math.NaN(), DecideHi: math.NaN(), P: math.NaN(), Gated: in.tier.Gated && c != a.r.Baseline}
	if len(vs) > 0 {
		s := benchmath.NewSample(append([]float64(nil), vs...), &benchmath.Thresholds{CompareAlpha: a.o.Alpha})
		sum := benchmath.AssumeNothing.Summary(s, 0.95)
		st.Median, st.Lo, st.Hi = sum.Center, sum.Lo, sum.Hi
	}
	if c == a.r.Baseline {
		st.Verdict = results.VerdictBaseline
		return st, nil
	}
	isPrimary := contains(a.primary[in.id], in.m)
	aroundZero := in.tier.Tier == results.TierBand && math.IsInf(a.minEffect[in.m][in.id], 1) && !isPrimary
	if isPrimary {
		// The primary always gates: its answer is the run's.
		st.Gated = true
	}
	if aroundZero {
		// The baseline varied around a median of 0 here (sporadic WAL
		// of a read-only workload): reported, not gated, in this
		// configuration, whatever the metric's tier.
		st.Gated = false
	}
	why := a.metricMissing(in, c, g, vs)
	if why == "" {
		why = a.methodsDiffer(in, c, g, len(vs))
	}
	if len(vs) > 0 && len(in.base) > 0 {
		bs := append([]float64(nil), in.base...)
		slices.Sort(bs)
		st.DeltaPct = deltaPct(median(bs), st.Median)
	}
	if why != "" {
		a.judgeIncomplete(&st, in, vs, why)
		return st, nil
	}
	// Complete: every repeat of both commits is usable, so the blocks
	// pair.
	pb, pc := a.pairs(in.bg, g, in.m)
	ct := &cellTest{row: len(a.r.Rows), stat: stat, gated: st.Gated, metric: in.m, exact: in.tier.Tier == results.TierExact, observed: in.def.Tier != results.TierExact}
	me := a.minEffect[in.m][in.id]
	if ct.exact && !in.def.Count {
		ct.t = newTest(in.def, me, in.base, vs, false)
	} else {
		paired := len(pb) == len(in.base) && len(pc) == len(vs)
		if paired {
			ct.t = newTest(in.def, me, pb, pc, true)
		} else {
			ct.t = newTest(in.def, me, in.base, vs, false)
		}
	}
	if in.def.SameAs != "" && contains(a.r.Metrics, in.def.SameAs) && a.tiers[in.def.SameAs].Gated == in.tier.Gated {
		ct.mirror = in.def.SameAs
	}
	ct.t.cfg, ct.count = in.id, in.def.Count
	if aroundZero {
		ct.t.minEffect = in.def.ThresholdPct
	}
	switch {
	case isPrimary:
		ct.t.role, ct.answer = primary, true
	case !in.tier.Gated:
		ct.t.role = reportOnly
	case in.def.Count:
		// Events are their own question (a build that fails 5 % of its
		// transactions is worse whatever its TPS): a primary's share
		// of α, taken only when some cell had an event.
		ct.t.role = primary
	}
	return st, ct
}

// metricMissing says why a commit's cells in a configuration cannot be
// tested for a metric: the cells are incomplete, or complete but some
// lack the metric (which it adds to the report's incomplete list); ""
// when they can.
func (a *analyzer) metricMissing(in *rowInputs, c string, g *group, vs []float64) string {
	why := a.cellWhy[in.id][c]
	if why == "" && g != nil && len(vs) < len(g.usable) {
		why = fmt.Sprintf("%s missing in %d of %d cells", in.m, len(g.usable)-len(vs), len(g.usable))
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: len(vs), Planned: g.planned, Why: why, Gated: a.declaredGated(in.m)})
	}
	if why == "" && in.bg != nil && len(in.base) < len(in.bg.usable) {
		why = fmt.Sprintf("%s missing in %d of %d baseline cells", in.m, len(in.bg.usable)-len(in.base), len(in.bg.usable))
		a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: len(vs), Planned: g.planned, Why: why, Gated: a.declaredGated(in.m)})
	}
	return why
}

// methodsDiffer refuses to compare a metric that depends on how it was
// measured (results.Metric.MeasuredBy) when the baseline's and the
// commit's cells in a configuration were not all measured by one method
// (shards or a resumption run by different abtest versions, say): it
// says why and adds the refusal to the report's incomplete list; ""
// when one method measured them all.
func (a *analyzer) methodsDiffer(in *rowInputs, c string, g *group, n int) string {
	by := in.def.MeasuredBy
	if by == "" {
		return ""
	}
	bm, cm := methodsOf(in.bg, in.m, by), methodsOf(g, in.m, by)
	if len(bm) == 0 || len(cm) == 0 || len(bm) == 1 && slices.Equal(bm, cm) {
		return ""
	}
	why := fmt.Sprintf("%s measured by %s in %s and by %s in %s: different %s methods are not compared", in.m, strings.Join(bm, " and "), a.r.Baseline, strings.Join(cm, " and "), c, by)
	a.r.Incomplete = append(a.r.Incomplete, Incomplete{Commit: c, Config: in.id, Metric: in.m, Usable: n, Planned: g.planned, Why: why, Gated: in.tier.Gated})
	return why
}

// methodsOf lists, sorted, the methods of a kind that measured a
// group's usable cells having the metric; "unrecorded" for cells that do
// not say.
func methodsOf(g *group, m string, by results.MeasuredBy) []string {
	var out []string
	if g == nil {
		return out
	}
	for _, rec := range g.usable {
		if _, ok := rec.Metrics[m]; !ok {
			continue
		}
		name := rec.Method(by)
		if name == "" {
			name = "unrecorded"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// judgeIncomplete gives an incomplete Stat its verdict, and the unpaired
// p-value of what values there are, for information.
func (a *analyzer) judgeIncomplete(st *Stat, in *rowInputs, vs []float64, why string) {
	st.Verdict, st.Note = results.Incomplete, why
	if len(vs) == 0 || len(in.base) == 0 {
		return
	}
	t := newTest(in.def, a.minEffect[in.m][in.id], in.base, vs, false)
	t.measure(len(vs), a.o.Alpha)
	st.P, st.Method = t.p, "unpaired"
	if mp := minUP(len(in.base), len(vs)); mp >= a.o.Alpha {
		st.Note += fmt.Sprintf("; %d + %d repeats can never reach p < %v (smallest U-test p %.2g)", len(in.base), len(vs), a.o.Alpha, mp)
	}
}

// decideCommit decides a commit's tests (judge), then the metrics that
// mirror another; and sums up the commit unless it is the baseline.
func (a *analyzer) decideCommit(c string) {
	sum := Summary{Commit: c}
	var pools []*test
	sum.Tests, sum.Exact, sum.Mirrored, pools = judge(a.byCommit[c], a.d)
	a.pools = pools
	a.pooled(c, pools)
	a.unanswered(c)
	for _, ct := range a.byCommit[c] {
		row := &a.r.Rows[ct.row]
		st := &row.Stats[ct.stat]
		if ct.mirror != "" {
			a.mirrorVerdict(c, ct, row, st)
		} else {
			a.testVerdict(ct, row, st, &sum)
		}
		a.noteChange(c, ct, row, st)
	}
	if c == a.r.Baseline {
		return
	}
	a.countVerdicts(c, &sum)
	a.boundNoChange(c, &sum)
	a.r.Summaries = append(a.r.Summaries, sum)
}

// judge decides one commit's cell tests: a counter within its band in
// both arms by comparison; two arms of one constant as same; the gated
// tests, with one pooled run-level test per primary metric, as one
// family (hierarchy), look by look under a sequential design; the
// report-only tests as a family of their own (Holm at α), higher or
// lower only; mirrors are left to their metric. It returns the size of
// the gated family, how many gated counters were compared exactly, how
// many tests mirror, and the pooled tests.
func judge(cts []*cellTest, d design) (family, exact, mirrored int, pools []*test) {
	var fam, loose []*test
	byMetric := map[string][]*test{}
	var order []string
	for _, ct := range cts {
		switch {
		case ct.mirror != "":
			mirrored++
		case ct.exact && !ct.count && exactVerdict(ct.t, ct.observed):
			if ct.gated {
				exact++
			}
		case constantEqual(ct.t):
		case ct.count && noEvents(ct.t):
		case ct.count && fewEvents(ct.t, d.alpha):
		case !ct.gated:
			loose = append(loose, ct.t)
		default:
			ct.t.count = ct.count
			ct.t.counter = ct.t.counter && !ct.count
			fam = append(fam, ct.t)
			if ct.answer && ct.t.paired && ct.t.log && !ct.t.counter {
				if _, ok := byMetric[ct.metric]; !ok {
					order = append(order, ct.metric)
				}
				byMetric[ct.metric] = append(byMetric[ct.metric], ct.t)
			}
		}
	}
	for _, m := range order {
		parts := byMetric[m]
		if len(parts) < 2 {
			continue
		}
		pt := &test{dir: parts[0].dir, role: pooled, parts: parts, paired: true, log: true, bmed: 1}
		for _, p := range parts {
			pt.minEffect += p.minEffect / float64(len(parts))
		}
		pt.cfg = m
		pools = append(pools, pt)
		fam = append(fam, pt)
	}
	decide(fam, d)
	ps := make([]float64, len(loose))
	for i, t := range loose {
		t.measure(len(t.cand), d.alpha)
		ps[i] = t.p
		if math.IsNaN(ps[i]) {
			ps[i] = 1
		}
	}
	sig := holm(ps, d.alpha)
	for i, t := range loose {
		t.classify(sig[i], d.alpha/float64(len(loose)))
	}
	return len(fam), exact, mirrored, pools
}

// constantEqual decides, as same with Δ 0, a test whose two arms are
// every one the same constant (pgss_deallocs 0 against 0 on select1):
// there is nothing to test, and it takes no share of α.
func constantEqual(t *test) bool {
	if len(t.base) == 0 || len(t.cand) == 0 {
		return false
	}
	c := t.base[0]
	for _, v := range t.base {
		if v != c {
			return false
		}
	}
	for _, v := range t.cand {
		if v != c {
			return false
		}
	}
	t.n, t.p, t.est = len(t.cand), math.NaN(), 0
	t.lo, t.hi, t.lo95, t.hi95 = 0, 0, 0, 0
	t.mde, t.verdict = t.minEffect, results.Same
	return true
}

// fewEvents leaves out of the family, unknown, an event count whose
// total is too small for its rate test ever to reach α (2 events
// against 1, say): the smallest p of N events is 2·min(q, 1−q)^N, q the
// candidate's share of the cells, and a test that cannot reject takes
// no share of α (Tarone).
// Sporadic failures in a few cells would otherwise halve the primary's
// α whenever they happen.
func fewEvents(t *test, alpha float64) bool {
	b, c := meanOf(t.base)*float64(len(t.base)), meanOf(t.cand)*float64(len(t.cand))
	q := float64(len(t.cand)) / float64(len(t.base)+len(t.cand))
	if 2*math.Pow(math.Min(q, 1-q), math.Round(b+c)) <= alpha {
		return false
	}
	t.count = true
	t.measureCount(float64(len(t.cand)), alpha)
	t.verdict, t.mde = results.Unknown, math.Inf(1)
	return true
}

// noEvents decides an event count whose arms had no event at all: same,
// with no test (a test of 0 events cannot reject, so it takes no share
// of α; Tarone's rule for discrete tests).
func noEvents(t *test) bool {
	for _, v := range t.base {
		if v != 0 {
			return false
		}
	}
	for _, v := range t.cand {
		if v != 0 {
			return false
		}
	}
	return constantEqual(t)
}

// mirrorVerdict copies to a mirroring metric's Stat the verdict of the
// metric it mirrors.
func (a *analyzer) mirrorVerdict(c string, ct *cellTest, row *Row, st *Stat) {
	j, ok := a.rowIdx[[2]string{row.Config, ct.mirror}]
	var src *Stat
	if ok {
		for k := range a.r.Rows[j].Stats {
			if a.r.Rows[j].Stats[k].Commit == c {
				src = &a.r.Rows[j].Stats[k]
			}
		}
	}
	if src == nil {
		return
	}
	st.Verdict, st.P, st.Look, st.Blocks, st.Method = src.Verdict, src.P, src.Look, src.Blocks, "as "+ct.mirror
	st.MinEffectPct, st.DetectablePct = ct.t.minEffect, src.DetectablePct
	st.Note = "one statistic with " + ct.mirror + ": tested once, as " + ct.mirror
	if src.Verdict == results.Better || src.Verdict == results.Worse {
		// Better and worse agree across the pair by
		// construction (both directions say the same).
		st.Verdict = src.Verdict
	}
}

// testVerdict writes a decided test into its Stat.
func (a *analyzer) testVerdict(ct *cellTest, row *Row, st *Stat, sum *Summary) {
	t := ct.t
	st.P, st.DeltaLo, st.DeltaHi, st.DecideLo, st.DecideHi, st.Look = t.p, t.lo95, t.hi95, t.lo, t.hi, t.look
	st.DeltaPct = t.est
	if math.IsNaN(t.est) && t.abs != 0 {
		st.DeltaAbs = t.abs
		st.Note = fmt.Sprintf("from a baseline of 0: %+.4g %s on average (absolute)", t.abs, a.unit(row.Metric))
	}
	st.Verdict, st.MinEffectPct = t.verdict, t.minEffect
	st.Method = "paired"
	switch {
	case ct.exact:
		st.Method = "exact"
	case !t.paired:
		st.Method = "unpaired"
	case a.r.Sequential != nil:
		st.Blocks = t.n
	}
	if t.count {
		st.Method = "rate"
	}
	if t.paired && !ct.exact || t.verdict == results.Unknown {
		st.DetectablePct = t.detectable()
	}
	if t.verdict == results.Unknown {
		switch {
		case t.gatekept:
			st.Behind = true
			st.DetectablePct = math.NaN()
			st.Note = "secondary: tested only where the configuration's primary changed, and it did not"
		case t.paired && t.n < 2:
			sum.Unreachable++
			st.Note = fmt.Sprintf("%d pair(s): no test; give more repeats", t.n)
		case ct.gated && t.counter && t.level > 0 && minUP(len(t.base), t.n) >= t.level:
			sum.Unreachable++
			st.Note = fmt.Sprintf("%d + %d repeats cannot reach p < %.2g against a baseline that varied: give more repeats", len(t.base), t.n, t.level)
		}
		if ct.answer && t.role == primary && !a.covered(t) {
			if n := needRepeats(t); n > 0 {
				st.Note = fmt.Sprintf("the primary could not answer: needs r ≥ %d, or a quieter host (abtest doctor)", n)
			}
		}
		if t.undecided && ct.answer && !a.poolDecided(t) {
			// Only the primary asks for more blocks: a configuration
			// stops once its primary is decided, or once the run-level
			// answer that covers it is (the gate's question is
			// answered; its own verdict stays unknown, with its MDE).
			a.undecided[row.Config] = true
		}
	}
	if ct.exact && ct.observed && t.verdict == results.Unknown {
		st.Note = "constant on the baseline, but only some of this commit's cells differ from it: an event, not a shift"
	}
	if t.significant && t.verdict == results.Same && t.paired && t.role != pooled {
		st.Note = fmt.Sprintf("significant, but within ±%.3g%%", t.minEffect)
	}
}

// noteChange lists a called change, and a gated one for the worse as a
// regression.
func (a *analyzer) noteChange(c string, ct *cellTest, row *Row, st *Stat) {
	switch st.Verdict {
	case results.Better, results.Worse, results.Higher, results.Lower:
		ch := Change{Commit: c, Config: row.Config, Metric: row.Metric, DeltaPct: st.DeltaPct, P: st.P, Verdict: st.Verdict, Gated: st.Gated}
		a.r.Changes = append(a.r.Changes, ch)
		if ch.Gated && st.Verdict != results.Better && ct.mirror == "" {
			a.r.Regressions = append(a.r.Regressions, ch)
		}
	}
}

// countVerdicts counts a commit's verdicts into its summary.
func (a *analyzer) countVerdicts(c string, sum *Summary) {
	for _, row := range a.r.Rows {
		for _, st := range row.Stats {
			if st.Commit != c || strings.HasPrefix(st.Method, "as ") {
				// A mirrored metric is the same answer again.
				continue
			}
			if st.Gated {
				sum.Blocks = max(sum.Blocks, st.Blocks)
			}
			switch {
			case st.Behind:
				sum.Behind++
				continue
			case !st.Gated && st.Verdict != results.Higher && st.Verdict != results.Lower && st.Verdict != results.Incomplete:
				// Report-only rows never enter the headline: only
				// their higher/lower is counted, apart.
				continue
			}
			switch st.Verdict {
			case results.Better:
				sum.Better++
			case results.Worse:
				sum.Worse++
			case results.Higher:
				sum.Higher++
			case results.Lower:
				sum.Lower++
			case results.Same:
				sum.Same++
			case results.Unknown:
				sum.Unknown++
			case results.Incomplete:
				sum.Incomplete++
			}
		}
	}
}

// boundNoChange sets the summary's no-change bound when every gated
// verdict of the commit is same and none is incomplete, and the largest
// change its gated unknowns could have missed.
func (a *analyzer) boundNoChange(c string, sum *Summary) {
	allSame, anyGated := true, false
	for _, row := range a.r.Rows {
		for _, st := range row.Stats {
			if st.Commit != c || !st.Gated || strings.HasPrefix(st.Method, "as ") {
				continue
			}
			anyGated = true
			if st.Behind {
				continue
			}
			switch st.Verdict {
			case results.Same:
				sum.NoChangePct = math.Max(sum.NoChangePct, st.MinEffectPct)
			case results.Unknown:
				allSame = false
				sum.GatedUnknown++
				sum.DetectablePct = math.Max(sum.DetectablePct, st.DetectablePct)
			default:
				allSame = false
			}
		}
	}
	if !allSame || !anyGated {
		sum.NoChangePct = 0
	}
	for _, in := range a.r.Incomplete {
		if in.Commit == c && in.Gated {
			sum.NoChangePct = 0
		}
	}
}

// finish lists the undecided configurations, orders the incomplete and
// the changes, and adds the geometric means, the A/A note and the
// profiles.
func (a *analyzer) finish() {
	r := a.r
	for _, id := range a.configs {
		if a.undecided[id] {
			r.undecided = append(r.undecided, id)
		}
	}
	sort.SliceStable(r.Incomplete, func(i, j int) bool { return r.Incomplete[i].Commit < r.Incomplete[j].Commit })
	sort.SliceStable(r.Changes, func(i, j int) bool { return math.Abs(r.Changes[i].DeltaPct) > math.Abs(r.Changes[j].DeltaPct) })
	r.aa()
	if a.p.Options.Perf {
		r.profiles(r.Baseline)
	}
	r.instructions()
}

// groupWhy says why a commit's cells in a configuration are fewer than
// planned, or "" when they are all there.
func groupWhy(g *group) string {
	if len(g.usable) >= g.planned {
		return ""
	}
	var parts []string
	if g.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", g.failed))
	}
	if g.saturated > 0 {
		parts = append(parts, fmt.Sprintf("%d saturated", g.saturated))
	}
	if absent := g.planned - len(g.usable) - g.failed - g.saturated; absent > 0 {
		parts = append(parts, fmt.Sprintf("%d absent", absent))
	}
	return fmt.Sprintf("%d of %d cells usable (%s)", len(g.usable), g.planned, strings.Join(parts, ", "))
}

// valid reports whether v is a measurement of m: finite, and positive
// where the metric cannot be anything else (a tps of 0, or a null that
// decoded to 0, is a failure to measure, never a value).
func (a *analyzer) valid(m string, v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !a.positive[m])
}

// values returns a group's valid values of m in repeat order.
func (a *analyzer) values(g *group, m string) []float64 {
	if g == nil {
		return nil
	}
	reps := make([]int, 0, len(g.usable))
	for rep, rec := range g.usable {
		if v, ok := rec.Metrics[m]; ok && a.valid(m, v) {
			reps = append(reps, rep)
		}
	}
	slices.Sort(reps)
	out := make([]float64, len(reps))
	for i, rep := range reps {
		out[i] = g.usable[rep].Metrics[m]
	}
	return out
}

// pairs returns the values of m of the blocks where both commits have
// a valid one, in repeat order: the two cells of a block ran back to
// back.
func (a *analyzer) pairs(ga, gb *group, m string) (pa, pb []float64) {
	if ga == nil || gb == nil {
		return nil, nil
	}
	reps := make([]int, 0, len(ga.usable))
	for rep, ra := range ga.usable {
		rb, ok := gb.usable[rep]
		if !ok {
			continue
		}
		va, oka := ra.Metrics[m]
		vb, okb := rb.Metrics[m]
		if oka && okb && a.valid(m, va) && a.valid(m, vb) {
			reps = append(reps, rep)
		}
	}
	slices.Sort(reps)
	for _, rep := range reps {
		pa = append(pa, ga.usable[rep].Metrics[m])
		pb = append(pb, gb.usable[rep].Metrics[m])
	}
	return pa, pb
}

func (r *Report) aa() {
	builds := map[string][]string{}
	for _, c := range r.Plan.Commits {
		builds[c.Build] = append(builds[c.Build], c.Label)
	}
	for _, arms := range builds {
		if len(arms) < 2 || !contains(arms, r.Baseline) {
			continue
		}
		a := &AA{Arms: arms}
		for _, row := range r.Rows {
			if row.Metric != results.MetricTPS {
				continue
			}
			for _, st := range row.Stats {
				if st.Commit == r.Baseline || !contains(arms, st.Commit) {
					continue
				}
				if !math.IsInf(st.DeltaPct, 0) && !math.IsNaN(st.DeltaPct) {
					a.MaxDeltaPct = math.Max(a.MaxDeltaPct, math.Abs(st.DeltaPct))
				}
				det := st.MinEffectPct
				if st.Verdict == results.Unknown || st.Verdict == results.Incomplete {
					det = st.DetectablePct
					if st.Verdict == results.Incomplete {
						det = math.Inf(1)
					}
				}
				a.DetectablePct = math.Max(a.DetectablePct, det)
			}
		}
		a.Note = fmt.Sprintf("%s run on one build: they differ only by noise. The largest TPS difference between them was %.2f%%; this run could not have detected a TPS change smaller than %s in its least precise configuration.", strings.Join(arms, " and "), a.MaxDeltaPct, pctAbs(a.DetectablePct))
		r.AA = a
		return
	}
}

// spreadPct is a robust coefficient of variation in percent: the median
// absolute deviation scaled to a standard deviation, over the median; the
// relative range for fewer than 4 values.
func spreadPct(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := median(s)
	if med == 0 {
		if s[0] == s[len(s)-1] {
			return 0
		}
		return math.Inf(1)
	}
	if len(s) < 4 {
		return 100 * (s[len(s)-1] - s[0]) / math.Abs(med)
	}
	dev := make([]float64, len(s))
	for i, v := range s {
		dev[i] = math.Abs(v - med)
	}
	sort.Float64s(dev)
	mad := median(dev)
	if mad == 0 && s[0] != s[len(s)-1] {
		return 100 * (s[len(s)-1] - s[0]) / math.Abs(med) / 4
	}
	return 100 * 1.4826 * mad / math.Abs(med)
}

func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// pooled records a commit's run-level answers: each pooled test as a
// Geomean, and its regression, as the gate's.
func (a *analyzer) pooled(c string, pools []*test) {
	for _, t := range pools {
		g := Geomean{Commit: c, Metric: t.cfg, Configs: t.n, P: t.p, Verdict: t.verdict, MinEffectPct: t.minEffect, Look: t.look,
			Ratio: 1 + t.est/100, Lo: 1 + t.lo95/100, Hi: 1 + t.hi95/100, DecideLo: 1 + t.lo/100, DecideHi: 1 + t.hi/100}
		if t.verdict == results.Unknown {
			g.DetectablePct = t.detectable()
			g.NeedRepeats = needRepeats(t)
		}
		a.r.Geomeans = append(a.r.Geomeans, g)
		if t.verdict == results.Worse {
			a.r.Regressions = append(a.r.Regressions, Change{Commit: c, Config: fmt.Sprintf("run level (geometric mean of %d configurations)", t.n), Metric: t.cfg,
				DeltaPct: t.est, P: t.p, Verdict: t.verdict, Gated: true})
		}
	}
}

// needRepeats is how many repeats an unknown test would need for its
// 80 %-power change to shrink to its bar, at the noise it measured (the
// standard error falls as 1/√n); 0 when it cannot say.
func needRepeats(t *test) int {
	n := t.n
	if t.role == pooled {
		n = 0 // the blocks, not the configurations it pools
		for _, p := range t.parts {
			n = max(n, len(p.cand))
		}
	}
	if math.IsInf(t.mde, 0) || math.IsNaN(t.mde) || t.minEffect <= 0 || n < 1 {
		return 0
	}
	need := math.Ceil(float64(n) * (t.mde / t.minEffect) * (t.mde / t.minEffect))
	if need > 1e6 {
		return 0
	}
	return max(int(need), n+1)
}

// Line is the run-level answer as the summaries print it.
func (g Geomean) Line(alpha float64) string {
	s := fmt.Sprintf("run-level %s: geometric mean ×%.4f (%s, 95%% CI %s … %s) over %d configurations: %s",
		g.Metric, g.Ratio, pct(100*(g.Ratio-1)), pct(100*(g.Lo-1)), pct(100*(g.Hi-1)), g.Configs, g.Verdict)
	switch g.Verdict {
	case results.Better, results.Worse:
		s += fmt.Sprintf(" (p = %.2g, beyond ±%.3g%%)", g.P, g.MinEffectPct)
	case results.Same:
		s += fmt.Sprintf(" (its %.0f%% interval %s … %s lies within ±%.3g%%)", 100*(1-2*alpha), pct(100*(g.DecideLo-1)), pct(100*(g.DecideHi-1)), g.MinEffectPct)
	case results.Unknown:
		s += " (neither a change nor within ±" + fmt.Sprintf("%.3g%%", g.MinEffectPct)
		if !math.IsInf(g.DetectablePct, 0) && g.DetectablePct > 0 {
			s += "; it could have detected " + pctAbs(g.DetectablePct)
		}
		if g.NeedRepeats > 0 {
			s += fmt.Sprintf("; needs r ≥ %d, or a quieter host: abtest doctor", g.NeedRepeats)
		}
		s += ")"
	}
	return s
}

// unanswered lists a commit's unknown primary answers: its pooled tests,
// and the primaries no pooled test covers.
func (a *analyzer) unanswered(c string) {
	if c == a.r.Baseline {
		return
	}
	for _, t := range a.pools {
		if t.verdict == results.Unknown {
			a.r.Unanswered = append(a.r.Unanswered, fmt.Sprintf("%s run-level %s unknown over %d configurations%s", c, t.cfg, t.n, needText(t)))
		}
	}
	for _, ct := range a.byCommit[c] {
		if ct.answer && ct.t.verdict == results.Unknown && !a.covered(ct.t) {
			a.r.Unanswered = append(a.r.Unanswered, fmt.Sprintf("%s %s %s unknown%s", c, ct.t.cfg, ct.metric, needText(ct.t)))
		}
	}
}

func needText(t *test) string {
	if n := needRepeats(t); n > 0 {
		return fmt.Sprintf(": needs r ≥ %d (or a quieter host; see abtest doctor)", n)
	}
	return ": give more repeats (or a quieter host; see abtest doctor)"
}
