package analysis

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plotters that draw many marks of one style as one path, one Stroke,
// on gonum's own SVG canvas: the tps-time plots' lines (a commit's cells)
// and the repeats' rings (a commit's values). gonum's Line and Scatter
// stroke each line or ring alone, an SVG element with its own style.
// Measured on the 100 000-cell generator's run (abtest analyze --format
// md, 284 plots, 2 cores, alternated 3×): 3.4–3.6 → 2.5–2.6 user CPU-s,
// 2.1–2.2 → 1.6 s wall, the output step 1.5 → 0.8 CPU-s, and the plots
// 31 → 11 MB (what a browser showing report.md loads).

// polylines is lines of one style drawn as one path: a MoveTo at each
// line's start. Non-finite points are left out, the line broken there.
// Points a device column (m4Column) holds are reduced to its first,
// lowest, highest and last (M4: Jugel et al., VLDB 2014), which draws
// the same pixels.
type polylines struct {
	xys    plotter.XYs
	starts []int // where each line begins in xys
	draw.LineStyle
}

// add appends a line through xys's points.
func (l *polylines) add(xys plotter.XYer) {
	l.starts = append(l.starts, len(l.xys))
	for i := range xys.Len() {
		x, y := xys.XY(i)
		l.xys = append(l.xys, plotter.XY{X: x, Y: y})
	}
}

// line is the i-th line's points.
func (l *polylines) line(i int) plotter.XYs {
	end := len(l.xys)
	if i+1 < len(l.starts) {
		end = l.starts[i+1]
	}
	return l.xys[l.starts[i]:end]
}

// Plot implements plot.Plotter.
func (l *polylines) Plot(c draw.Canvas, plt *plot.Plot) {
	if l.Width <= 0 {
		return
	}
	trX, trY := plt.Transforms(&c)
	var path vg.Path
	var run []vg.Point
	flush := func() {
		for _, part := range c.ClipLinesXY(m4(run, c.Min.X)) {
			if len(part) < 2 {
				continue
			}
			path.Move(part[0])
			for _, pt := range part[1:] {
				path.Line(pt)
			}
		}
		run = run[:0]
	}
	for i := range l.starts {
		for _, p := range l.line(i) {
			if !isFinite(p.X) || !isFinite(p.Y) {
				flush()
				continue
			}
			run = append(run, vg.Point{X: trX(p.X), Y: trY(p.Y)})
		}
		flush()
	}
	if len(path) > 0 {
		c.SetLineStyle(l.LineStyle)
		c.Stroke(path)
	}
}

// DataRange implements plot.DataRanger: the finite points' range.
func (l *polylines) DataRange() (xmin, xmax, ymin, ymax float64) {
	return finiteRange(l.xys)
}

// GlyphBoxes implements plot.GlyphBoxer as plotter.Line does: room for
// half the line's width round every point.
func (l *polylines) GlyphBoxes(plt *plot.Plot) []plot.GlyphBox {
	r := l.Width / 2
	return finiteBoxes(plt, l.xys, vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}})
}

// Thumbnail implements plot.Thumbnailer as plotter.Line does.
func (l *polylines) Thumbnail(c *draw.Canvas) {
	(&plotter.Line{LineStyle: l.LineStyle}).Thumbnail(c)
}

// m4Column is the width of a device column for m4: half a point, a
// pixel of a 7-inch plot shown 1.5× its size.
const m4Column vg.Length = 0.5

// m4 reduces a line's points: of each run of consecutive points in one
// column (of width m4Column, from x0) it keeps the first, the lowest,
// the highest and the last, in their order. It reuses pts.
func m4(pts []vg.Point, x0 vg.Length) []vg.Point {
	col := func(p vg.Point) float64 { return math.Floor(float64((p.X - x0) / m4Column)) }
	out := pts[:0]
	for start := 0; start < len(pts); {
		end, lo, hi := start+1, start, start
		for end < len(pts) && col(pts[end]) == col(pts[start]) {
			if pts[end].Y < pts[lo].Y {
				lo = end
			}
			if pts[end].Y > pts[hi].Y {
				hi = end
			}
			end++
		}
		keep := [4]int{start, min(lo, hi), max(lo, hi), end - 1}
		var kept [4]vg.Point
		n := 0
		for k, i := range keep {
			if k == 0 || i != keep[k-1] {
				kept[n] = pts[i]
				n++
			}
		}
		out = append(out, kept[:n]...)
		start = end
	}
	return out
}

// ringWidth is the width of a ring's line, draw.RingGlyph's.
const ringWidth = vg.Length(0.5)

// rings is points drawn as rings (draw.RingGlyph) of one style, as one
// path: a MoveTo and a full-circle Arc each. A ring whose centre is
// within ringSame of one drawn already is not drawn again (it would
// not be seen), nor one at a non-finite point.
type rings struct {
	xys plotter.XYs
	draw.GlyphStyle
}

// ringSame is how close (on x and on y) two rings' centres are the
// same ring.
const ringSame = 0.1 // points

// ringGrid is the centres of the rings drawn, by their cell of a grid of
// ringSame: a cell holds one at most, and a centre's neighbours are in
// its cell's 3 × 3.
type ringGrid map[[2]int64]vg.Point

// add adds pt unless a centre within ringSame of it is there, and says
// whether it did.
func (g ringGrid) add(pt vg.Point) bool {
	x, y := int64(math.Floor(pt.X.Points()/ringSame)), int64(math.Floor(pt.Y.Points()/ringSame))
	for dx := int64(-1); dx <= 1; dx++ {
		for dy := int64(-1); dy <= 1; dy++ {
			if q, ok := g[[2]int64{x + dx, y + dy}]; ok && math.Abs((q.X-pt.X).Points()) <= ringSame && math.Abs((q.Y-pt.Y).Points()) <= ringSame {
				return false
			}
		}
	}
	g[[2]int64{x, y}] = pt
	return true
}

// newRings is xys as rings of the colour c and radius r.
func newRings(xys plotter.XYs, c draw.GlyphStyle) *rings {
	c.Shape = draw.RingGlyph{}
	return &rings{xys: xys, GlyphStyle: c}
}

// Plot implements plot.Plotter.
func (r *rings) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	var path vg.Path
	drawn := make(ringGrid, len(r.xys))
	for _, p := range r.xys {
		if !isFinite(p.X) || !isFinite(p.Y) {
			continue
		}
		pt := vg.Point{X: trX(p.X), Y: trY(p.Y)}
		if !c.Contains(pt) || !drawn.add(pt) {
			continue
		}
		path.Move(vg.Point{X: pt.X + r.Radius, Y: pt.Y})
		path.Arc(pt, r.Radius, 0, 2*math.Pi)
		path.Close()
	}
	if len(path) > 0 {
		c.SetLineStyle(draw.LineStyle{Color: r.Color, Width: ringWidth})
		c.Stroke(path)
	}
}

// DataRange implements plot.DataRanger: the finite points' range.
func (r *rings) DataRange() (xmin, xmax, ymin, ymax float64) {
	return finiteRange(r.xys)
}

// GlyphBoxes implements plot.GlyphBoxer as plotter.Scatter does.
func (r *rings) GlyphBoxes(plt *plot.Plot) []plot.GlyphBox {
	return finiteBoxes(plt, r.xys, r.Rectangle())
}

// Thumbnail implements plot.Thumbnailer as plotter.Scatter does.
func (r *rings) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(r.GlyphStyle, c.Center())
}

// finiteRange is the range of xys's finite points; of none, +Inf to
// -Inf, which leaves a plot's axes as they were.
func finiteRange(xys plotter.XYs) (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, p := range xys {
		if !isFinite(p.X) || !isFinite(p.Y) {
			continue
		}
		xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
		ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
	}
	return xmin, xmax, ymin, ymax
}

// finiteBoxes are boxes of rect round those of xys's finite points that
// plot.Plot's padding reads: it pads for the outermost box on each side
// of the boxes inside the axes (normalised 0–1), and boxes of one size
// are outermost where their points are, so the 4 outermost points' are
// what every point's were (thousands of boxes, made twice a plot).
func finiteBoxes(plt *plot.Plot, xys plotter.XYs, rect vg.Rectangle) []plot.GlyphBox {
	var boxes [4]plot.GlyphBox // left, right, bottom, top
	var found [4]bool
	outer := func(k int, b plot.GlyphBox, v, was float64, less bool) {
		if !found[k] || less && v < was || !less && v > was {
			boxes[k], found[k] = b, true
		}
	}
	for _, p := range xys {
		if !isFinite(p.X) || !isFinite(p.Y) {
			continue
		}
		b := plot.GlyphBox{X: plt.X.Norm(p.X), Y: plt.Y.Norm(p.Y), Rectangle: rect}
		if b.X >= 0 {
			outer(0, b, b.X, boxes[0].X, true)
		}
		if b.X <= 1 {
			outer(1, b, b.X, boxes[1].X, false)
		}
		if b.Y >= 0 {
			outer(2, b, b.Y, boxes[2].Y, true)
		}
		if b.Y <= 1 {
			outer(3, b, b.Y, boxes[3].Y, false)
		}
	}
	var out []plot.GlyphBox
	for k, b := range boxes {
		if found[k] {
			out = append(out, b)
		}
	}
	return out
}
