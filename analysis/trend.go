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

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pgabtest/abtest/internal/jsonl"
)

// Night is one line of a nightly job's history.jsonl.
type Night struct {
	Date     string `json:"date"`
	SHA      string `json:"sha"`
	Subject  string `json:"subject,omitempty"`
	Baseline string `json:"baseline,omitempty"`
	Run      string `json:"run"`
	// Status is ok, regression or failed.
	Status      string   `json:"status"`
	Regressions []string `json:"regressions,omitempty"`
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

// WriteTrend writes the trend section: for each configuration, TPS over
// the last n nights (an SVG plot in plotsDir) and the change points
// E-divisive finds in that series.
func WriteTrend(w io.Writer, nights []Night, n int, plotsDir, relTo string) error {
	if len(nights) > n {
		nights = nights[len(nights)-n:]
	}
	fmt.Fprintf(w, "\n## Trend (last %d nights)\n\n", len(nights))
	if len(nights) < 2 {
		fmt.Fprintf(w, "Not enough history yet: the trend starts with the second night.\n")
		return nil
	}
	ids := trendConfigs(nights)
	fmt.Fprintf(w, "Change points: E-divisive means (Matteson & James 2014), segments ≥ 3 nights, permutation test α = 0.01 with 499 permutations, on each configuration's nightly TPS median.\n\n")
	fmt.Fprintf(w, "| configuration | nights | first TPS | last TPS | change points |\n|---|---|---|---|---|\n")
	if err := os.MkdirAll(plotsDir, 0o755); err != nil {
		return err
	}
	var links []string
	for _, id := range ids {
		var xs []float64
		var dates []string
		for _, nt := range nights {
			if iv, ok := nt.Medians[id]["tps"]; ok {
				xs = append(xs, iv.Median)
				dates = append(dates, nt.Date+" "+short(nt.SHA))
			}
		}
		if len(xs) == 0 {
			continue
		}
		cps := ChangePoints(xs, ChangePointOptions{Seed: 1})
		desc := "none"
		if len(cps) > 0 {
			desc = ""
			for i, cp := range cps {
				if i > 0 {
					desc += "; "
				}
				desc += fmt.Sprintf("%s (%+.1f%%, p=%.3f)", dates[cp.Index], cp.DeltaPct, cp.P)
			}
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %s |\n", id, len(xs), xs[0], xs[len(xs)-1], desc)

		path := filepath.Join(plotsDir, "trend-"+fileSafe.ReplaceAllString(id, "_")+".svg")
		if err := trendPlot(id, xs, cps, path); err != nil {
			return err
		}
		rel, _ := filepath.Rel(relTo, path)
		links = append(links, fmt.Sprintf("![trend %s](%s)", id, rel))
	}
	for _, l := range links {
		fmt.Fprintf(w, "\n%s\n", l)
	}
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

// trendPlot saves to path the SVG plot of one configuration's nightly
// TPS, a dashed line at each change point.
func trendPlot(id string, xs []float64, cps []ChangePoint, path string) error {
	p := plot.New()
	p.Title.Text = "nightly TPS: " + id
	p.X.Label.Text = "night"
	p.Y.Label.Text = "median TPS"
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
	for _, cp := range cps {
		vl, err := plotter.NewLine(plotter.XYs{{X: float64(cp.Index) + 0.5, Y: minOf(xs)}, {X: float64(cp.Index) + 0.5, Y: maxOf(xs)}})
		if err == nil {
			vl.Color = color.RGBA{214, 39, 40, 255}
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
