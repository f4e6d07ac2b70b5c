package analysis

import (
	"iter"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// laidOut is a plot whose plotters (Add) give gonum's layout only the
// glyph boxes that can decide it. Plot.Draw collects every glyph box of
// every plotter, twice, and keeps the left-, right-, bottom- and
// top-most of them, the first of equals (leftMost, rightMost, …): at
// 10⁵ cells a slice of every point of 500 lines per plot, a quarter of
// what writing the plots allocated. The plotters are added hiding their
// boxes, and one plotter added first, drawing nothing, gives the boxes
// of all of them in their order, but of the boxes of one rectangle only
// those at the extreme coordinates: a box's place on any canvas grows
// with its normalized coordinate, so no other box of its rectangle can
// be kept. Any box within 1e-9 of an extreme stays (a canvas point is
// 10⁻¹³ of its width: such a box might round to the extreme's place,
// and then the first wins). The layout, and so every byte of the plot,
// is what gonum makes of all the boxes (TestLaidOutDrawsAsGonum).
type laidOut struct {
	*plot.Plot
	boxers  []plot.GlyphBoxer
	scratch []plot.GlyphBox // glyphBoxes'
	path    vg.Path         // plotLine's
	// kept are the boxes glyphBoxes gave for the axes' ranges keptFor:
	// Plot.Draw asks for them four times (padX and padY, twice), its
	// axes and plotters unchanged, and they were a third of drawing
	// the plots of 10⁵ cells.
	kept    []plot.GlyphBox
	keptFor [5]float64 // the axes' ranges and the number of plotters
	hasKept bool
}

func newLaidOut() *laidOut {
	l := &laidOut{Plot: plot.New()}
	l.Plot.Add(glyphBoxes{l})
	return l
}

// Add adds ps to the plot, their glyph boxes to the layout's.
func (l *laidOut) Add(ps ...plot.Plotter) {
	for _, d := range ps {
		if b, ok := d.(plot.GlyphBoxer); ok {
			l.boxers = append(l.boxers, b)
			if r, ok := d.(plot.DataRanger); ok {
				d = unboxedRanger{d, r, l}
			} else {
				d = unboxed{d}
			}
		}
		l.Plot.Add(d)
	}
}

// unboxed is a plotter without its glyph boxes; unboxedRanger one with
// its data range.
type unboxed struct{ d plot.Plotter }

func (u unboxed) Plot(c draw.Canvas, p *plot.Plot) { u.d.Plot(c, p) }

type unboxedRanger struct {
	d plot.Plotter
	r plot.DataRanger
	l *laidOut
}

func (u unboxedRanger) Plot(c draw.Canvas, p *plot.Plot) {
	if l, ok := u.d.(*plotter.Line); !ok || !u.l.plotLine(l, c, p) {
		u.d.Plot(c, p)
	}
}

// plotLine draws a plain line (no fill, no steps) within the canvas as
// Line.Plot draws it, but in a path reused from line to line (a line's
// points are its clipped line then: Line.Plot clips it four times over,
// in new slices, and draws it in a path of its own, a fifth of what
// writing the plots of 10⁵ cells allocated). False where it did not
// draw the line, which Line.Plot is then to draw.
func (l *laidOut) plotLine(pts *plotter.Line, c draw.Canvas, p *plot.Plot) bool {
	if pts.FillColor != nil || pts.StepStyle != plotter.NoStep {
		return false
	}
	return l.strokeLine(pts.XYs, pts.LineStyle, c, p)
}

// strokeLine is plotLine of a plain line of points xys and style sty.
func (l *laidOut) strokeLine(xys plotter.XYs, sty draw.LineStyle, c draw.Canvas, p *plot.Plot) bool {
	trX, trY := p.Transforms(&c)
	l.path = l.path[:0]
	for i, xy := range xys {
		pt := vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
		if !c.Contains(pt) {
			return false
		}
		if i == 0 {
			l.path.Move(pt)
		} else {
			l.path.Line(pt)
		}
	}
	// One point is no line: the clipped lines are none.
	if sty.Width != 0 && len(xys) > 1 {
		c.SetLineStyle(sty)
		c.Stroke(l.path)
	}
	return true
}

func (u unboxedRanger) DataRange() (xmin, xmax, ymin, ymax float64) { return u.r.DataRange() }

// glyphBoxes is the plotter that gives a laidOut's boxes.
type glyphBoxes struct{ l *laidOut }

func (glyphBoxes) Plot(draw.Canvas, *plot.Plot) {}

// GlyphBoxes returns the boxes of the plot's plotters that can be an
// extreme in Plot.Draw's layout, in their order. Of boxes alike (one
// rectangle, one coordinate) only the first can be kept, so the later
// ones go too: they are the lines' common start and end.
func (g glyphBoxes) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	l := g.l
	axes := [5]float64{p.X.Min, p.X.Max, p.Y.Min, p.Y.Max, float64(len(l.boxers))}
	if !l.hasKept || l.keptFor != axes {
		l.kept, l.keptFor, l.hasKept = g.glyphBoxes(p), axes, true
	}
	// Never appended to in place.
	return l.kept[:len(l.kept):len(l.kept)]
}

// glyphBoxes computes what GlyphBoxes returns.
func (g glyphBoxes) glyphBoxes(p *plot.Plot) []plot.GlyphBox {
	var ext []extremes
	of := func(r vg.Rectangle) *extremes {
		for i := range ext {
			if ext[i].r == r {
				return &ext[i]
			}
		}
		ext = append(ext, extremes{r: r, minX: math.Inf(1), maxX: math.Inf(-1), minY: math.Inf(1), maxY: math.Inf(-1)})
		return &ext[len(ext)-1]
	}
	// One slice for the boxes of each plotter in turn, kept for the
	// next call (Plot.Draw makes two).
	scratch := &g.l.scratch
	for b := range g.boxes(scratch, p) {
		if math.IsNaN(b.X) || math.IsNaN(b.Y) || len(ext) > 64 {
			// No order, or many rectangles: gonum's own.
			var all []plot.GlyphBox
			for _, bx := range g.l.boxers {
				all = append(all, bx.GlyphBoxes(p)...)
			}
			return all
		}
		// Plot.GlyphBoxes drops a box outside the data area in a
		// dimension it has a size in.
		if inArea(b) {
			e := of(b.Rectangle)
			e.minX, e.maxX = min(e.minX, b.X), max(e.maxX, b.X)
			e.minY, e.maxY = min(e.minY, b.Y), max(e.maxY, b.Y)
		}
	}
	var kept []plot.GlyphBox
	for b := range g.boxes(scratch, p) {
		if !inArea(b) {
			continue
		}
		e, size := of(b.Rectangle), b.Size()
		edgeX := size.X > 0 && (b.X <= e.minX+edgeNear || b.X >= e.maxX-edgeNear) && e.first(&e.xs, b.X)
		edgeY := size.Y > 0 && (b.Y <= e.minY+edgeNear || b.Y >= e.maxY-edgeNear) && e.first(&e.ys, b.Y)
		if edgeX || edgeY {
			kept = append(kept, b)
		}
	}
	return kept
}

// boxes yields the boxes of the laidOut's plotters in their order, a
// plotter's (or a line's of cellLines) at a time in *scratch.
func (g glyphBoxes) boxes(scratch *[]plot.GlyphBox, p *plot.Plot) iter.Seq[plot.GlyphBox] {
	return func(yield func(plot.GlyphBox) bool) {
		each := func(bs []plot.GlyphBox) bool {
			for _, b := range bs {
				if !yield(b) {
					return false
				}
			}
			return true
		}
		for _, bx := range g.l.boxers {
			cl, ok := bx.(*cellLines)
			if !ok {
				if !each(boxesOf(scratch, bx, p)) {
					return
				}
				continue
			}
			for xys, sty := range cl.all() {
				*scratch = appendBoxes((*scratch)[:0], xys, 0.5*sty.Width, p)
				if !each(*scratch) {
					return
				}
			}
		}
	}
}

// boxesOf returns bx.GlyphBoxes(p), those of lines and scatters (of
// one glyph style) made as gonum makes them but in *scratch, valid until
// the next call: a slice of a box per point of every line, twice, was a
// fifth of what writing the plots of 10⁵ cells allocated.
func boxesOf(scratch *[]plot.GlyphBox, bx plot.GlyphBoxer, p *plot.Plot) []plot.GlyphBox {
	var xys plotter.XYs
	var r vg.Length
	switch b := bx.(type) {
	case *plotter.Line:
		xys, r = b.XYs, 0.5*b.LineStyle.Width
	case *plotter.Scatter:
		if b.GlyphStyleFunc != nil {
			return bx.GlyphBoxes(p)
		}
		xys, r = b.XYs, b.GlyphStyle.Radius
	default:
		return bx.GlyphBoxes(p)
	}
	*scratch = appendBoxes(slices.Grow((*scratch)[:0], len(xys)), xys, r, p)
	return *scratch
}

// appendBoxes appends the glyph boxes of points xys of radius r, as a
// Line's or a Scatter's.
func appendBoxes(buf []plot.GlyphBox, xys plotter.XYs, r vg.Length, p *plot.Plot) []plot.GlyphBox {
	rect := vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: +r, Y: +r}}
	for _, xy := range xys {
		buf = append(buf, plot.GlyphBox{X: p.X.Norm(xy.X), Y: p.Y.Norm(xy.Y), Rectangle: rect})
	}
	return buf
}

// cellLines are many lines of a plot as one plotter (tps-time's, a line
// per cell): each is drawn, ranged and boxed as the plotter.Line of its
// points and style would be, added in its turn (TestCellLinesDrawAsLines).
// A Line per cell, its copy of the points and its place among the
// plot's plotters were a third of what writing the plots of 10⁵ cells
// allocated.
type cellLines struct {
	l      *laidOut
	xys    plotter.XYs      // the lines' points, one line after another
	ends   []int            // where each line's points end in xys
	style  []uint16         // each line's style, in styles
	styles []draw.LineStyle // the lines' styles (one a commit: 56 bytes a line were 6 MB)
}

// add adds a line of style styles[sty], or returns the error
// plotter.NewLine would.
func (cl *cellLines) add(xys plotter.XYer, sty int) error {
	for i := range xys.Len() {
		x, y := xys.XY(i)
		if err := plotter.CheckFloats(x, y); err != nil {
			cl.xys = cl.xys[:cl.end()]
			return err
		}
		cl.xys = append(cl.xys, plotter.XY{X: x, Y: y})
	}
	cl.ends = append(cl.ends, len(cl.xys))
	cl.style = append(cl.style, uint16(sty))
	return nil
}

// end is where the last line's points end.
func (cl *cellLines) end() int {
	if len(cl.ends) == 0 {
		return 0
	}
	return cl.ends[len(cl.ends)-1]
}

// all yields each line's points and style, in order.
func (cl *cellLines) all() iter.Seq2[plotter.XYs, draw.LineStyle] {
	return func(yield func(plotter.XYs, draw.LineStyle) bool) {
		start := 0
		for i, end := range cl.ends {
			if !yield(cl.xys[start:end:end], cl.styles[cl.style[i]]) {
				return
			}
			start = end
		}
	}
}

func (cl *cellLines) Plot(c draw.Canvas, p *plot.Plot) {
	for xys, sty := range cl.all() {
		if !cl.l.strokeLine(xys, sty, c, p) {
			(&plotter.Line{XYs: xys, LineStyle: sty}).Plot(c, p)
		}
	}
}

// DataRange is what Plot.Add makes of the lines' ranges (XYRange's,
// folded by math.Min and math.Max).
func (cl *cellLines) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, xy := range cl.xys[:cl.end()] {
		xmin, xmax, ymin, ymax = math.Min(xmin, xy.X), math.Max(xmax, xy.X), math.Min(ymin, xy.Y), math.Max(ymax, xy.Y)
	}
	return xmin, xmax, ymin, ymax
}

func (cl *cellLines) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	var all []plot.GlyphBox
	for xys, sty := range cl.all() {
		all = append(all, (&plotter.Line{XYs: xys, LineStyle: sty}).GlyphBoxes(p)...)
	}
	return all
}

// edgeNear is how near an extreme coordinate a box can be and still
// round to the extreme's place on a canvas.
const edgeNear = 1e-9

// extremes are the extreme coordinates of the boxes of one rectangle,
// and the coordinates near them already given, in x and y.
type extremes struct {
	r                      vg.Rectangle
	minX, maxX, minY, maxY float64
	xs, ys                 []float64
}

// first is whether v is not in seen, which it is after.
func (e *extremes) first(seen *[]float64, v float64) bool {
	if slices.Contains(*seen, v) {
		return false
	}
	*seen = append(*seen, v)
	return true
}

// inArea is whether Plot.GlyphBoxes keeps b.
func inArea(b plot.GlyphBox) bool {
	s := b.Size()
	return (s.X <= 0 || b.X >= 0 && b.X <= 1) && (s.Y <= 0 || b.Y >= 0 && b.Y <= 1)
}
