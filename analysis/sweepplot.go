package analysis

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgabtest/abtest/results"
)

// latencyVsRate draws latency-vs-rate-<series>.svg for each sweep with
// at least two offered rates: per commit and variables, the median p99
// latency at each offered rate, a saturated point drawn as a cross, so
// that where a commit stopped keeping up is where its line turns into
// crosses. A sweep of one rate is noted, not drawn.
func (w *plotWriter) latencyVsRate() error {
	for _, s := range w.r.Sweeps {
		path := filepath.Join(w.dir, "latency-vs-rate-"+fileSafe.ReplaceAllString(s.Series, "_")+".svg")
		lines := map[string][]SweepPoint{}
		var rates []float64
		var order []string
		for _, pt := range s.Points {
			k := strings.TrimSpace(pt.Commit + " " + pt.Vars)
			if lines[k] == nil {
				order = append(order, k)
			}
			if _, ok := pt.Medians[results.MetricLatencyP99]; ok && pt.OfferedOps > 0 {
				lines[k] = append(lines[k], pt)
				if !slices.Contains(rates, pt.OfferedOps) {
					rates = append(rates, pt.OfferedOps)
				}
			}
		}
		if len(rates) < 2 {
			w.notes = append(w.notes, fmt.Sprintf("%s: not drawn: fewer than two offered rates with a p99 latency; the points are in the sweep table", filepath.Base(path)))
			continue
		}
		p := plot.New()
		p.Title.Text = "p99 latency by offered rate"
		p.X.Label.Text = s.rateAxis()
		p.Y.Label.Text = "p99 latency, ms (median of cells)"
		var sat *plotter.Scatter
		varSets := []string{}
		for _, k := range order {
			pts := lines[k]
			if len(pts) == 0 {
				continue
			}
			// A commit's colour; a style per variables (dashes, glyph).
			col := w.colour[pts[0].Commit]
			v := pts[0].Vars
			if !slices.Contains(varSets, v) {
				varSets = append(varSets, v)
			}
			style := slices.Index(varSets, v)
			var xys, crosses plotter.XYs
			for _, pt := range pts {
				xy := plotter.XY{X: pt.OfferedOps, Y: pt.Medians[results.MetricLatencyP99]}
				xys = append(xys, xy)
				if pt.Saturated > 0 {
					crosses = append(crosses, xy)
				}
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, sc.Color, sc.GlyphStyle.Shape = col, col, glyphs[style%len(glyphs)]
			l.Dashes = dashes[style%len(dashes)]
			p.Add(l, sc)
			p.Legend.Add(k, l, sc)
			if len(crosses) > 0 {
				x, err := plotter.NewScatter(crosses)
				if err != nil {
					return err
				}
				x.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(7), Shape: draw.CrossGlyph{}}
				p.Add(x)
				sat = x
			}
		}
		if sat != nil {
			p.Legend.Add("saturated", sat)
		}
		fromZero(p)
		p.X.Min = 0
		if err := w.save(p, path); err != nil {
			return err
		}
		w.add(path)
	}
	return nil
}

// glyphs and dashes tell a sweep's variables apart.
var (
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}}
	dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
)
