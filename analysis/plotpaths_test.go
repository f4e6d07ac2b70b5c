package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgabtest/abtest/results"
)

// svgPath is a path element of an SVG from vgsvg: its data and style.
type svgPath struct{ d, style string }

var svgPathRE = regexp.MustCompile(`<path d="([^"]*)"\s*style="([^"]*)"`)

// svgPaths are svg's paths whose style strokes (or fills) in colour, a
// vgsvg colour string such as "#1F77B4".
func svgPaths(svg, colour string) []svgPath {
	var out []svgPath
	for _, m := range svgPathRE.FindAllStringSubmatch(svg, -1) {
		if strings.Contains(m[2], ":"+colour) {
			out = append(out, svgPath{m[1], m[2]})
		}
	}
	return out
}

// timeRun is a run of one configuration whose commits each have cells
// cells of 3–5 progress reports; started says whether the cells' starts
// are known (the plot's x is then the run's measured seconds).
func timeRun(commits []string, cells int, started bool, tps func(cell, k int) float64) *Input {
	cfg := results.Config{Workload: "select1", Clients: 4}
	plan := &results.Plan{Version: results.Version, Baseline: commits[0], Configs: []results.Config{cfg}, Metrics: results.Builtin}
	for _, c := range commits {
		plan.Commits = append(plan.Commits, results.Commit{Label: c})
	}
	in := &Input{Plan: plan}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range cells {
		for _, commit := range commits {
			var progress []results.Progress
			for k := range 3 + r%3 {
				progress = append(progress, results.Progress{T: float64(k + 1), TPS: tps(r, k)})
			}
			rec := results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), r+1, commit), Commit: commit, Config: cfg, Repeat: r + 1,
				Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{"tps": 1000 + float64(r%7)}), Progress: progress}
			if started {
				rec.StartedAt = at
				at = at.Add(10 * time.Second)
			}
			in.Records = append(in.Records, rec)
		}
	}
	return in
}

// TestTPSTimeOnePathPerCommit: a tps-time plot of 2 × 200 cells draws
// each commit's cells as one path of 200 lines (gonum's plotter.Line drew
// 200 paths, each with its style), whether the cells lie in run order or
// over each other; its legend is the commits' (a label with markup
// escaped).
func TestTPSTimeOnePathPerCommit(t *testing.T) {
	const label = `<script>alert(1)</script>`
	for _, started := range []bool{true, false} {
		in := timeRun([]string{"base", label}, 200, started, func(r, k int) float64 { return 1000 + float64(r%13) + 5*float64(k) })
		svg := ""
		for name, data := range drawPlots(t, in) {
			if strings.HasPrefix(name, "tps-time-") {
				svg = string(data)
			}
		}
		if svg == "" {
			t.Fatal("no tps-time plot")
		}
		if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("started %v: the label %q is not escaped text", started, label)
		}
		// Each commit's lines one path (faded, without starts, its
		// colour a shade off the palette's).
		colours := map[string]int{}
		for _, m := range svgPathRE.FindAllStringSubmatch(svg, -1) {
			if n := strings.Count(m[1], "M"); n > 1 {
				colours[m[2]] = n
			}
		}
		if len(colours) != 2 {
			t.Errorf("started %v: %d paths of more than one line, want one per commit: %v", started, len(colours), colours)
		}
		for style, n := range colours {
			if n != 200 {
				t.Errorf("started %v: a path of %d lines (%s), want 200", started, n, style)
			}
		}
	}
}

// TestTPSTimeSkipsNonFinite: progress reports of NaN or ±Inf TPS are left
// out (the line broken there), not drawn at the plot's edge nor failing
// the plots: the axis is the finite values'.
func TestTPSTimeSkipsNonFinite(t *testing.T) {
	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	in := timeRun([]string{"base", "patch"}, 4, true, func(r, k int) float64 {
		if k == 1 {
			return bad[r%3]
		}
		return 1000 + 100*float64(k)
	})
	var svg string
	for name, data := range drawPlots(t, in) {
		if strings.HasPrefix(name, "tps-time-") {
			svg = string(data)
		}
	}
	cells := svgPaths(svg, "#1F77B4")
	if len(cells) < 1 {
		t.Fatalf("no path of base's colour in\n%s", svg)
	}
	// Cells of 3, 4, 5, 3 reports, the 2nd of each NaN or Inf: a line
	// through the reports after it (of 0, 1, 2, 0 segments: a point
	// alone is no line).
	d := cells[0].d
	if m, l := strings.Count(d, "M"), strings.Count(d, "L"); m != 2 || l != 3 {
		t.Errorf("base's path has %d lines of %d segments, want 2 of 3: %s", m, l, d)
	}
	// The y axis ends just above 1400 TPS (1 470: ticks to 1200), not at
	// an infinity.
	if !strings.Contains(svg, ">1200<") || strings.Contains(svg, ">1800<") || strings.Contains(svg, "Inf") || strings.Contains(svg, "NaN") {
		t.Errorf("the axis is not the finite values': %s", svg)
	}
}

// TestM4KeepsColumnExtrema: m4 keeps of every device column the first,
// last, lowest and highest point of the line, and no more than 4 a
// column, in the line's order.
func TestM4KeepsColumnExtrema(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pts []vg.Point
	x := vg.Length(3)
	for range 20000 {
		x += vg.Length(rng.ExpFloat64() * 0.01)
		if rng.IntN(500) == 0 {
			x += 3 // a gap of columns
		}
		pts = append(pts, vg.Point{X: x, Y: vg.Length(rng.NormFloat64() * 50)})
	}
	full := append([]vg.Point(nil), pts...)
	reduced := m4(pts, 3)
	type ext struct{ lo, hi vg.Length }
	extrema := func(ps []vg.Point) map[int]ext {
		out := map[int]ext{}
		for _, p := range ps {
			c := int(math.Floor(float64((p.X - 3) / m4Column)))
			e, ok := out[c]
			if !ok {
				e = ext{p.Y, p.Y}
			}
			out[c] = ext{min(e.lo, p.Y), max(e.hi, p.Y)}
		}
		return out
	}
	want, got := extrema(full), extrema(reduced)
	if len(got) != len(want) {
		t.Fatalf("%d columns, want %d", len(got), len(want))
	}
	for c, e := range want {
		if got[c] != e {
			t.Errorf("column %d: %v, want %v", c, got[c], e)
		}
	}
	if len(reduced) > 4*len(want) || len(reduced) < 2*len(want) {
		t.Errorf("%d points of %d in %d columns", len(reduced), len(full), len(want))
	}
	if reduced[0] != full[0] || reduced[len(reduced)-1] != full[len(full)-1] {
		t.Errorf("the line's ends moved")
	}
	// In the line's order: a subsequence of it.
	j := 0
	for _, p := range full {
		if j < len(reduced) && p == reduced[j] {
			j++
		}
	}
	if j != len(reduced) {
		t.Errorf("the reduced points are not the line's in its order (%d of %d matched)", j, len(reduced))
	}
	// Few points, a column each: all kept.
	few := []vg.Point{{X: 0, Y: 1}, {X: 1, Y: 5}, {X: 2, Y: 2}}
	if got := m4(append([]vg.Point(nil), few...), 0); len(got) != 3 {
		t.Errorf("3 points in 3 columns reduced to %v", got)
	}
}

// ringsSVG draws xys as rings of palette[0] and radius 2.5 pt in a plot
// of the reports' size and returns its SVG.
func ringsSVG(t *testing.T, xys plotter.XYs, legend string) string {
	t.Helper()
	p := plot.New()
	r := newRings(xys, draw.GlyphStyle{Color: palette[0], Radius: vg.Points(2.5)})
	p.Add(r)
	if legend != "" {
		p.Legend.Add(legend, r)
	}
	path := filepath.Join(t.TempDir(), "rings.svg")
	if err := save(p, path); err != nil {
		t.Fatal(err)
	}
	return readFile(t, path)
}

// TestRingsOnePath: N distinct values are N rings (two arcs each) in one
// path, of RingGlyph's width; coincident ones, or ones 0.01 pt apart,
// one ring; NaN and ±Inf none (and the axis is the finite values'); the
// legend's thumbnail is a ring of its own.
func TestRingsOnePath(t *testing.T) {
	var xys plotter.XYs
	for i := range 50 {
		xys = append(xys, plotter.XY{X: float64(i), Y: 100 + float64(i*i)})
	}
	svg := ringsSVG(t, xys, "base")
	paths := svgPaths(svg, "#1F77B4")
	if len(paths) != 2 || strings.Count(paths[0].d, "A") != 2*50 || strings.Count(paths[0].d, "M") != 50 {
		t.Fatalf("%d paths of the colour, the first %d arcs", len(paths), strings.Count(paths[0].d, "A"))
	}
	if strings.Count(paths[1].d, "A") != 2 || !strings.Contains(paths[0].style, "stroke-width:0.5") {
		t.Errorf("legend %q, style %q", paths[1].d, paths[0].style)
	}
	// Each value 5 times, 3 of them 0.03 pt off (0.25 of an axis of
	// 2 500 over ~260 pt, 1e-4 of one of 50 over ~400), and NaN/Inf:
	// still 50 rings.
	var dup plotter.XYs
	for _, p := range xys {
		dup = append(dup, p, p, plotter.XY{X: p.X, Y: p.Y + 0.25}, plotter.XY{X: p.X + 1e-4, Y: p.Y}, plotter.XY{X: p.X, Y: p.Y - 0.25})
	}
	dup = append(dup, plotter.XY{X: 3, Y: math.NaN()}, plotter.XY{X: 3, Y: math.Inf(1)}, plotter.XY{X: math.Inf(-1), Y: 3})
	svg = ringsSVG(t, dup, "base")
	paths = svgPaths(svg, "#1F77B4")
	if len(paths) != 2 {
		t.Fatalf("%d paths of the colour", len(paths))
	}
	if n := strings.Count(paths[0].d, "A"); n != 2*50 {
		t.Errorf("coincident rings: %d rings, want 50", n/2)
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") || !strings.Contains(svg, ">2500<") {
		t.Errorf("a non-finite value reached the drawing or the axis")
	}
}

// TestLookLikeGonums: rings draw as draw.RingGlyph draws for
// plotter.Scatter, polylines as plotter.Line draws (points a column
// apart or more): the same path data in one path, the same style, the
// plot's range and padding (GlyphBoxes) the same, on axes from the data,
// narrower than it, or a log one.
func TestLookLikeGonums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var xys plotter.XYs
	for i := range 60 {
		xys = append(xys, plotter.XY{X: float64(i) + rng.Float64()/2, Y: 1 + 100*rng.Float64()})
	}
	xys[15].Y, xys[25].Y = 20, 80
	axes := map[string]func(p *plot.Plot){
		"data": func(*plot.Plot) {},
		// Points beyond the axes, and on their ends (padded for).
		"narrow": func(p *plot.Plot) {
			p.X.Min, p.X.Max = xys[10].X, xys[40].X
			p.Y.Min, p.Y.Max = 20, 80
		},
		"log": func(p *plot.Plot) { p.Y.Scale = plot.LogScale{} },
	}
	draw1 := func(name string, ps ...plot.Plotter) []svgPath {
		p := plot.New()
		p.Add(ps...)
		axes[name](p)
		path := filepath.Join(t.TempDir(), "p.svg")
		if err := save(p, path); err != nil {
			t.Fatal(err)
		}
		return svgPaths(readFile(t, path), "#1F77B4")
	}
	joined := func(ps []svgPath) string {
		var d strings.Builder
		for _, p := range ps {
			d.WriteString(p.d)
		}
		return d.String()
	}
	for name := range axes {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			t.Fatal(err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(2.5), Shape: draw.RingGlyph{}}
		old := draw1(name, sc)
		now := draw1(name, newRings(xys, draw.GlyphStyle{Color: palette[0], Radius: vg.Points(2.5)}))
		if len(old) < 10 || len(now) != 1 || now[0].d != joined(old) || now[0].style != old[0].style {
			t.Errorf("%s axes: rings %d paths %q, want the scatter's %d in one path %q", name, len(now), joined(now), len(old), joined(old))
		}
		var lines []plot.Plotter
		pl := &polylines{LineStyle: plotter.DefaultLineStyle}
		pl.Color = palette[0]
		for k := 0; k < len(xys); k += 20 {
			l, err := plotter.NewLine(xys[k : k+20])
			if err != nil {
				t.Fatal(err)
			}
			l.Color = palette[0]
			lines = append(lines, l)
			pl.add(xys[k : k+20])
		}
		old, now = draw1(name, lines...), draw1(name, pl)
		if len(old) < 2 || len(now) != 1 || now[0].d != joined(old) || now[0].style != old[0].style {
			t.Errorf("%s axes: polylines %v, want the lines' %v in one path", name, now, old)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
