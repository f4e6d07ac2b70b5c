package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestNoiseOfDemo: the recorded demo run (a noisy one: its seconds
// vary ~12 % within a cell) gives each configuration's components with
// intervals, and Analyze reports the same.
func TestNoiseOfDemo(t *testing.T) {
	p, recs := readDemoPlan(t), readDemoRecords(t)
	comps := NoiseOf(p, recs)
	if len(comps) != 2 {
		t.Fatalf("%d configurations' components; want 2: %+v", len(comps), comps)
	}
	for _, c := range comps {
		t.Logf("%s %s: %g s, within %.2f%% [%.2f, %.2f] df %d, between %.2f%% [%.2f, %.2f], paired %.2f%% [%.2f, %.2f], cell %.2f%%", c.Config, c.Metric, c.Seconds,
			c.Within.Pct, c.Within.Lo, c.Within.Hi, c.Within.DF, c.Between.Pct, c.Between.Lo, c.Between.Hi, c.Paired.Pct, c.Paired.Lo, c.Paired.Hi, c.CellPct)
		if c.Metric != results.MetricTPS || c.Seconds != 3 {
			t.Errorf("%s: metric %s over %g s; want tps over 3 s", c.Config, c.Metric, c.Seconds)
		}
		if !(c.Within.Pct > 9 && c.Within.Pct < 15) || !(c.Between.Pct > 10 && c.Between.Pct < 18) || !(c.Paired.Pct > 8 && c.Paired.Pct < 20) {
			t.Errorf("%s: within %.2f%%, between %.2f%%, paired %.2f%%; want 9–15, 10–18, 8–20", c.Config, c.Within.Pct, c.Between.Pct, c.Paired.Pct)
		}
		for _, k := range []Component{c.Within, c.Between, c.Paired} {
			if !(k.Lo < k.Pct && k.Pct < k.Hi) || k.DF < 10 {
				t.Errorf("%s: interval %.2f … %.2f around %.2f on %d df", c.Config, k.Lo, k.Pct, k.Hi, k.DF)
			}
		}
	}
	r, err := Analyze(&Input{Plan: p, Records: recs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Noise) != 2 || math.Abs(r.Noise[0].Paired.Pct-comps[0].Paired.Pct) > 1e-9 {
		t.Errorf("report's components %+v; want NoiseOf's %+v", r.Noise, comps)
	}
}

// TestNoiseKnownComponents: cells drawn with a 5 % effect per cell and
// 0.5 % per second over 10 s windows give back those components, the
// paired one √2 × the cell's, and the model's spread at other lengths.
func TestNoiseKnownComponents(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	cfg := results.Config{Workload: "w", Clients: 8}
	var recs []results.Record
	for rep := 1; rep <= 60; rep++ {
		for _, c := range []string{"a", "b"} {
			level := 1000 * math.Exp(0.05*rng.NormFloat64())
			r := results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c), Commit: c, Config: cfg, Repeat: rep, Status: results.StatusOK}
			var sum float64
			for s := range 10 {
				v := level * math.Exp(0.005*rng.NormFloat64())
				sum += v
				r.Progress = append(r.Progress, results.Progress{T: float64(s + 1), TPS: v})
			}
			r.Metrics = results.ValuesOf(map[string]float64{results.MetricTPS: sum / 10})
			recs = append(recs, r)
		}
	}
	c := NoiseOf(&results.Plan{Baseline: "a"}, recs)[0]
	t.Logf("within %.3f%%, between %.2f%%, paired %.2f%%, cell %.2f%%", c.Within.Pct, c.Between.Pct, c.Paired.Pct, c.CellPct)
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }
	if c.Seconds != 10 || !near(c.Within.Pct, 0.5, 0.05) || !near(c.Between.Pct, 5, 0.2) || !near(c.Paired.Pct, 5*math.Sqrt2, 0.2) || !near(c.CellPct, 5, 0.2) {
		t.Errorf("components %+v; want within 0.5 %%, between 5 %%, paired 7.07 %%, cell 5 %% over 10 s", c)
	}
	if !(c.Within.Lo < 0.5 && 0.5 < c.Within.Hi) {
		t.Errorf("within's interval %.3f … %.3f misses 0.5", c.Within.Lo, c.Within.Hi)
	}
	if one, long := c.SecondsFor(1), c.SecondsFor(100); !(one > long) || !near(long, c.CellPct*math.Sqrt2, 0.01) {
		t.Errorf("modelled spread at 1 s %.3f%%, at 100 s %.3f%%; want it falling to √2 × the cell's %.3f%%", one, long, c.CellPct)
	}
}

// TestNoiseHostile: a cell without per-second samples, a failed cell
// with absurd ones, a zero TPS, and a single cell give no NaN in the
// JSON (null instead) and no within-cell component from the failed cell.
func TestNoiseHostile(t *testing.T) {
	p := &results.Plan{Baseline: "a"}
	cfg := results.Config{Workload: "w", Clients: 1}
	rec := func(c string, rep int, status results.Status, tps float64, secs ...float64) results.Record {
		r := results.Record{Cell: cfg.ID() + "/" + c + "/" + string(rune('0'+rep)), Commit: c, Config: cfg, Repeat: rep, Status: status,
			Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: tps})}
		for i, s := range secs {
			r.Progress = append(r.Progress, results.Progress{T: float64(i + 1), TPS: s})
		}
		return r
	}
	recs := []results.Record{rec("a", 1, results.StatusOK, 100), rec("b", 1, results.StatusOK, 0), rec("b", 2, results.StatusFailed, 5, 1, 1e9, 3)}
	c := NoiseOf(p, recs)
	if len(c) != 1 || c[0].Within.DF != 0 || !math.IsNaN(c[0].Within.Pct) || !math.IsNaN(c[0].CellPct) {
		t.Fatalf("components %+v; want no within-cell estimate", c)
	}
	b, err := marshalJSON(c)
	if err != nil || strings.Contains(string(b), "NaN") || !strings.Contains(string(b), `"pct":null`) {
		t.Errorf("json %s, %v; want nulls", b, err)
	}
}

// TestGeomeanMatchesDelta: on the demo run each candidate's Stat carries
// geometric means whose ratio is its paired Δ exactly (issue 43: churn's
// medians read +2.05 % beside Δ +3.98 %).
func TestGeomeanMatchesDelta(t *testing.T) {
	r, err := Analyze(&Input{Plan: readDemoPlan(t), Records: readDemoRecords(t)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, row := range r.Rows {
		if row.Metric != results.MetricTPS {
			continue
		}
		base := row.Stats[0]
		for _, st := range row.Stats[1:] {
			ratio := 100 * (st.Geomean/st.BaseGeomean - 1)
			if math.Abs(ratio-st.DeltaPct) > 1e-9 || math.Abs(st.BaseGeomean-base.Geomean) > 1e-9*base.Geomean {
				t.Errorf("%s %s: geomeans %.6g/%.6g = %+.4f%%, Δ %+.4f%%, baseline's geomean %.6g", row.Config, st.Commit, st.Geomean, st.BaseGeomean, ratio, st.DeltaPct, base.Geomean)
			}
			checked++
		}
		b, _ := json.Marshal(base)
		if !strings.Contains(string(b), `"geomean":`) || strings.Contains(string(b), "base_geomean") {
			t.Errorf("baseline's Stat JSON %s: want a geomean and no base_geomean", b)
		}
	}
	if checked == 0 {
		t.Fatal("no tps row checked")
	}
}

// TestDesignFor: noise between cells asks for short cells and more of
// them; noise within cells for long ones; the design's interval fits
// the bar (at the equivalence level, 90 %) with the margin that answers
// 9 runs in 10, one repeat fewer
// does not.
func TestDesignFor(t *testing.T) {
	between := Components{Within: Component{Pct: 0.4}, Paired: Component{Pct: 6}, Seconds: 3, CellPct: 4.2}
	within := Components{Within: Component{Pct: 20}, Paired: Component{Pct: 6}, Seconds: 3, CellPct: 0.1}
	b, ok := DesignFor([]Components{between, between}, 2, 0.01, 1.1, 2)
	w, ok2 := DesignFor([]Components{within, within}, 2, 0.01, 1.1, 2)
	if !ok || !ok2 {
		t.Fatal("no design")
	}
	t.Logf("between cells: %+v; within: %+v", b, w)
	// Short, but never shorter than the 3 s cells the noise was
	// measured in (the model extrapolates down badly).
	if b.Seconds != 3 || w.Seconds < 10 {
		t.Errorf("between-cell noise: %+v, within-cell: %+v; want the measured 3 s cells for the first, long for the second", b, w)
	}
	fits := func(c Components, d RunDesign, n int) bool {
		sd := c.SecondsFor(d.Seconds) / 100
		return (tq(1-EquivalenceAlpha(0.01), float64(2*(n-1)))+zq(0.95))*math.Sqrt(2*sd*sd/float64(n))/2 <= math.Log1p(0.02)
	}
	if !fits(between, b, b.Repeats) || fits(between, b, b.Repeats-1) {
		t.Errorf("design %+v: not the least repeats whose interval fits ±2 %%", b)
	}
	if _, ok := DesignFor([]Components{{Paired: Component{Pct: math.NaN()}, CellPct: math.NaN()}}, 2, 0.01, 1, 2); ok {
		t.Error("a design from no spread at all")
	}
}

// TestNoiseWithinInJSON: report.json, whose cells are read without
// their progress reports (LoadFor), carries the variance components the
// markdown report's analysis has, read with them: the within-cell part
// too, for the recorded runs. It was null (NaN) before records kept a
// summary of their per-second TPS.
func TestNoiseWithinInJSON(t *testing.T) {
	for _, dir := range []string{"../demo/testdata/run", "../results/testdata/v1"} {
		out := filepath.Join(t.TempDir(), "report.md")
		md, err := LoadFor("md", out, dir)
		if err != nil {
			t.Fatal(err)
		}
		if slices.IndexFunc(md.Records, func(r results.Record) bool { return len(r.Progress) > 0 }) < 0 {
			t.Fatalf("%s: the markdown report's records have no progress", dir)
		}
		rep, err := AnalyzeOutput(md, Options{}, io.Discard, "md", out, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		withins := 0
		for _, c := range rep.Noise {
			if isFinite(c.Within.Pct) && c.Within.DF > 0 {
				withins++
			}
		}
		if withins == 0 {
			t.Fatalf("%s: no within-cell component in the markdown report's analysis: %+v", dir, rep.Noise)
		}
		want, err := marshalJSON(rep.Noise)
		if err != nil {
			t.Fatal(err)
		}
		out = filepath.Join(t.TempDir(), "report.json")
		in, err := LoadFor("json", out, dir)
		if err != nil {
			t.Fatal(err)
		}
		if slices.IndexFunc(in.Records, func(r results.Record) bool { return r.Progress != nil }) >= 0 {
			t.Fatalf("%s: report.json's records were read with their progress", dir)
		}
		if _, err := AnalyzeOutput(in, Options{}, io.Discard, "json", out, io.Discard); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Noise json.RawMessage `json:"noise"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got.Noise); err != nil {
			t.Fatalf("%s: report.json's noise %q: %v", dir, got.Noise, err)
		}
		if compact.String() != string(want) {
			t.Errorf("%s: report.json's noise\n%s\nwant the markdown report's\n%s", dir, compact.String(), want)
		}
	}
}

// TestDesignForAutocorrelatedSeconds: a design never lengthens cells
// past those its noise was measured in without the seconds'
// autocorrelation (Rho unknown: cells under minRhoSeconds), and with it
// measured, correlated seconds make a long cell worth less than
// independent ones would: the within part falls slower than 1/√T.
func TestDesignForAutocorrelatedSeconds(t *testing.T) {
	within := Components{Within: Component{Pct: 20}, Paired: Component{Pct: 6}, Seconds: 3, CellPct: 0.1, Rho: math.NaN()}
	if d, ok := DesignFor([]Components{within, within}, 2, 0.01, 1.1, 2); !ok || d.Seconds != 3 {
		t.Errorf("rho unknown: %+v, %v; want the measured 3 s cells", d, ok)
	}
	within.Seconds, within.Rho = 10, 0
	indep, _ := DesignFor([]Components{within, within}, 2, 0.01, 1.1, 2)
	within.Rho = 0.7
	corr, _ := DesignFor([]Components{within, within}, 2, 0.01, 1.1, 2)
	if indep.Seconds <= 10 || corr.Minutes <= indep.Minutes {
		t.Errorf("independent seconds: %+v; correlated (ρ 0.7): %+v; want longer cells than measured, and correlated ones dearer", indep, corr)
	}
	if f := ar1Factor(0.7, 3); math.Abs(f-(1+2*(2.0/3*0.7+1.0/3*0.49))) > 1e-12 {
		t.Errorf("ar1Factor(0.7, 3) = %v", f)
	}
	// r₁ of independent seconds in 10 s cells is about −1/n: corrected to
	// about 0, and never below.
	s := spread{ss: 1, lag: -0.1}
	if r := s.rho(10); r != 0 {
		t.Errorf("rho of r₁ = −0.1 from 10 s cells: %v; want 0", r)
	}
	if r := (spread{ss: 1, lag: 0.5}).rho(3); !math.IsNaN(r) {
		t.Errorf("rho from 3 s cells: %v; want unknown", r)
	}
}

// TestPoolComponents: runs pool by their degrees of freedom, so one
// noisy 10-block run does not decide a design against a long one; an
// unknown Rho or CellPct takes no weight; Seconds is the longest.
func TestPoolComponents(t *testing.T) {
	short := Components{Config: "x", Metric: "tps", Seconds: 3, Within: Component{Pct: 8.6, DF: 36}, Paired: Component{Pct: 11.6, DF: 9}, CellPct: 6.5, Rho: math.NaN()}
	long := Components{Config: "x", Metric: "tps", Seconds: 20, Within: Component{Pct: 4, DF: 2000}, Paired: Component{Pct: 5, DF: 105}, CellPct: 3, Rho: 0.6}
	other := Components{Config: "y", Metric: "tps", Seconds: 3, Within: Component{Pct: 2, DF: 10}, Paired: Component{Pct: 4, DF: 9}, CellPct: math.NaN(), Rho: math.NaN()}
	got := PoolComponents([][]Components{{short, other}, {long}})
	if len(got) != 2 || got[0].Config != "x" || got[1].Config != "y" {
		t.Fatalf("pooled %+v", got)
	}
	x := got[0]
	want := math.Sqrt((11.6*11.6*9 + 5*5*105) / 114)
	if math.Abs(x.Paired.Pct-want) > 1e-9 || x.Paired.DF != 114 || !(x.Paired.Lo < want && want < x.Paired.Hi) {
		t.Errorf("paired %+v; want %.3f on 114 df", x.Paired, want)
	}
	if w := math.Sqrt((6.5*6.5*9 + 3*3*105) / 114); math.Abs(x.CellPct-w) > 1e-9 || x.Rho != 0.6 || x.Seconds != 20 {
		t.Errorf("cell %.3f (want %.3f), rho %v, seconds %v", x.CellPct, w, x.Rho, x.Seconds)
	}
	if y := got[1]; !math.IsNaN(y.CellPct) || !math.IsNaN(y.Rho) || y.Paired.Pct != 4 {
		t.Errorf("a run alone: %+v", y)
	}
}

// TestChi2qLargeDF: the χ² quantiles of the within-cell component's
// degrees of freedom, which long cells make thousands (40 cells of
// 60 s: 2 360), without mathx.GammaInc's panic, continuous where the
// approximation takes over.
func TestChi2qLargeDF(t *testing.T) {
	for _, p := range []float64{0.025, 0.975} {
		below, above := chi2q(p, 200), chi2q(p, 200.0001)
		if math.Abs(below/above-1) > 1e-4 {
			t.Errorf("χ²(%v) at 200 df: %v by bisection, %v approximated", p, below, above)
		}
		for _, df := range []float64{2036, 5900, 1e6} {
			if q := chi2q(p, df); !(q > 0) || math.Abs(q/df-1) > 0.1 {
				t.Errorf("χ²(%v, %v df) = %v", p, df, q)
			}
		}
	}
	c := spread{ss: 2036 * 0.04 * 0.04, df: 2036}.component()
	if !(c.Lo < 4 && 4 < c.Hi) || math.Abs(c.Pct-4) > 1e-9 {
		t.Errorf("component on 2 036 df: %+v", c)
	}
}
