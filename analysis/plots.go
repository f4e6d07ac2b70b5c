package analysis

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var fileSafe = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// palette gives each commit a colour, the same in every plot.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{148, 103, 189, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{140, 86, 75, 255},
}

// WritePlots writes SVG plots (and, with profiles, the diff profiles of
// "Where the time went") into dir and records their paths, relative to
// relTo (where the markdown is), in r.Plots:
//
//   - tps-vs-clients-<group>.svg: median TPS by client count, a line per
//     commit, for each workload × CPUs × settings;
//   - tps-time-<config>.svg: TPS over time (pgbench's progress reports)
//     of every cell of a configuration, a line per cell.
func (r *Report) WritePlots(dir, relTo string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.writeDiffs(dir, relTo); err != nil {
		return err
	}
	colour := map[string]color.Color{}
	for i, c := range r.Commits {
		colour[c] = palette[i%len(palette)]
	}
	add := func(path string) {
		rel, err := filepath.Rel(relTo, path)
		if err != nil {
			rel = path
		}
		r.Plots = append(r.Plots, rel)
	}

	// TPS vs clients.
	groups := map[string]map[string]plotter.XYs{}
	var order []string
	for _, row := range r.Rows {
		if row.Metric != "tps" {
			continue
		}
		parts := strings.Split(row.Config, "/")
		if len(parts) < 3 {
			continue
		}
		var clients int
		fmt.Sscanf(parts[1], "c%d", &clients)
		group := parts[0] + "/" + strings.Join(parts[2:], "/")
		if groups[group] == nil {
			groups[group] = map[string]plotter.XYs{}
			order = append(order, group)
		}
		for _, st := range row.Stats {
			if st.N > 0 {
				groups[group][st.Commit] = append(groups[group][st.Commit], plotter.XY{X: float64(clients), Y: st.Median})
			}
		}
	}
	for _, g := range order {
		p := plot.New()
		p.Title.Text = "median TPS by clients: " + g
		p.X.Label.Text = "clients"
		p.Y.Label.Text = "TPS"
		lines := 0
		for _, c := range r.Commits {
			xys := groups[g][c]
			if len(xys) == 0 {
				continue
			}
			sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, pts.Color = colour[c], colour[c]
			p.Add(l, pts)
			p.Legend.Add(c, l)
			lines++
		}
		if lines == 0 {
			continue
		}
		p.Legend.Top = true
		path := filepath.Join(dir, "tps-vs-clients-"+fileSafe.ReplaceAllString(g, "_")+".svg")
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return err
		}
		add(path)
	}

	// TPS over time, per configuration.
	byConfig := map[string][]int{}
	var configs []string
	for i, rec := range r.records {
		if rec.Status != "ok" || len(rec.Progress) == 0 {
			continue
		}
		id := rec.Config().ID()
		if byConfig[id] == nil {
			configs = append(configs, id)
		}
		byConfig[id] = append(byConfig[id], i)
	}
	for _, id := range configs {
		p := plot.New()
		p.Title.Text = "TPS over time: " + id
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = "TPS"
		legend := map[string]bool{}
		for _, i := range byConfig[id] {
			rec := r.records[i]
			xys := make(plotter.XYs, len(rec.Progress))
			for j, pr := range rec.Progress {
				xys[j] = plotter.XY{X: pr.T, Y: pr.TPS}
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.Color = colour[rec.Commit]
			p.Add(l)
			if !legend[rec.Commit] {
				p.Legend.Add(rec.Commit, l)
				legend[rec.Commit] = true
			}
		}
		p.Legend.Top = true
		path := filepath.Join(dir, "tps-time-"+fileSafe.ReplaceAllString(id, "_")+".svg")
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return err
		}
		add(path)
	}
	return nil
}
