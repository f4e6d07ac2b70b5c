package analysis

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pgabtest/abtest/internal/safefile"

	"github.com/pgabtest/abtest/results"
)

var fileSafe = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// palette gives each commit a colour, the same in every plot.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{148, 103, 189, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{140, 86, 75, 255},
}

// faded is c at a third of its opacity: one repeat among many.
func faded(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 110}
}

const plotW, plotH = 7 * vg.Inch, 4 * vg.Inch

// WritePlots writes SVG plots (and, with profiles, the diff profiles of
// "Where the time went") into dir and records their paths, relative to
// relTo (where the markdown is), in r.Plots, and the plots it did not
// draw, with why, in r.PlotNotes:
//
//   - repeats-<config>-<metric>.svg: each commit's repeats of a gated
//     metric as a strip of points with its median and 95 % interval;
//   - tps-vs-clients-<group>.svg: TPS by client count for each workload ×
//     CPUs × settings: every repeat a point, the median per commit a line
//     with its 95 % interval as error bars;
//   - latency-vs-rate-<series>.svg: a sweep's p99 latency by offered
//     rate, saturated points crossed (latencyVsRate);
//   - <metric>-vs-<var>-<series>.svg: a declared metric by a --var
//     axis's values, a line per commit (metricVsVars);
//   - tps-time-<config>.svg: TPS over time from pgbench's per-second
//     progress reports, every cell of a configuration a line where it
//     ran in the run (tpsOverTime), drawn when a cell has at least two
//     reports.
//
// The value axes come from the data (scaleY: from 0 to just above the
// largest value, log when the values span more than 20×); the legend
// sits beside the data, never on it.
func (r *Report) WritePlots(dir, relTo string) error {
	if err := plotsDir(dir); err != nil {
		return err
	}
	return r.writePlots(dir, relTo, nil)
}

// plotsDir makes dir, the plots' directory.
func plotsDir(dir string) error {
	if err := safefile.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Never into a directory (or through a link) someone else can write:
	// the plots' names are predictable.
	return safefile.Dir(dir)
}

// writePlots is WritePlots into the directory made; the tps-time plots
// are early's (drawn while the report was analysed) when it is not nil.
func (r *Report) writePlots(dir, relTo string, early *timePlots) error {
	if err := r.writeDiffs(dir, relTo); err != nil {
		return err
	}
	w := newPlotWriter(r, dir, relTo)
	err := w.stripPlots()
	for _, g := range w.clientGroups() {
		if err == nil {
			err = w.tpsVsClients(g)
		}
	}
	if err == nil {
		err = w.latencyVsRate()
	}
	if err == nil {
		err = w.metricVsVars()
	}
	if err == nil && early == nil {
		err = w.timePlots()
	}
	if werr := w.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	r.Plots, r.PlotNotes = append(r.Plots, w.plots...), append(r.PlotNotes, w.notes...)
	if early != nil {
		<-early.done
		if early.err != nil {
			return early.err
		}
		r.Plots, r.PlotNotes = append(r.Plots, early.w.plots...), append(r.PlotNotes, early.w.notes...)
	}
	return nil
}

// newPlotWriter is a plotWriter of r's plots into dir.
func newPlotWriter(r *Report, dir, relTo string) *plotWriter {
	w := &plotWriter{r: r, dir: dir, relTo: relTo, colour: map[string]color.Color{}, cfgs: map[string]results.Config{},
		ids: newConfigIDs()}
	for i, c := range r.Commits {
		w.colour[c] = palette[i%len(palette)]
	}
	for _, c := range r.Plan.Configs {
		w.cfgs[c.ID()] = c
	}
	return w
}

// timePlots draws the tps-time plots, a configuration's after another.
func (w *plotWriter) timePlots() error {
	byConfig, configs := w.okRecordsByConfig()
	for _, id := range configs {
		if err := w.tpsOverTime(id, byConfig[id]); err != nil {
			return err
		}
	}
	return nil
}

// timePlots are tps-time plots drawn while the report is analysed: they
// read only the records, the commits and the configurations, which the
// analysis does not write, and at 10⁵ cells they were most of drawing
// the plots (220 of 284), drawn after the analysis, which is mostly on
// one core.
type timePlots struct {
	w    *plotWriter
	done chan struct{}
	err  error
}

// startTimePlots starts drawing r's tps-time plots into dir, made.
func (r *Report) startTimePlots(dir, relTo string) *timePlots {
	t := &timePlots{w: newPlotWriter(r, dir, relTo), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		err := t.w.timePlots()
		if werr := t.w.wait(); err == nil {
			err = werr
		}
		t.err = err
	}()
	return t
}

// wait waits for the plots to be written.
func (t *timePlots) wait() {
	if t != nil {
		<-t.done
	}
}

// plotWriter is what the plots of WritePlots share.
type plotWriter struct {
	r          *Report
	dir, relTo string
	colour     map[string]color.Color    // by commit
	cfgs       map[string]results.Config // by ID
	// ids are the configurations' IDs (the report's are the
	// analysis', which may run beside).
	ids *configIDs
	// plots and notes are the report's Plots and PlotNotes this writer
	// adds, in order.
	plots, notes []string

	// Plots are drawn and written (save) by up to one worker per CPU
	// while the next is made: drawing was most of writing the report
	// at 10⁵ cells, and each plot is its own.
	saving sync.WaitGroup
	slots  chan struct{}
	mu     sync.Mutex
	err    error // the first save's error
}

// save draws p into path on a worker; wait says how the saves went.
func (w *plotWriter) save(p *plot.Plot, path string) error {
	if w.slots == nil {
		w.slots = make(chan struct{}, runtime.GOMAXPROCS(0))
	}
	w.slots <- struct{}{}
	w.saving.Go(func() {
		defer func() { <-w.slots }()
		if err := save(p, path); err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = err
			}
			w.mu.Unlock()
		}
	})
	return nil
}

// wait waits for the saves and returns the first one's error.
func (w *plotWriter) wait() error {
	w.saving.Wait()
	return w.err
}

// add records a plot's path in the report.
func (w *plotWriter) add(path string) {
	rel, err := filepath.Rel(w.relTo, path)
	if err != nil {
		rel = path
	}
	w.plots = append(w.plots, rel)
}

// clientGroup is the TPS rows of a workload × CPUs × settings.
type clientGroup struct {
	name    string
	clients []int
	rows    []Row
}

// clientGroups groups the TPS rows by workload × CPUs × settings, in the
// rows' order.
func (w *plotWriter) clientGroups() []*clientGroup {
	var groups []*clientGroup
	byName := map[string]*clientGroup{}
	for _, row := range w.r.Rows {
		c, ok := w.cfgs[row.Config]
		if row.Metric != results.MetricTPS || !ok {
			continue
		}
		k := c
		k.Clients = 0
		name := strings.Replace(k.ID(), "/c0/", "/", 1)
		g := byName[name]
		if g == nil {
			g = &clientGroup{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, row)
		if !slices.Contains(g.clients, c.Clients) {
			g.clients = append(g.clients, c.Clients)
		}
	}
	return groups
}

// tpsVsClients draws tps-vs-clients-<group>.svg, or notes why not.
func (w *plotWriter) tpsVsClients(g *clientGroup) error {
	path := filepath.Join(w.dir, "tps-vs-clients-"+fileSafe.ReplaceAllString(g.name, "_")+".svg")
	slices.Sort(g.clients)
	if len(g.clients) < 2 {
		w.notes = append(w.notes, fmt.Sprintf("%s: not drawn: one client count (%d); the TPS by configuration is in the tables", filepath.Base(path), g.clients[0]))
		return nil
	}
	p := plot.New()
	p.Title.Text = "TPS by clients: " + w.r.shownConfig(g.name)
	p.X.Label.Text = "clients"
	p.Y.Label.Text = "TPS (points: repeats; line: median, bars: 95% CI)"
	var ticks []plot.Tick
	for _, c := range g.clients {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: strconv.Itoa(c)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	span := float64(g.clients[len(g.clients)-1] - g.clients[0])
	for i, commit := range w.r.Commits {
		// Each commit's points a little to the side, so that they do
		// not hide each other.
		off := span * 0.012 * (float64(i) - float64(len(w.r.Commits)-1)/2)
		if err := w.addCommitByClients(p, g, commit, off); err != nil {
			return err
		}
	}
	scaleY(p)
	if err := w.save(p, path); err != nil {
		return err
	}
	w.add(path)
	return nil
}

// addCommitByClients adds to p a commit's repeats as points, its medians
// as a line and their intervals as error bars, shifted by off on x.
func (w *plotWriter) addCommitByClients(p *plot.Plot, g *clientGroup, commit string, off float64) error {
	var reps, meds plotter.XYs
	var errs plotter.YErrors
	var bars plotter.XYs
	for _, row := range g.rows {
		clients := float64(w.cfgs[row.Config].Clients)
		for _, st := range row.Stats {
			if st.Commit != commit || st.N == 0 {
				continue
			}
			for _, v := range st.Values {
				reps = append(reps, plotter.XY{X: clients + off, Y: v})
			}
			meds = append(meds, plotter.XY{X: clients + off, Y: st.Median})
			if isFinite(st.Lo) && isFinite(st.Hi) {
				bars = append(bars, plotter.XY{X: clients + off, Y: st.Median})
				errs = append(errs, struct{ Low, High float64 }{st.Median - st.Lo, st.Hi - st.Median})
			}
		}
	}
	if len(meds) == 0 {
		return nil
	}
	slices.SortFunc(meds, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
	sc := newRings(reps, draw.GlyphStyle{Color: faded(w.colour[commit]), Radius: vg.Points(2)})
	l, err := plotter.NewLine(meds)
	if err != nil {
		return err
	}
	l.Color = w.colour[commit]
	l.Width = vg.Points(1.5)
	p.Add(sc, l)
	if len(bars) > 0 {
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{bars, errs})
		if err != nil {
			return err
		}
		eb.Color = w.colour[commit]
		eb.Width = vg.Points(1.5)
		p.Add(eb)
	}
	p.Legend.Add(commit, l, sc)
	return nil
}

// okRecordsByConfig returns the indices in r.records of the successful
// cells by configuration, and the configurations in the order of their
// first cell.
func (w *plotWriter) okRecordsByConfig() (map[string][]int, []string) {
	byConfig := map[string][]int{}
	var configs []string
	for i := range w.r.records {
		rec := &w.r.records[i]
		if rec.Status != results.StatusOK {
			continue
		}
		id := w.ids.of(rec.Config)
		if byConfig[id] == nil {
			configs = append(configs, id)
		}
		byConfig[id] = append(byConfig[id], i)
	}
	return byConfig, configs
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// save writes p as SVG with its legend in a column right of the plot,
// where it covers no data and leaves room for the last x tick label.
// The whole drawing is white first (outside the plot's own background
// the SVG was transparent: on a dark page the legend stood on nothing),
// and a title too wide for the plot's column is broken into lines.
func save(p *plot.Plot, path string) error {
	c := vgsvg.New(plotW, plotH)
	dc := draw.New(c)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: plotW, Y: 0}, {X: plotW, Y: plotH}, {X: 0, Y: plotH}})
	legend := p.Legend
	legend.Top, legend.Left = true, true
	width := legendWidth(legend, dc)
	p.Legend = plot.NewLegend()
	p.Title.Text = fitTitle(p.Title.TextStyle, p.Title.Text, plotW-width-2*p.Title.Padding)
	// The axes' labels too, in what is left of the drawing's height
	// beside the title and the x axis, and of its width beside the y
	// axis (a label once ran out of the drawing: "a line per cel").
	p.Y.Label.Text = fitTitle(p.Y.Label.TextStyle, p.Y.Label.Text, plotH-labelRoom)
	p.X.Label.Text = fitTitle(p.X.Label.TextStyle, p.X.Label.Text, plotW-width-labelRoom)
	// A margin all round: a browser's glyphs rise higher than gonum's
	// metrics say, and the title and the y label stood on the edge.
	p.Draw(draw.Crop(dc, plotMargin, -width, plotMargin, -plotMargin))
	legend.Draw(draw.Crop(dc, plotW-width+vg.Points(8), 0, 0, -vg.Points(24)))
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plotMargin is the white left round the plot.
const plotMargin vg.Length = 4 // points

// labelRoom is the room an axis's label leaves to the title, the other
// axis and its tick labels.
const labelRoom vg.Length = 96 // points

// browserWidth is how much wider than gonum measures a browser draws
// the plots' text (its sans-serif is wider than gonum's metrics): text
// is laid out for that width, so that none is cut off.
const browserWidth = 4.0 / 3

// legendWidth is the width of the legend's column: its entries as a
// browser draws them, and room on both sides.
func legendWidth(l plot.Legend, dc draw.Canvas) vg.Length {
	return l.Rectangle(dc).Size().X*browserWidth + vg.Points(16)
}

// fitTitle is title broken into lines (after "/", ": " or a space) of
// at most width as a browser draws them in sty; a part wider than that
// alone stays whole on its line.
func fitTitle(sty text.Style, title string, width vg.Length) string {
	fits := func(s string) bool { return sty.Width(s)*browserWidth <= width }
	if title == "" || fits(title) {
		return title
	}
	var lines []string
	line := ""
	for _, part := range titleParts(title) {
		if line != "" && !fits(line+part) {
			lines = append(lines, strings.TrimSpace(line))
			line = ""
		}
		line += part
	}
	return strings.Join(append(lines, strings.TrimSpace(line)), "\n")
}

// titleParts splits a title after each "/", ": " and space, keeping
// every character.
func titleParts(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == ' ' {
			parts = append(parts, s[start:i+1])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
