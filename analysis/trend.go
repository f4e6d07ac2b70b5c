package analysis

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
)

// Trend is one configuration's series of one metric over the nights, for
// the trend section (the nightly makes them, from its history).
type Trend struct {
	Config string
	Metric string
	// Labels name the points ("2025-01-31 abcdef123456"), Values are
	// their medians, oldest first.
	Labels []string
	Values []float64
	// ChangePoints are the shifts of Values; Index is the first point
	// after one.
	ChangePoints []TrendChange
}

// TrendChange is a change point of a trend. An expected one (an
// annotation names its commit: abtest annotate) is shown with its note,
// never as a regression.
type TrendChange struct {
	ChangePoint
	Expected bool
	Note     string
}

// TrendSection is the last section of a nightly report: each
// configuration's series of a metric over the last Nights nights, with
// its change points. The nightly sets Report.Trend before the report is
// written; WriteMarkdown ends with it, and report.json leaves it out.
type TrendSection struct {
	Trends []Trend
	Nights int
	// plots link each trend's plot (WritePlots), relative to the report.
	plots []Plot
}

// WritePlots draws each trend's SVG plot in plotsDir, linked from the
// section relative to relTo; with fewer than two nights there is no
// trend to draw.
func (s *TrendSection) WritePlots(plotsDir, relTo string) error {
	s.plots = nil
	if s.Nights < 2 {
		return nil
	}
	if err := safefile.MkdirAll(plotsDir, 0o755); err != nil {
		return err
	}
	for _, t := range s.Trends {
		name := "trend-" + fileSafe.ReplaceAllString(t.Config, "_")
		if t.Metric != results.MetricTPS {
			name += "-" + t.Metric
		}
		path := filepath.Join(plotsDir, name+".svg")
		if err := trendPlot(t, path); err != nil {
			return err
		}
		rel, _ := filepath.Rel(relTo, path)
		s.plots = append(s.plots, Plot{fmt.Sprintf("trend %s %s", t.Config, t.Metric), rel})
	}
	return nil
}

// blocks are the section: a table row per trend with its change
// points, then the plots WritePlots drew.
func (s *TrendSection) blocks() []Block {
	out := sect{&Heading{2, fmt.Sprintf("Trend (last %d nights)", s.Nights)}}
	if s.Nights < 2 {
		out.text("Not enough history yet: the trend starts with the second night.")
		return out
	}
	out.text("Change points: E-divisive means (Matteson & James 2014), segments ≥ 3 nights, permutation test α = 0.01 with 499 permutations, on each configuration's nightly median; one whose commit is annotated (abtest annotate) is expected, not a regression.")
	t := &Table{Head: []string{"configuration", "metric", "nights", "first", "last", "change points"}}
	for _, tr := range s.Trends {
		desc := "none"
		for i, cp := range tr.ChangePoints {
			if i == 0 {
				desc = ""
			} else {
				desc += "; "
			}
			if cp.Expected {
				desc += fmt.Sprintf("%s (%+.1f%%) expected, annotated: %s", tr.Labels[cp.Index], cp.DeltaPct, cp.Note)
			} else {
				desc += fmt.Sprintf("%s (%+.1f%%, p=%.3f) UNEXPECTED", tr.Labels[cp.Index], cp.DeltaPct, cp.P)
			}
		}
		t.Rows = append(t.Rows, cells(tr.Config, tr.Metric, fmt.Sprint(len(tr.Values)), fmt.Sprintf("%.6g", tr.Values[0]), fmt.Sprintf("%.6g", tr.Values[len(tr.Values)-1]), desc))
	}
	out.add(t)
	for i := range s.plots {
		out.add(&s.plots[i])
	}
	return out
}

// trendPlot saves to path the SVG plot of one trend, a dashed line at
// each change point (grey when expected).
func trendPlot(t Trend, path string) error {
	xs := t.Values
	p := plot.New()
	p.Title.Text = "nightly " + t.Metric + ": " + t.Config
	p.X.Label.Text = "night"
	p.Y.Label.Text = "median " + t.Metric
	xys := make(plotter.XYs, len(xs))
	for i, x := range xs {
		xys[i] = plotter.XY{X: float64(i + 1), Y: x}
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, pts.Color = palette[0], palette[0]
	p.Add(l, pts)
	for _, cp := range t.ChangePoints {
		vl, err := plotter.NewLine(plotter.XYs{{X: float64(cp.Index) + 0.5, Y: slices.Min(xs)}, {X: float64(cp.Index) + 0.5, Y: slices.Max(xs)}})
		if err == nil {
			vl.Color = color.RGBA{214, 39, 40, 255}
			if cp.Expected {
				vl.Color = color.RGBA{127, 127, 127, 255}
			}
			vl.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			p.Add(vl)
		}
	}
	// As the report's other plots: axis from the data, white under all.
	scaleY(p)
	return save(p, path)
}
