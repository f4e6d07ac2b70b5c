package analysis

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pgabtest/abtest/internal/jsonl"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// Night is one line of a nightly job's history.jsonl.
type Night struct {
	Date     string `json:"date"`
	SHA      string `json:"sha"`
	Subject  string `json:"subject,omitempty"`
	Baseline string `json:"baseline,omitempty"`
	Run      string `json:"run"`
	// Status is GateStatus of the night's gate.
	Status      results.GateStatus `json:"status"`
	Regressions []string           `json:"regressions,omitempty"`
	// Expected are the night's regressions an annotation explains
	// (abtest annotate): shown, not gated.
	Expected []string `json:"expected,omitempty"`
	// Medians maps configuration → metric → the head's median and its
	// confidence interval that night.
	Medians map[string]map[string]Interval `json:"medians"`
}

// Interval is a median with its confidence interval (null bounds when
// too few values for one).
type Interval struct {
	Median float64  `json:"median"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
}

// NightFrom summarises the report's commit label for the history.
func (r *Report) NightFrom(commit string) map[string]map[string]Interval {
	out := map[string]map[string]Interval{}
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Commit != commit || st.N == 0 {
				continue
			}
			if out[row.Config] == nil {
				out[row.Config] = map[string]Interval{}
			}
			out[row.Config][row.Metric] = Interval{Median: st.Median, Lo: Finite(st.Lo), Hi: Finite(st.Hi)}
		}
	}
	return out
}

// ReadHistory reads history.jsonl; a missing file is an empty history, a
// line that does not parse is skipped.
func ReadHistory(path string) ([]Night, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Night
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var n Night
		if json.Unmarshal(sc.Bytes(), &n) == nil && n.SHA != "" {
			out = append(out, n)
		}
	}
	return out, sc.Err()
}

// AppendHistory appends one night, fsynced.
func AppendHistory(path string, n Night) error { return jsonl.Append(path, n) }

// Trend is one configuration's series of one metric over the nights, for
// the trend section: what history.jsonl has (HistoryTrends) or what the
// results store has (the nightly reads it from there).
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

// HistoryTrends makes the trends of metrics over the last n nights of
// history.jsonl, one per configuration and metric with a value, with
// E-divisive's change points (history.jsonl knows no annotations).
func HistoryTrends(nights []Night, n int, metrics []string) []Trend {
	if len(nights) > n {
		nights = nights[len(nights)-n:]
	}
	var out []Trend
	for _, id := range trendConfigs(nights) {
		for _, m := range metrics {
			t := Trend{Config: id, Metric: m}
			for _, nt := range nights {
				if iv, ok := nt.Medians[id][m]; ok {
					t.Values = append(t.Values, iv.Median)
					t.Labels = append(t.Labels, nt.Date+" "+text.Short(nt.SHA))
				}
			}
			if len(t.Values) == 0 {
				continue
			}
			for _, cp := range ChangePoints(t.Values, ChangePointOptions{Seed: 1}) {
				t.ChangePoints = append(t.ChangePoints, TrendChange{ChangePoint: cp})
			}
			out = append(out, t)
		}
	}
	return out
}

// TrendSection is the last section of a nightly report: each
// configuration's series of a metric over the last Nights nights, with
// its change points. The nightly sets Report.Trend before the report is
// written; WriteMarkdown ends with it, and report.json leaves it out.
type TrendSection struct {
	Trends []Trend
	Nights int
	// plots link each trend's plot (WritePlots), relative to the report.
	plots []string
}

// WritePlots draws each trend's SVG plot in plotsDir, linked from the
// section relative to relTo; with fewer than two nights there is no
// trend to draw.
func (s *TrendSection) WritePlots(plotsDir, relTo string) error {
	s.plots = nil
	if s.Nights < 2 {
		return nil
	}
	if err := os.MkdirAll(plotsDir, 0o755); err != nil {
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
		s.plots = append(s.plots, fmt.Sprintf("![trend %s %s](%s)", t.Config, t.Metric, rel))
	}
	return nil
}

// writeMarkdown writes the section: a table row per trend with its
// change points, then the plots WritePlots drew.
func (s *TrendSection) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## Trend (last %d nights)\n\n", s.Nights)
	if s.Nights < 2 {
		fmt.Fprintf(w, "Not enough history yet: the trend starts with the second night.\n")
		return
	}
	fmt.Fprintf(w, "Change points: E-divisive means (Matteson & James 2014), segments ≥ 3 nights, permutation test α = 0.01 with 499 permutations, on each configuration's nightly median; one whose commit is annotated (abtest annotate) is expected, not a regression.\n\n")
	fmt.Fprintf(w, "| configuration | metric | nights | first | last | change points |\n|---|---|---|---|---|---|\n")
	for _, t := range s.Trends {
		desc := "none"
		for i, cp := range t.ChangePoints {
			if i == 0 {
				desc = ""
			} else {
				desc += "; "
			}
			if cp.Expected {
				desc += fmt.Sprintf("%s (%+.1f%%) expected, annotated: %s", t.Labels[cp.Index], cp.DeltaPct, strings.ReplaceAll(cp.Note, "|", `\|`))
			} else {
				desc += fmt.Sprintf("%s (%+.1f%%, p=%.3f) UNEXPECTED", t.Labels[cp.Index], cp.DeltaPct, cp.P)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.6g | %.6g | %s |\n", t.Config, t.Metric, len(t.Values), t.Values[0], t.Values[len(t.Values)-1], desc)
	}
	for _, l := range s.plots {
		fmt.Fprintf(w, "\n%s\n", l)
	}
}

// WriteTrends writes the trend section of the last nights nights, its
// plots in plotsDir linked relative to relTo (TrendSection as a
// report's last section has it).
func WriteTrends(w io.Writer, trends []Trend, nights int, plotsDir, relTo string) error {
	s := &TrendSection{Trends: trends, Nights: nights}
	if err := s.WritePlots(plotsDir, relTo); err != nil {
		return err
	}
	s.writeMarkdown(w)
	return nil
}

// trendConfigs are the configurations with a median in any of nights,
// sorted.
func trendConfigs(nights []Night) []string {
	configs := map[string]bool{}
	for _, nt := range nights {
		for c := range nt.Medians {
			configs[c] = true
		}
	}
	ids := make([]string, 0, len(configs))
	for c := range configs {
		ids = append(ids, c)
	}
	sort.Strings(ids)
	return ids
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
		vl, err := plotter.NewLine(plotter.XYs{{X: float64(cp.Index) + 0.5, Y: minOf(xs)}, {X: float64(cp.Index) + 0.5, Y: maxOf(xs)}})
		if err == nil {
			vl.Color = color.RGBA{214, 39, 40, 255}
			if cp.Expected {
				vl.Color = color.RGBA{127, 127, 127, 255}
			}
			vl.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			p.Add(vl)
		}
	}
	return p.Save(6*vg.Inch, 3.5*vg.Inch, path)
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
