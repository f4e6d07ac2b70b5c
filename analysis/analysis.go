// Package analysis turns result directories into verdicts: per
// configuration and metric, the median of every commit with a
// distribution-free confidence interval, the Mann–Whitney U p-value
// against the baseline, and the change in percent
// (golang.org/x/perf/benchmath, what benchstat uses).
//
// A change is called only when p < α and |Δ| exceeds the metric's
// threshold; otherwise "~". Too few repeats for the test to ever reach α
// is said as such, never guessed. Each metric's tier is measured on the
// baseline's own repeats (seed 001): a metric that never varies is gated
// exactly, one with a small spread within a band, a noisy one is reported
// and never gated. Saturated and failed cells are shown, never averaged
// in.
//
// It reads only result files (plan.json, cells.jsonl), so results copied
// from another host, shards, and resumed runs all analyse the same way.
package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pgabtest/abtest/results"

	"golang.org/x/perf/benchmath"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// Verdicts.
const (
	Faster   = "faster"
	Slower   = "slower"
	Better   = "better"
	Worse    = "worse"
	Same     = "~"
	TooFew   = "too few samples"
	NoData   = "no data"
	Baseline = "baseline"
)

// bandMaxSpreadPct: a metric whose baseline spread (robust CV) stays at
// or below this in every configuration is gated within a band; above it,
// it is only reported.
const bandMaxSpreadPct = 5.0

// Options shape the analysis.
type Options struct {
	// Baseline is the commit label compared against; empty means the
	// plan's first commit.
	Baseline string
	// Alpha is the significance level; zero means 0.01.
	Alpha float64
	// Thresholds override metrics' minimum effects, in percent.
	Thresholds map[string]float64
	// Metrics limits the metrics analysed; empty means every metric the
	// cells carry.
	Metrics []string
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
	in := &Input{Dirs: dirs}
	seen := map[string]bool{}
	var shards []string
	for _, d := range dirs {
		p, err := results.ReadPlan(d)
		if err != nil {
			return nil, err
		}
		if in.Plan == nil {
			in.Plan = p
		} else {
			a, b := *in.Plan, *p
			a.Shard, b.Shard = "", ""
			if diff := results.Diff(&a, &b); len(diff) > 0 {
				return nil, exitcode.BadInputf("%w: %s and %s are not shards of one plan (%s)", ErrPlansDiffer, dirs[0], d, strings.Join(diff, "; "))
			}
			in.Plan.Configs = mergeConfigs(in.Plan.Configs, p.Configs)
			in.Plan.Cells = append(in.Plan.Cells, p.Cells...)
		}
		shards = append(shards, p.Shard)
		recs, warnings, err := results.ReadRecords(d)
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		in.Warnings = append(in.Warnings, warnings...)
		for _, r := range recs {
			if seen[r.Cell] {
				continue
			}
			seen[r.Cell] = true
			in.Records = append(in.Records, r)
		}
	}
	if len(dirs) > 1 {
		in.Plan.Shard = strings.Join(shards, "+")
	}
	if missing := len(in.Plan.Cells) - len(in.Records); missing > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d of %d planned cells have no result (interrupted run or missing shard?)", missing, len(in.Plan.Cells)))
	}
	return in, nil
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
	Median float64   `json:"median"`
	// Lo and Hi bound the 95 % confidence interval of the median; they
	// are ±Inf (null in JSON) when there are too few values for one.
	Lo float64 `json:"-"`
	Hi float64 `json:"-"`
	// DeltaPct and P compare against the baseline (absent for it).
	DeltaPct float64 `json:"-"`
	P        float64 `json:"p"`
	Verdict  string  `json:"verdict"`
	// Note explains a missing verdict.
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes infinite bounds and changes as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	type plain Stat
	return json.Marshal(struct {
		plain
		Lo       *float64 `json:"ci_lo"`
		Hi       *float64 `json:"ci_hi"`
		DeltaPct *float64 `json:"delta_pct"`
	}{plain(s), finite(s.Lo), finite(s.Hi), finite(s.DeltaPct)})
}

func finite(x float64) *float64 {
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

// Tier is a metric's measured tier.
type Tier struct {
	Metric       string       `json:"metric"`
	Tier         results.Tier `json:"tier"`
	MaxSpreadPct float64      `json:"max_spread_pct"`
	ThresholdPct float64      `json:"threshold_pct"`
	Why          string       `json:"why"`
}

// Change is a verdict other than "~", for the summary and the gate.
type Change struct {
	Commit   string  `json:"commit"`
	Config   string  `json:"config"`
	Metric   string  `json:"metric"`
	DeltaPct float64 `json:"delta_pct"`
	P        float64 `json:"p"`
	Verdict  string  `json:"verdict"`
	Gated    bool    `json:"gated"`
}

// MarshalJSON writes an infinite change (from a zero baseline) as null.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	return json.Marshal(struct {
		plain
		DeltaPct *float64 `json:"delta_pct"`
	}{plain(c), finite(c.DeltaPct)})
}

// Geomean is a commit's geometric mean ratio to the baseline over the
// configurations, for one metric.
type Geomean struct {
	Commit  string  `json:"commit"`
	Metric  string  `json:"metric"`
	Ratio   float64 `json:"ratio"`
	Configs int     `json:"configs"`
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
	Commits      []string      `json:"commits"`
	Metrics      []string      `json:"metrics"`
	Rows         []Row         `json:"rows"`
	Tiers        []Tier        `json:"tiers"`
	Changes      []Change      `json:"changes"`
	Geomeans     []Geomean     `json:"geomeans"`
	// Regressions are the gated changes for the worse.
	Regressions []Change   `json:"regressions"`
	Failed      []CellNote `json:"failed"`
	Saturated   []CellNote `json:"saturated"`
	// AA describes the noise floor when two arms share one build.
	AA *AA `json:"aa,omitempty"`
	// TimeWent compares the cells' CPU profiles (matrix --perf).
	TimeWent []TimeWent `json:"time_went,omitempty"`
	Warnings []string   `json:"warnings"`
	Plots    []string   `json:"plots,omitempty"`

	records []results.Record
}

// AA is what an A/A run (two arms of one build) says about noise.
type AA struct {
	Arms []string `json:"arms"`
	// MaxDeltaPct is the largest |Δ| of TPS medians between the arms.
	MaxDeltaPct float64 `json:"max_delta_pct"`
	// DetectablePct is the smallest TPS change this run could have
	// called: the larger of the threshold and twice the worst baseline
	// spread.
	DetectablePct float64 `json:"detectable_pct"`
	Note          string  `json:"note"`
}

// Analyze computes the report.
func Analyze(in *Input, o Options) (*Report, error) {
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
	for _, c := range p.Commits {
		r.Commits = append(r.Commits, c.Label)
	}
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

	// values[config][metric][commit] = values of ok, unsaturated cells.
	values := map[string]map[string]map[string][]float64{}
	present := map[string]bool{}
	for i := range in.Records {
		rec := &in.Records[i]
		switch {
		case rec.Status != "ok":
			r.Failed = append(r.Failed, CellNote{Cell: rec.Cell, Status: rec.Status, Error: rec.Error, Tail: rec.LogTail})
			continue
		case rec.Saturated:
			r.Saturated = append(r.Saturated, CellNote{Cell: rec.Cell, Status: "saturated"})
			continue
		}
		id := rec.Config().ID()
		if values[id] == nil {
			values[id] = map[string]map[string][]float64{}
		}
		for m, v := range rec.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if values[id][m] == nil {
				values[id][m] = map[string][]float64{}
			}
			values[id][m][rec.Commit] = append(values[id][m][rec.Commit], v)
			present[m] = true
		}
	}
	for _, m := range p.Metrics {
		if present[m.Name] && (len(o.Metrics) == 0 || contains(o.Metrics, m.Name)) {
			r.Metrics = append(r.Metrics, m.Name)
		}
	}
	configs := make([]string, 0, len(p.Configs))
	for _, c := range p.Configs {
		configs = append(configs, c.ID())
	}

	// Tiers, measured on the baseline's repeats.
	tiers := map[string]Tier{}
	for _, m := range r.Metrics {
		def, _ := p.Metrics.Get(m)
		th := def.ThresholdPct
		if v, ok := o.Thresholds[m]; ok {
			th = v
		}
		maxSpread, nConf := 0.0, 0
		for _, id := range configs {
			vs := values[id][m][r.Baseline]
			if len(vs) < 2 {
				continue
			}
			nConf++
			maxSpread = math.Max(maxSpread, spreadPct(vs))
		}
		t := Tier{Metric: m, MaxSpreadPct: maxSpread, ThresholdPct: th}
		switch {
		case nConf == 0:
			t.Tier, t.Why = results.TierReport, "the baseline has fewer than 2 repeats of every configuration: no spread to measure"
		case maxSpread == 0:
			t.Tier, t.Why = results.TierExact, fmt.Sprintf("never varied over the baseline's repeats in %d configurations", nConf)
		case maxSpread <= bandMaxSpreadPct:
			t.Tier, t.Why = results.TierBand, fmt.Sprintf("baseline spread up to %.2f%% over %d configurations", maxSpread, nConf)
			t.ThresholdPct = th
		default:
			t.Tier, t.Why = results.TierReport, fmt.Sprintf("baseline spread up to %.1f%% (over %.0f%%): too noisy to gate", maxSpread, bandMaxSpreadPct)
		}
		if def.Tier.Rank() > t.Tier.Rank() {
			t.Why += fmt.Sprintf("; gated no tighter than its declared tier, %s", def.Tier)
			t.Tier = def.Tier
		}
		tiers[m] = t
		r.Tiers = append(r.Tiers, t)
	}

	thresholds := &benchmath.Thresholds{CompareAlpha: o.Alpha}
	ratios := map[string]map[string][]float64{} // commit → metric → ratios
	for _, id := range configs {
		for _, m := range r.Metrics {
			byCommit := values[id][m]
			if byCommit == nil {
				continue
			}
			def, _ := p.Metrics.Get(m)
			tier := tiers[m]
			row := Row{Config: id, Metric: m}
			base := byCommit[r.Baseline]
			var baseSample *benchmath.Sample
			var baseSum benchmath.Summary
			if len(base) > 0 {
				baseSample = benchmath.NewSample(append([]float64(nil), base...), thresholds)
				baseSum = benchmath.AssumeNothing.Summary(baseSample, 0.95)
			}
			for _, c := range r.Commits {
				vs := byCommit[c]
				st := Stat{Commit: c, N: len(vs), Values: vs}
				if len(vs) == 0 {
					st.Verdict = NoData
					row.Stats = append(row.Stats, st)
					continue
				}
				s := benchmath.NewSample(append([]float64(nil), vs...), thresholds)
				sum := benchmath.AssumeNothing.Summary(s, 0.95)
				st.Median, st.Lo, st.Hi = sum.Center, sum.Lo, sum.Hi
				if c == r.Baseline {
					st.Verdict = Baseline
					row.Stats = append(row.Stats, st)
					continue
				}
				if baseSample == nil {
					st.Verdict, st.Note = NoData, "no baseline cells"
					row.Stats = append(row.Stats, st)
					continue
				}
				cmp := benchmath.AssumeNothing.Compare(baseSample, s)
				st.P = cmp.P
				if baseSum.Center != 0 {
					st.DeltaPct = 100 * (sum.Center/baseSum.Center - 1)
				} else if sum.Center != 0 {
					st.DeltaPct = math.Inf(int(math.Copysign(1, sum.Center)))
				}
				st.Verdict, st.Note = verdict(def, tier, base, vs, st.DeltaPct, cmp, o.Alpha)
				if baseSum.Center > 0 && sum.Center > 0 {
					if ratios[c] == nil {
						ratios[c] = map[string][]float64{}
					}
					ratios[c][m] = append(ratios[c][m], sum.Center/baseSum.Center)
				}
				if st.Verdict != Same && st.Verdict != TooFew && st.Verdict != NoData {
					ch := Change{Commit: c, Config: id, Metric: m, DeltaPct: st.DeltaPct, P: st.P, Verdict: st.Verdict, Gated: tier.Tier != results.TierReport}
					r.Changes = append(r.Changes, ch)
					if ch.Gated && (st.Verdict == Slower || st.Verdict == Worse) {
						r.Regressions = append(r.Regressions, ch)
					}
				}
				row.Stats = append(row.Stats, st)
			}
			r.Rows = append(r.Rows, row)
		}
	}
	sort.SliceStable(r.Changes, func(i, j int) bool { return math.Abs(r.Changes[i].DeltaPct) > math.Abs(r.Changes[j].DeltaPct) })
	for _, c := range r.Commits {
		for _, m := range r.Metrics {
			if rs := ratios[c][m]; len(rs) > 0 {
				r.Geomeans = append(r.Geomeans, Geomean{Commit: c, Metric: m, Ratio: geomean(rs), Configs: len(rs)})
			}
		}
	}
	r.aa(tiers)
	if p.Options.Perf {
		r.profiles(r.Baseline)
	}
	return r, nil
}

// verdict decides one comparison.
func verdict(def results.Metric, tier Tier, base, vs []float64, delta float64, cmp benchmath.Comparison, alpha float64) (string, string) {
	better := delta > 0 == (def.Direction == results.HigherIsBetter)
	name := func() string {
		timeish := def.Unit == "tx/s" || def.Unit == "ms" || def.Unit == "s/tx"
		switch {
		case timeish && better:
			return Faster
		case timeish:
			return Slower
		case better:
			return Better
		default:
			return Worse
		}
	}
	if tier.Tier == results.TierExact {
		// The baseline never varied: any shift of the whole sample is
		// real, with or without a U-test that three repeats cannot pass.
		b := base[0]
		allAbove, allBelow := true, true
		for _, v := range vs {
			allAbove = allAbove && v > b
			allBelow = allBelow && v < b
		}
		if (allAbove || allBelow) && math.Abs(delta) > tier.ThresholdPct {
			return name(), "exact tier: every value differs from the constant baseline"
		}
		return Same, ""
	}
	if cmp.P >= alpha {
		for _, w := range cmp.Warnings {
			if strings.Contains(w.Error(), "need") {
				return TooFew, fmt.Sprintf("%d vs %d repeats: the U-test cannot reach p < %v (%v)", len(base), len(vs), alpha, w)
			}
		}
		return Same, ""
	}
	if math.Abs(delta) <= tier.ThresholdPct {
		return Same, fmt.Sprintf("significant but |Δ| ≤ %.2f%%", tier.ThresholdPct)
	}
	return name(), ""
}

func (r *Report) aa(tiers map[string]Tier) {
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
			if row.Metric != "tps" {
				continue
			}
			for _, st := range row.Stats {
				if st.Commit != r.Baseline && contains(arms, st.Commit) && !math.IsInf(st.DeltaPct, 0) {
					a.MaxDeltaPct = math.Max(a.MaxDeltaPct, math.Abs(st.DeltaPct))
				}
			}
		}
		t := tiers["tps"]
		a.DetectablePct = math.Max(t.ThresholdPct, 2*t.MaxSpreadPct)
		a.Note = fmt.Sprintf("%s run on one build: they differ only by noise. The largest TPS difference between them was %.2f%%; this run could not have detected a TPS change smaller than %.2f%%.", strings.Join(arms, " and "), a.MaxDeltaPct, a.DetectablePct)
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

func geomean(xs []float64) float64 {
	var l float64
	for _, x := range xs {
		l += math.Log(x)
	}
	return math.Exp(l / float64(len(xs)))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
