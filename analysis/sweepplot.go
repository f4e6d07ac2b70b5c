package analysis

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
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
		p.Title.Text = "p99 latency by offered rate: " + w.r.shownConfig(s.Series)
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
		rateAxes(p, lines, rates)
		if err := w.save(p, path); err != nil {
			return err
		}
		w.add(path)
	}
	return nil
}

// rateAxes sets a latency-vs-rate plot's axes: from 0, or log ones
// where the points span more than maxLinearSpan×.
func rateAxes(p *plot.Plot, lines map[string][]SweepPoint, rates []float64) {
	var ys []float64
	for _, pts := range lines {
		for _, pt := range pts {
			ys = append(ys, pt.Medians[results.MetricLatencyP99])
		}
	}
	if !logIfWide(&p.Y, ys) {
		fromZero(p)
	}
	if !logIfWide(&p.X, rates) {
		p.X.Min = 0
	}
}

// glyphs and dashes tell a sweep's variables apart.
var (
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}}
	dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
)

// varLine is a line of a metric-vs-variable plot: a commit at the
// other coordinates of its points (rate, other variables).
type varLine struct {
	commit, rest string
	byX          map[string][]float64 // the variable's value → the cells' values
}

// metricVsVars draws <metric>-vs-<var>-<series>.svg for every metric a
// workload declares and every --var axis of two values or more: the
// median over a point's ok cells (saturated ones included) by the
// variable's value, a line per commit (and per rate and other
// variables), so that a declared metric's shape over the axis (seed
// 002: delivery delay by tick) is seen, not read off a table.
func (w *plotWriter) metricVsVars() error {
	var declared []string
	for _, m := range w.r.Plan.Metrics {
		if _, builtin := results.Builtin.Get(m.Name); !builtin {
			declared = append(declared, m.Name)
		}
	}
	for _, axis := range w.r.Plan.Options.Vars {
		if len(axis.Values) < 2 {
			continue
		}
		for _, m := range declared {
			if err := w.metricVsVar(m, axis); err != nil {
				return err
			}
		}
	}
	return nil
}

// metricVsVar draws metric m against variable axis, a plot per series.
func (w *plotWriter) metricVsVar(m string, axis results.Axis) error {
	type key struct{ series, line string }
	lines := map[key]*varLine{}
	var keys []key
	for i := range w.r.records {
		rec := &w.r.records[i]
		x, ok := rec.Config.Vars[axis.Name]
		v, has := rec.Metrics.Get(m)
		if rec.Status != results.StatusOK || rec.Instructions || !ok || !has || !isFinite(v) {
			continue
		}
		rest := rec.Config
		rest.Vars = maps.Clone(rest.Vars)
		delete(rest.Vars, axis.Name)
		k := key{rec.Config.Series().ID(), rec.Commit + "\x00" + rest.Point()}
		if lines[k] == nil {
			lines[k] = &varLine{commit: rec.Commit, rest: rest.Point(), byX: map[string][]float64{}}
			keys = append(keys, k)
		}
		lines[k].byX[x] = append(lines[k].byX[x], v)
	}
	bySeries := map[string][]*varLine{}
	var series []string
	for _, k := range keys {
		if bySeries[k.series] == nil {
			series = append(series, k.series)
		}
		bySeries[k.series] = append(bySeries[k.series], lines[k])
	}
	for _, sr := range series {
		if err := w.drawMetricVsVar(m, axis, sr, bySeries[sr]); err != nil {
			return err
		}
	}
	return nil
}

// drawMetricVsVar draws one series' lines, or notes why not.
func (w *plotWriter) drawMetricVsVar(m string, axis results.Axis, series string, lines []*varLine) error {
	path := filepath.Join(w.dir, fileSafe.ReplaceAllString(m+"-vs-"+axis.Name+"-"+series, "_")+".svg")
	// x: the values as numbers when all are, else their order.
	xOf := map[string]float64{}
	numeric := true
	for _, v := range axis.Values {
		f, err := strconv.ParseFloat(v, 64)
		numeric = numeric && err == nil && isFinite(f)
		xOf[v] = f
	}
	if !numeric {
		for i, v := range axis.Values {
			xOf[v] = float64(i + 1)
		}
	}
	def, _ := w.r.Plan.Metrics.Get(m)
	p := plot.New()
	p.Title.Text = m + " by :" + axis.Name + ": " + w.r.shownConfig(series)
	p.X.Label.Text = ":" + axis.Name
	p.Y.Label.Text = m
	if def.Unit != "" {
		p.Y.Label.Text += ", " + def.Unit
	}
	p.Y.Label.Text += " (median of cells)"
	var xs, ys []float64
	drawn := 0
	for i, l := range lines {
		var xys plotter.XYs
		for _, v := range axis.Values {
			if vals := l.byX[v]; len(vals) > 0 {
				xys = append(xys, plotter.XY{X: xOf[v], Y: Median(vals)})
			}
		}
		if len(xys) < 2 {
			continue
		}
		for _, xy := range xys {
			xs, ys = append(xs, xy.X), append(ys, xy.Y)
		}
		lp, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		col := w.colour[l.commit]
		lp.Color, sc.Color, sc.GlyphStyle.Shape = col, col, glyphs[i%len(glyphs)]
		lp.Dashes = dashes[i%len(dashes)]
		p.Add(lp, sc)
		p.Legend.Add(strings.TrimSpace(l.commit+" "+strings.TrimPrefix(l.rest, "closed")), lp, sc)
		drawn++
	}
	if drawn == 0 {
		w.notes = append(w.notes, fmt.Sprintf("%s: not drawn: no commit has %s at two values of :%s", filepath.Base(path), m, axis.Name))
		return nil
	}
	if !numeric {
		var ticks []plot.Tick
		for _, v := range axis.Values {
			ticks = append(ticks, plot.Tick{Value: xOf[v], Label: v})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	} else if !logIfWide(&p.X, xs) {
		p.X.Min = math.Min(0, p.X.Min)
	}
	if !logIfWide(&p.Y, ys) {
		fromZero(p)
	}
	if err := w.save(p, path); err != nil {
		return err
	}
	w.add(path)
	return nil
}
