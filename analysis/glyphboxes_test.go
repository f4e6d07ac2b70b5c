package analysis

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestLaidOutDrawsAsGonum draws plots of many lines, points and error
// bars (lines of one start and end, values a rounding apart, points
// outside the axes) once with gonum's layout of every glyph box and its
// Line.Plot, and once with laidOut's: the SVGs are the same bytes, and
// laidOut gives the layout fewer boxes.
func TestLaidOutDrawsAsGonum(t *testing.T) {
	dir := t.TempDir()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var ps []plot.Plotter
		for i := range 3 + rng.IntN(60) {
			n := 2 + rng.IntN(30)
			xys := make(plotter.XYs, n)
			for j := range xys {
				x, y := float64(j*5), 1000+100*rng.NormFloat64()
				switch rng.IntN(6) {
				case 0:
					x = math.Nextafter(x, math.Inf(1)) // a rounding from its neighbours'
				case 1:
					y = 1000
				case 2:
					y = -50 * rng.Float64() // below the y axis, cut at 0
				}
				xys[j] = plotter.XY{X: x, Y: y}
			}
			switch i % 3 {
			case 0:
				l, err := plotter.NewLine(xys)
				if err != nil {
					t.Fatal(err)
				}
				l.Width = vg.Points(float64(1 + rng.IntN(2)))
				ps = append(ps, l)
			case 1:
				sc, err := plotter.NewScatter(xys)
				if err != nil {
					t.Fatal(err)
				}
				sc.GlyphStyle.Radius = vg.Points(float64(1 + rng.IntN(4)))
				ps = append(ps, sc)
			default:
				errs := make(plotter.YErrors, n)
				for j := range errs {
					errs[j].Low, errs[j].High = 50*rng.Float64(), 50*rng.Float64()
				}
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYs
					plotter.YErrors
				}{xys, errs})
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, eb)
			}
		}
		// Lines plotLine draws (within the axes; of one point) beside
		// those it leaves to Line.Plot.
		for _, xys := range []plotter.XYs{{{X: 5, Y: 500}, {X: 10, Y: 900}, {X: 20, Y: 700}}, {{X: 7, Y: 800}}} {
			l, err := plotter.NewLine(xys)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, l)
		}
		gonum, ours := plot.New(), newLaidOut()
		for _, p := range []*plot.Plot{gonum, ours.Plot} {
			p.Title.Text = "seed"
			p.Y.Min = 0
			if seed%2 == 1 {
				p.X.Min, p.X.Max = 3, 40 // points outside the x axis too
			}
		}
		gonum.Add(ps...)
		ours.Add(ps...)
		a, b := filepath.Join(dir, "gonum.svg"), filepath.Join(dir, "ours.svg")
		if err := save(gonum, a); err != nil {
			t.Fatal(err)
		}
		if err := save(ours.Plot, b); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: laidOut's SVG differs from gonum's (%d and %d bytes)", seed, len(got), len(want))
		}
		all, given := len(gonum.GlyphBoxes(gonum)), len(ours.GlyphBoxes(ours.Plot))
		if seed == 0 && given >= all {
			t.Errorf("laidOut gives %d glyph boxes of %d", given, all)
		}
	}
}

// TestCellLinesDrawAsLines draws plots of many lines (of one style or
// several, in and beyond the axes, of one point) once as gonum draws a
// plotter.Line per line, and once as one cellLines in a laidOut (the
// tps-time plots): the SVGs are the same bytes. A point NewLine refuses
// cellLines refuses with the same error, the line left out.
func TestCellLinesDrawAsLines(t *testing.T) {
	dir := t.TempDir()
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		gonum, ours := plot.New(), newLaidOut()
		lines := &cellLines{l: ours}
		for i := range 1 + rng.IntN(80) {
			xys := make(plotter.XYs, 1+rng.IntN(6))
			for j := range xys {
				xys[j] = plotter.XY{X: float64(5 * j), Y: 1000 + 100*rng.NormFloat64()}
				if rng.IntN(8) == 0 {
					xys[j].Y = -50 * rng.Float64() // below the y axis
				}
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				t.Fatal(err)
			}
			l.Color = faded(palette[i%3])
			l.Width = vg.Points(float64(1 + rng.IntN(2)))
			gonum.Add(l)
			lines.styles = append(lines.styles, l.LineStyle)
			if err := lines.add(xys, len(lines.styles)-1); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				gonum.Legend.Add("a", l)
				ours.Legend.Add("a", &plotter.Line{LineStyle: l.LineStyle})
			}
		}
		ours.Add(lines)
		for _, p := range []*plot.Plot{gonum, ours.Plot} {
			p.Title.Text = "seed"
			fromZero(p)
			if seed%2 == 1 {
				p.X.Min, p.X.Max = 3, 20 // lines beyond the x axis too
			}
		}
		a, b := filepath.Join(dir, "gonum.svg"), filepath.Join(dir, "ours.svg")
		if err := save(gonum, a); err != nil {
			t.Fatal(err)
		}
		if err := save(ours.Plot, b); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: cellLines' SVG differs from gonum's lines' (%d and %d bytes)", seed, len(got), len(want))
		}
	}
	lines := &cellLines{styles: []draw.LineStyle{plotter.DefaultLineStyle}}
	for _, bad := range []plotter.XYs{{{X: 1, Y: 2}, {X: math.NaN(), Y: 3}}, {{X: 1, Y: math.Inf(1)}}} {
		_, want := plotter.NewLine(bad)
		if err := lines.add(bad, 0); err == nil || err != want {
			t.Errorf("add(%v) = %v, want NewLine's %v", bad, err, want)
		}
	}
	if len(lines.xys) != 0 || len(lines.ends) != 0 {
		t.Errorf("refused lines kept: %v %v", lines.xys, lines.ends)
	}
}

// TestLaidOutKeepsBoxesOfItsAxes: the glyph boxes a laidOut keeps from
// one call to the next are those computed anew for the axes' ranges and
// plotters of the call, and appending to them changes none kept.
func TestLaidOutKeepsBoxesOfItsAxes(t *testing.T) {
	l := newLaidOut()
	xys := plotter.XYs{{X: 1, Y: 10}, {X: 2, Y: 30}, {X: 3, Y: 20}}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		t.Fatal(err)
	}
	l.Add(sc)
	g := glyphBoxes{l}
	check := func(what string) {
		t.Helper()
		var added [][]plot.GlyphBox
		for i := range 3 {
			got := g.GlyphBoxes(l.Plot)
			if want := g.glyphBoxes(l.Plot); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %v, computed anew %v", what, got, want)
			}
			added = append(added, append(got, plot.GlyphBox{X: float64(-i)}))
		}
		for i, a := range added {
			if a[len(a)-1].X != float64(-i) {
				t.Fatalf("%s: a box appended to the boxes of call %d became %v", what, i, a[len(a)-1])
			}
		}
	}
	l.X.Min, l.X.Max, l.Y.Min, l.Y.Max = 0, 4, 0, 40
	check("first axes")
	l.Y.Max = 25 // the second point out of the area
	check("y axis shortened")
	l.X.Min = 2
	check("x axis moved")
	line, err := plotter.NewLine(plotter.XYs{{X: 2, Y: 1}, {X: 3.5, Y: 24}})
	if err != nil {
		t.Fatal(err)
	}
	l.Add(line)
	check("a line added")
}
