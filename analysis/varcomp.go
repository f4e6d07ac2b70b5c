package analysis

// Variance components (issue 43): where a configuration's noise is.
// In the demo, TPS per second within a cell varied 0.4 % while cell
// values varied 4–5 % and a block's two cells 5–6 % apart: the noise is
// drawn anew per cell, so more, shorter cells answer sooner than longer
// ones. Each configuration's primary is split into the within-cell
// component (pgbench's per-second progress) and the between-cell ones
// (cell values within a commit; a block's log ratio against the
// baseline), each with its 95 % interval; doctor and the plan's -n read
// them from a run of this host (NoiseOf), the report carries them
// (Report.Noise).

import (
	"math"
	"slices"
	"sort"

	"github.com/aclements/go-moremath/mathx"

	"github.com/pgabtest/abtest/results"
)

// Components are one configuration's variance components of its
// primary metric, each a standard deviation of logarithms in percent
// (about the CV), with its 95 % interval (χ² on its degrees of
// freedom; NaN, null in JSON, where there is no estimate).
type Components struct {
	Config string `json:"config"`
	Metric string `json:"metric"`
	// Seconds is the median number of per-second samples of a cell: its
	// measured window. 0 without per-second samples.
	Seconds float64 `json:"seconds"`
	// Within is one second's spread inside a cell (TPS from pgbench's
	// progress, every cell's seconds around its own mean, pooled:
	// Record.TPSSeconds).
	Within Component `json:"within"`
	// Between is the spread of the cells' values within a commit,
	// pooled over the commits.
	Between Component `json:"between"`
	// Paired is the spread of a block's log ratio (candidate over
	// baseline), pooled over the candidates: what the paired test sees.
	Paired Component `json:"paired"`
	// Rho is the lag-1 autocorrelation of a cell's seconds (pooled,
	// bias-corrected, within [0, 0.95]); NaN where cells are shorter
	// than minRhoSeconds, too few seconds to tell it from 0.
	Rho float64 `json:"rho"`
	// CellPct is the part of a cell's spread the seconds inside it do
	// not explain, √(Paired²/2 − Within²·f/Seconds) with f the variance
	// factor of Rho (ar1Factor; 1 where Rho is unknown), 0 when they
	// explain it all, NaN without both: it does not shrink with a
	// longer cell.
	CellPct float64 `json:"cell_pct"`
}

// Component is one variance component: its estimate, the 95 % interval
// and the degrees of freedom it rests on.
type Component struct {
	Pct float64 `json:"pct"`
	Lo  float64 `json:"lo_pct"`
	Hi  float64 `json:"hi_pct"`
	DF  int     `json:"df"`
}

// NoiseOf is the variance components of every configuration of a run
// from its plan and records: the ok cells, the first record of each
// cell, the primary PrimaryFor names. doctor and the plan read a run of
// this host with it; Analyze uses its own usable cells (Report.Noise).
func NoiseOf(p *results.Plan, recs []results.Record) []Components {
	byCfg := map[string]map[string][]*results.Record{}
	seen := map[string]bool{}
	cfgs := map[string]results.Config{}
	var order []string
	for i := range recs {
		r := &recs[i]
		if r.Status != results.StatusOK || seen[r.Cell] {
			continue
		}
		seen[r.Cell] = true
		id := r.Config.ID()
		if byCfg[id] == nil {
			byCfg[id] = map[string][]*results.Record{}
			cfgs[id] = r.Config
			order = append(order, id)
		}
		byCfg[id][r.Commit] = append(byCfg[id][r.Commit], r)
	}
	var out []Components
	for _, id := range order {
		for _, rs := range byCfg[id] {
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].Repeat < rs[j].Repeat })
		}
		out = append(out, components(id, PrimaryFor(cfgs[id], p), p.Baseline, byCfg[id]))
	}
	return out
}

// noise sets the report's variance components from the usable cells.
func (a *analyzer) noise() {
	for _, id := range a.configs {
		if len(a.primary[id]) == 0 {
			continue
		}
		byCommit := map[string][]*results.Record{}
		for c, g := range a.groups[id] {
			byCommit[c] = g.recs
		}
		a.r.Noise = append(a.r.Noise, components(id, a.primary[id][0], a.r.Baseline, byCommit))
	}
}

// components computes one configuration's components of metric m from
// its usable records by commit, each in repeat order.
func components(id, m, baseline string, byCommit map[string][]*results.Record) Components {
	c := Components{Config: id, Metric: m, Rho: math.NaN(), CellPct: math.NaN()}
	var within, between, paired spread
	var seconds []float64
	commits := make([]string, 0, len(byCommit))
	for k := range byCommit {
		commits = append(commits, k)
	}
	slices.Sort(commits)
	for _, k := range commits {
		var logs []float64
		for _, r := range byCommit[k] {
			if v, ok := r.Metrics.Get(m); ok && v > 0 {
				logs = append(logs, math.Log(v))
			}
			if m != results.MetricTPS {
				continue
			}
			// From the progress reports, or the summary of them a record
			// read without them keeps (results.ReadRecordsNoProgress).
			secs := r.TPSSeconds()
			within.addLogs(secs)
			if secs.N > 0 {
				seconds = append(seconds, float64(secs.N))
			}
		}
		between.add(logs)
		if k != baseline {
			paired.add(blockRatios(byCommit[baseline], byCommit[k], m))
		}
	}
	c.Within, c.Between, c.Paired = within.component(), between.component(), paired.component()
	if len(seconds) > 0 {
		c.Seconds = Median(seconds)
		c.Rho = within.rho(c.Seconds)
	}
	if c.Seconds > 0 && isFinite(c.Within.Pct) && isFinite(c.Paired.Pct) {
		w := c.Within.Pct * c.Within.Pct * ar1Factor(c.Rho, c.Seconds) / c.Seconds
		c.CellPct = math.Sqrt(math.Max(0, c.Paired.Pct*c.Paired.Pct/2-w))
	}
	return c
}

// PoolComponents pools each configuration's components over several
// runs of this host, weighting each run's variances by their degrees of
// freedom (CellPct by the paired spread's, Rho by the within's): a
// design from one 10-block run rests on 9 of them, whose 95 % interval
// spans 2.7× (one such A/A on this VM measured select1's paired spread
// at 11.6 % [8.0, 21.1] and asked for 3 s × r 106, where the runs
// before it measured 4–7 %). Seconds is the longest measured (a design
// is never shorter than any); the first run's configuration order and
// metric are kept.
func PoolComponents(runs [][]Components) []Components {
	type acc struct {
		c              Components
		within, paired spread
		between        spread
		cell, cellDF   float64
		rho, rhoDF     float64
	}
	var order []string
	by := map[string]*acc{}
	add := func(s *spread, c Component) {
		if isFinite(c.Pct) && c.DF > 0 {
			s.ss += (c.Pct / 100) * (c.Pct / 100) * float64(c.DF)
			s.df += c.DF
		}
	}
	for _, run := range runs {
		for _, c := range run {
			a := by[c.Config]
			if a == nil {
				a = &acc{c: c}
				by[c.Config] = a
				order = append(order, c.Config)
			}
			a.c.Seconds = math.Max(a.c.Seconds, c.Seconds)
			add(&a.within, c.Within)
			add(&a.between, c.Between)
			add(&a.paired, c.Paired)
			if isFinite(c.CellPct) && c.Paired.DF > 0 {
				a.cell += c.CellPct * c.CellPct * float64(c.Paired.DF)
				a.cellDF += float64(c.Paired.DF)
			}
			if isFinite(c.Rho) && c.Within.DF > 0 {
				a.rho += c.Rho * float64(c.Within.DF)
				a.rhoDF += float64(c.Within.DF)
			}
		}
	}
	out := make([]Components, 0, len(order))
	for _, id := range order {
		a := by[id]
		c := a.c
		c.Within, c.Between, c.Paired = a.within.component(), a.between.component(), a.paired.component()
		c.CellPct, c.Rho = math.NaN(), math.NaN()
		if a.cellDF > 0 {
			c.CellPct = math.Sqrt(a.cell / a.cellDF)
		}
		if a.rhoDF > 0 {
			c.Rho = a.rho / a.rhoDF
		}
		out = append(out, c)
	}
	return out
}

// minRhoSeconds is the shortest cell whose seconds' autocorrelation
// Components estimate: the bias of r₁ is about −(1+4ρ)/n, and from
// 3 s cells it is all bias.
const minRhoSeconds = 10

// rho is the pooled lag-1 autocorrelation of groups of about n values
// each, r₁ = Σ dᵢdᵢ₊₁ / Σ dᵢ² corrected for the mean each group's
// deviations are taken from (Kendall: E r₁ ≈ ρ − (1+4ρ)/n), within
// [0, 0.95]: a negative one is not trusted to shrink a longer cell's
// spread faster than independent seconds would. NaN for n below
// minRhoSeconds.
func (s spread) rho(n float64) float64 {
	if n < minRhoSeconds || s.ss <= 0 {
		return math.NaN()
	}
	r := (n*s.lag/s.ss + 1) / (n - 4)
	return math.Min(math.Max(r, 0), 0.95)
}

// ar1Factor is how much the variance of a mean of seconds consecutive
// values exceeds that of independent ones when they are autocorrelated
// as an AR(1) with lag-1 correlation rho: 1 + 2 Σₖ (1 − k/T) ρᵏ. 1 for
// an unknown rho.
func ar1Factor(rho, seconds float64) float64 {
	if !isFinite(rho) || rho <= 0 {
		return 1
	}
	f, pk := 1.0, 1.0
	for k := 1.0; k < seconds; k++ {
		pk *= rho
		f += 2 * (1 - k/seconds) * pk
	}
	return f
}

// blockRatios are the log ratios of metric m of the blocks (repeats)
// both arms have.
func blockRatios(base, cand []*results.Record, m string) []float64 {
	byRep := map[int]float64{}
	for _, r := range base {
		if v, ok := r.Metrics.Get(m); ok && v > 0 {
			byRep[r.Repeat] = v
		}
	}
	var d []float64
	for _, r := range cand {
		b, ok := byRep[r.Repeat]
		if v, okc := r.Metrics.Get(m); ok && okc && v > 0 {
			d = append(d, math.Log(v/b))
		}
	}
	return d
}

// spread pools sums of squares around each group's own mean.
type spread struct {
	ss, lag float64 // lag: consecutive deviations' products (addLogs)
	df      int
}

func (s *spread) add(x []float64) {
	if len(x) < 2 {
		return
	}
	var mean float64
	for _, v := range x {
		mean += v / float64(len(x))
	}
	for _, v := range x {
		s.ss += (v - mean) * (v - mean)
	}
	s.df += len(x) - 1
}

// addLogs adds a group summarized by its logarithms, as add does.
func (s *spread) addLogs(l results.LogSpread) {
	if l.N < 2 {
		return
	}
	s.ss += l.SS
	s.df += l.N - 1
	s.lag += l.Lag
}

// component is the pooled standard deviation in percent and its 95 %
// interval: df·s²/σ² is χ² on df degrees of freedom.
func (s spread) component() Component {
	if s.df == 0 {
		return Component{Pct: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	sd := math.Sqrt(s.ss / float64(s.df))
	df := float64(s.df)
	return Component{Pct: 100 * sd, DF: s.df,
		Lo: 100 * sd * math.Sqrt(df/chi2q(0.975, df)), Hi: 100 * sd * math.Sqrt(df/chi2q(0.025, df))}
}

// chi2q is the χ² quantile p on df degrees of freedom, by bisection on
// its distribution function; past 200 degrees of freedom by
// Wilson–Hilferty's cube-root normal approximation (relative error
// under 1e-4 there), where mathx.GammaInc's series stops converging
// and panics (from about 2 000: the seconds of 40 cells of 60 s).
func chi2q(p, df float64) float64 {
	if df > 200 {
		v := 2 / (9 * df)
		return df * math.Pow(1-v+zq(p)*math.Sqrt(v), 3)
	}
	lo, hi := 0.0, df+10*math.Sqrt(2*df)+10
	for range 100 {
		mid := (lo + hi) / 2
		if mathx.GammaInc(df/2, mid/2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// SecondsFor is the components' model of a block's log-ratio spread,
// in percent, at a cell of the given seconds: the between-cell part
// stays, the within-cell part falls as √(f/seconds), f the variance
// factor of the seconds' autocorrelation (ar1Factor). NaN without both.
func (c Components) SecondsFor(seconds float64) float64 {
	if !isFinite(c.CellPct) || seconds <= 0 {
		return math.NaN()
	}
	return math.Sqrt(2 * (c.CellPct*c.CellPct + c.Within.Pct*c.Within.Pct*ar1Factor(c.Rho, seconds)/seconds))
}

// RunDesign is a run's cell length and repeats, and how long its cells
// take.
type RunDesign struct {
	Seconds float64
	Repeats int
	// Minutes is the cells' time: repeats × configurations × commits ×
	// (seconds + the overhead of a cell).
	Minutes float64
}

// cellSeconds are the cell lengths DesignFor weighs.
var cellSeconds = []float64{1, 2, 3, 5, 10, 20, 30, 60, 120, 300}

// DesignFor is the design that answers the run-level question at the
// bar (±barPct) soonest from a host's measured components: for each
// cell length, each configuration's block spread at that length
// (SecondsFor; its measured paired spread where the model has no
// within-cell part), the repeats at which the pooled test's decision
// interval (1−2·EquivalenceAlpha(α)) fits the bar in 9 runs of 10 when nothing changed
// (the estimate itself scatters: |Δ| + t·se ≤ bar needs
// (t + z₀.₉₅)·se ≤ bar, not t·se ≤ bar, which answers half the time),
// and the time those cells take at overheadS seconds a cell beyond its
// window. Where the noise
// is between cells a short cell wins; where it is within them, a long
// one. false when no configuration has a paired spread.
func DesignFor(comps []Components, barPct, alpha, overheadS float64, commits int) (RunDesign, bool) {
	bar := math.Log1p(barPct / 100)
	best := RunDesign{Minutes: math.Inf(1)}
	// Never shorter than the cells the noise was measured in: the model
	// (SecondsFor) extrapolates down badly on a host whose seconds
	// are not independent. Designed from 3 s cells, a real 2 s run's
	// block spread was 6.7 % where it predicted 4.8 % (select1, PG 15,
	// this project's VM, 2026-12-04).
	// Longer only where the seconds' autocorrelation was measured (cells
	// of minRhoSeconds or more): 3 s windows of one 60 s run differed
	// 5.0 % where independent seconds predicted 2.2 % (same VM), so
	// 1/√seconds is optimistic up too.
	shortest, longer := 0.0, true
	for _, c := range comps {
		shortest = math.Max(shortest, c.Seconds)
		longer = longer && isFinite(c.Rho)
	}
	for _, secs := range append([]float64{shortest}, cellSeconds...) {
		if secs <= 0 || secs < shortest || secs > shortest && !longer {
			continue
		}
		var v float64
		k := 0
		for _, c := range comps {
			sd := c.SecondsFor(secs)
			if !isFinite(sd) {
				sd = c.Paired.Pct
			}
			if !isFinite(sd) {
				continue
			}
			v += (sd / 100) * (sd / 100)
			k++
		}
		if k == 0 {
			return RunDesign{}, false
		}
		n := 2
		for ; n < 100000; n++ {
			se := math.Sqrt(v/float64(n)) / float64(k)
			if (tq(1-EquivalenceAlpha(alpha), float64(k*(n-1)))+zq(0.95))*se <= bar {
				break
			}
		}
		minutes := float64(n*k*commits) * (secs + overheadS) / 60
		if minutes < best.Minutes {
			best = RunDesign{Seconds: secs, Repeats: n, Minutes: minutes}
		}
	}
	return best, !math.IsInf(best.Minutes, 1)
}
