package analysis

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgabtest/abtest/results"
)

// maxStripPlots bounds the repeats plots of one report: a run of many
// configurations draws its gated metrics' strips up to this many, and
// says how many it left out.
const maxStripPlots = 64

// stripPlots draws repeats-<config>-<metric>.svg for every configuration's
// primary metric, then for the other gated metrics that a commit changed
// or left unknown (not for one all same, nor for a mirror such as
// latency_avg_ms of tps), up to maxStripPlots.
func (w *plotWriter) stripPlots() error {
	gated := map[string]bool{}
	for _, t := range w.r.Tiers {
		gated[t.Metric] = t.Gated
	}
	primaryOf := map[string]string{}
	for _, c := range w.r.Plan.Configs {
		primaryOf[c.ID()] = PrimaryFor(c, w.r.Plan)
	}
	var rows []Row
	for _, primary := range []bool{true, false} {
		for _, row := range w.r.Rows {
			def, _ := w.r.Plan.Metrics.Get(row.Metric)
			isPrimary := row.Metric == primaryOf[row.Config]
			if !gated[row.Metric] && !isPrimary || def.SameAs != "" || isPrimary != primary || w.commitsWithValues(row) < 2 {
				continue
			}
			if isPrimary || slices.ContainsFunc(row.Stats, func(s Stat) bool { return s.Verdict != results.Same && s.Verdict != results.VerdictBaseline }) {
				rows = append(rows, row)
			}
		}
	}
	if len(rows) > maxStripPlots {
		w.notes = append(w.notes, fmt.Sprintf("repeats-*.svg: %d of %d drawn (the primary metrics first); every value is in report.json", maxStripPlots, len(rows)))
		rows = rows[:maxStripPlots]
	}
	for _, row := range rows {
		if err := w.strip(row); err != nil {
			return err
		}
	}
	return nil
}

// commitsWithValues counts the commits of row with at least one value.
func (w *plotWriter) commitsWithValues(row Row) int {
	n := 0
	for _, st := range row.Stats {
		if len(st.Values) > 0 {
			n++
		}
	}
	return n
}

// strip draws one row: each commit's repeats as points in a column of
// its own (spread sideways so that equal values stay visible), its
// median as a short line and its 95 % interval as error bars; the y
// axis starts at 0, so a difference looks as large as it is.
func (w *plotWriter) strip(row Row) error {
	path := filepath.Join(w.dir, "repeats-"+fileSafe.ReplaceAllString(row.Config+"-"+row.Metric, "_")+".svg")
	p := plot.New()
	def, _ := w.r.Plan.Metrics.Get(row.Metric)
	p.Title.Text = row.Metric + ": " + w.r.shownConfig(row.Config)
	p.Y.Label.Text = row.Metric
	if def.Unit != "" {
		p.Y.Label.Text += " (" + def.Unit + ")"
	}
	p.X.Label.Text = "points: repeats; line: median; bars: its 95% CI"
	var ticks []plot.Tick
	for i, st := range row.Stats {
		x := float64(i + 1)
		ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%s\n%s", st.Commit, st.Verdict)})
		if len(st.Values) == 0 {
			continue
		}
		if err := w.addStrip(p, st, x); err != nil {
			return err
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 0.4, float64(len(row.Stats))+0.6
	scaleY(p)
	if err := w.save(p, path); err != nil {
		return err
	}
	w.add(path)
	return nil
}

// addStrip adds one commit's column at x.
func (w *plotWriter) addStrip(p *plot.Plot, st Stat, x float64) error {
	pts := make(plotter.XYs, len(st.Values))
	for j, v := range st.Values {
		// A fixed spread, not a random jitter: the same report draws
		// the same plot.
		pts[j] = plotter.XY{X: x - 0.15 + 0.3*float64(j+1)/float64(len(st.Values)+1), Y: v}
	}
	sc := newRings(pts, draw.GlyphStyle{Color: w.colour[st.Commit], Radius: vg.Points(2.5)})
	med, err := plotter.NewLine(plotter.XYs{{X: x - 0.25, Y: st.Median}, {X: x + 0.25, Y: st.Median}})
	if err != nil {
		return err
	}
	med.Color = w.colour[st.Commit]
	med.Width = vg.Points(2)
	p.Add(sc, med)
	if isFinite(st.Lo) && isFinite(st.Hi) {
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{plotter.XYs{{X: x, Y: st.Median}}, plotter.YErrors{{Low: st.Median - st.Lo, High: st.Hi - st.Median}}})
		if err != nil {
			return err
		}
		eb.Color = w.colour[st.Commit]
		eb.Width = vg.Points(1.5)
		p.Add(eb)
	}
	p.Legend.Add(st.Commit, med, sc)
	return nil
}
