package analysis

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pgabtest/abtest/results"
)

// tpsOverTime draws tps-time-<config>.svg from the per-second progress
// reports of the given records, a line per cell, or notes why not.
//
// When the cells' starts are known, the x axis is the configuration's
// measured seconds, each cell's line after the one before it in the
// run (runOffsets): 24 cells of 3 s are 72 s of per-second samples, and
// drift over the run or one slow cell is seen (a line per cell on the
// cell's own 3 s was 3 points). Otherwise (records without a start) the
// lines lie over each other on the cell's own seconds, each commit's
// median per second a bold line over its cells'.
func (w *plotWriter) tpsOverTime(id string, recs []int) error {
	path := filepath.Join(w.dir, "tps-time-"+fileSafe.ReplaceAllString(id, "_")+".svg")
	n, points, most := 0, 0, 0
	for _, i := range recs {
		k := len(w.r.records[i].Progress)
		most = max(most, k)
		if k >= 2 {
			n, points = n+1, points+k
		}
	}
	if n == 0 {
		w.notes = append(w.notes, fmt.Sprintf("%s: not drawn: no cell has 2 progress reports (at most %d; a cell shorter than twice pgbench's -P interval has one)", filepath.Base(path), most))
		return nil
	}
	p := plot.New()
	p.Title.Text = "TPS over time: " + w.r.shownConfig(id)
	p.Y.Label.Text = "TPS per second (pgbench -P)"
	offsets := w.runOffsets(recs)
	if offsets != nil {
		p.X.Label.Text = "seconds measured (a line per cell, in run order)"
	} else {
		p.X.Label.Text = "seconds into the cell (thin: a line per cell; bold: median per second)"
	}
	// A commit's cells are one path (polylines).
	lines := map[string]*polylines{} // by commit
	var order []string               // the commits, as their first cell
	for _, i := range recs {
		rec := &w.r.records[i]
		if len(rec.Progress) < 2 {
			continue
		}
		l := lines[rec.Commit]
		if l == nil {
			l = &polylines{LineStyle: plotter.DefaultLineStyle}
			l.Color = faded(w.colour[rec.Commit])
			if offsets != nil {
				l.Color = w.colour[rec.Commit]
			}
			lines[rec.Commit] = l
			order = append(order, rec.Commit)
		}
		l.add(progressTPS{rec.Progress, offsets[i]})
	}
	legend := map[string]draw.LineStyle{} // by commit
	for _, c := range order {
		p.Add(lines[c])
		legend[c] = lines[c].LineStyle
	}
	if offsets == nil {
		w.medianLines(p, recs, legend)
	}
	for _, c := range w.r.Commits {
		if sty, ok := legend[c]; ok {
			// The legend reads only the line's style.
			p.Legend.Add(c, &plotter.Line{LineStyle: sty})
		}
	}
	scaleY(p)
	if err := w.save(p, path); err != nil {
		return err
	}
	w.add(path)
	return nil
}

// runOffsets are the drawn records' places on the plot's time, by index
// in the records: the cells in the order they started, one after
// another (the time between them, other configurations' cells and
// restarts, left out), so that the plot is the configuration's
// measured seconds as one run; nil when a record's start is unknown.
func (w *plotWriter) runOffsets(recs []int) map[int]float64 {
	var drawn []int
	for _, i := range recs {
		rec := &w.r.records[i]
		if len(rec.Progress) < 2 {
			continue
		}
		if rec.StartedAt.IsZero() {
			return nil
		}
		drawn = append(drawn, i)
	}
	slices.SortStableFunc(drawn, func(a, b int) int { return w.r.records[a].StartedAt.Compare(w.r.records[b].StartedAt) })
	offsets := make(map[int]float64, len(drawn))
	at := 0.0
	for _, i := range drawn {
		offsets[i] = at
		p := w.r.records[i].Progress
		at += math.Max(p[len(p)-1].T, 0)
	}
	return offsets
}

// medianLines adds to lines, for each commit, its median TPS at each
// second of its cells' reports (a report's T rounded: pgbench's are
// 2.1 s as often as 2 s) as a bold line, which is the commit's legend.
func (w *plotWriter) medianLines(p *plot.Plot, recs []int, legend map[string]draw.LineStyle) {
	for _, c := range w.r.Commits {
		at := map[float64][]float64{}
		for _, i := range recs {
			rec := &w.r.records[i]
			if rec.Commit != c || len(rec.Progress) < 2 {
				continue
			}
			for _, pr := range rec.Progress {
				if isFinite(pr.T) && isFinite(pr.TPS) {
					at[math.Round(pr.T)] = append(at[math.Round(pr.T)], pr.TPS)
				}
			}
		}
		if len(at) < 2 {
			continue
		}
		var xys plotter.XYs
		for _, t := range slices.Sorted(maps.Keys(at)) {
			xys = append(xys, plotter.XY{X: t, Y: Median(at[t])})
		}
		l := &polylines{LineStyle: draw.LineStyle{Color: w.colour[c], Width: vg.Points(2)}}
		l.add(xys)
		p.Add(l)
		legend[c] = l.LineStyle
	}
}

// progressTPS are progress reports as points (seconds, TPS), at dt
// seconds into the plot's time.
type progressTPS struct {
	p  []results.Progress
	dt float64
}

func (p progressTPS) Len() int                { return len(p.p) }
func (p progressTPS) XY(i int) (x, y float64) { return p.dt + p.p[i].T, p.p[i].TPS }
