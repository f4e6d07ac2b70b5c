package analysis

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pgabtest/abtest/results"
)

// TestSVGCanvasIsVgsvg: every plot the reports of the fixtures draw
// (strips, TPS by clients and over time, a rate sweep with saturated
// points crossed, the demo's recorded run) is the same bytes drawn on
// newSVG as on vgsvg's canvas.
func TestSVGCanvasIsVgsvg(t *testing.T) {
	inputs := map[string]func() *Input{
		"fixture": func() *Input { return loadFixture(t) },
		"demo":    func() *Input { return load(t, "../demo/testdata/run") },
		"v1":      func() *Input { return load(t, "../results/testdata/v1") },
		"sweep":   func() *Input { return sweepInput(t, false) },
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			fast := drawPlots(t, in(), newCanvas)
			slow := drawPlots(t, in(), func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) })
			if len(fast) == 0 || len(fast) != len(slow) {
				t.Fatalf("%d plots on newSVG, %d on vgsvg", len(fast), len(slow))
			}
			for name, want := range slow {
				if got := fast[name]; !bytes.Equal(got, want) {
					t.Errorf("%s differs from vgsvg's:\n%s", name, firstDiff(got, want))
				}
			}
		})
	}
}

func load(t *testing.T, dir string) *Input {
	t.Helper()
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// drawPlots analyses in and returns its SVG plots by name, drawn on
// the canvases canvas makes.
func drawPlots(t *testing.T, in *Input, canvas func(w, h vg.Length) vg.CanvasWriterTo) map[string][]byte {
	t.Helper()
	defer func(was func(w, h vg.Length) vg.CanvasWriterTo) { newCanvas = was }(newCanvas)
	newCanvas = canvas
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := r.WritePlots(dir, dir); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

// firstDiff shows where got and want part.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return "got:  …" + string(got[from:min(len(got), i+80)]) + "\nwant: …" + string(want[from:min(len(want), i+80)])
}

// TestSVGNumsAreStrconv: numbers formatted through svgNums, recurring
// among more than it has slots (so that slots are taken over), are
// strconv's %.5g of each, whatever came before.
func TestSVGNumsAreStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, -1e300, 123456789, 0.000123456, 2, 52.635, 244.41}
	for len(pool) < 2000 {
		x := rng.Float64() * 500
		// Neighbours a bit apart: alike in their first digits.
		pool = append(pool, x, math.Nextafter(x, 1000), -x*1e-7)
	}
	nums := new(svgNums)
	for range 200000 {
		v := pool[rng.IntN(len(pool))]
		if got, want := string(nums.format(v)), strconv.FormatFloat(v, 'g', svgPrec, 64); got != want {
			t.Fatalf("%v (bits %x): %q, strconv %q", v, math.Float64bits(v), got, want)
		}
	}
}

// TestTPSTimePlotsAsAlone: tps-time plots drawn one after another, the
// points of those drawn reused for the next (lineBufs) while others are
// still drawn, are the bytes each one's is when it is the only plot.
func TestTPSTimePlotsAsAlone(t *testing.T) {
	var cfgs []results.Config
	var recs []results.Record
	for c := range 24 {
		cfg := results.Config{Workload: "select1", Clients: c + 1}
		cfgs = append(cfgs, cfg)
		for _, commit := range []string{"base", "patch"} {
			for r := range 100 {
				var progress []results.Progress
				for k := range 2 + (c+r)%5 {
					progress = append(progress, results.Progress{T: float64(k + 1), TPS: float64(1000*(c+1) + 10*k + r)})
				}
				recs = append(recs, results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), r+1, commit), Commit: commit, Config: cfg, Repeat: r + 1,
					Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{"tps": float64(1000 * (c + 1))}), Progress: progress})
			}
		}
	}
	plan := func(cfgs []results.Config) *results.Plan {
		return &results.Plan{Version: results.Version, Baseline: "base", Commits: []results.Commit{{Label: "base"}, {Label: "patch"}},
			Configs: cfgs, Metrics: results.Builtin}
	}
	all := drawPlots(t, &Input{Plan: plan(cfgs), Records: recs}, newCanvas)
	for c, cfg := range cfgs {
		name := "tps-time-" + fileSafe.ReplaceAllString(cfg.ID(), "_") + ".svg"
		alone := drawPlots(t, &Input{Plan: plan(cfgs[c : c+1]), Records: recs[200*c : 200*c+200]}, newCanvas)
		if len(alone[name]) == 0 || !bytes.Equal(all[name], alone[name]) {
			t.Fatalf("%s drawn among others differs from it drawn alone:\n%s", name, firstDiff(all[name], alone[name]))
		}
	}
}
