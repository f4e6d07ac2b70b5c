package analysis

import (
	"context"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// The plots every report draws, checked as a reader sees them: the
// demo's real run (demo/testdata/run: 2 commits × 2 workloads × 12
// repeats of 3 s, server_cpu_s_per_tx about 2e-5 s) and a trend of
// tiny values, every label inside the drawing and every series spread
// over the height its values span. ABTEST_PLOTCHECK_DIR=DIR checks the
// demo's plots of that name in DIR instead (an older build's, to see
// the checks fail on what they were written against).

// checkedPlot is one plot drawn, and the values of each series in it
// (by the commit whose colour draws it) when the test knows them.
type checkedPlot struct {
	path   string
	series map[string][]float64
	colour map[string]int // the series' index in palette
}

// plotsToCheck draws the demo run's plots and a trend's into t's
// temporary directory.
func plotsToCheck(t *testing.T) []checkedPlot {
	t.Helper()
	in, err := Load(filepath.Join("..", "demo", "testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := r.WritePlots(filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	if len(r.Plots) < 10 {
		t.Fatalf("the demo drew %d plots: %v (notes %v)", len(r.Plots), r.Plots, r.PlotNotes)
	}
	colour := map[string]int{}
	for i, c := range r.Commits {
		colour[c] = i % len(palette)
	}
	var out []checkedPlot
	for _, p := range r.Plots {
		path := filepath.Join(dir, p)
		if other := os.Getenv("ABTEST_PLOTCHECK_DIR"); other != "" {
			path = filepath.Join(other, filepath.Base(p))
		}
		out = append(out, checkedPlot{path: path, series: demoSeries(r, filepath.Base(p)), colour: colour})
	}
	// Every other plot type (TPS by clients, latency by rate, a
	// metric by a variable): its labels and white only.
	for i, in := range []*Input{loadFixture(t), fileSweep(t)} {
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(dir, fmt.Sprint(i))
		if err := r.WritePlots(filepath.Join(other, "plots"), other); err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Plots {
			out = append(out, checkedPlot{path: filepath.Join(other, p)})
		}
	}
	// A nightly trend of a per-transaction CPU time: 2e-5 s.
	trend := Trend{Config: "select1/c8", Metric: "server_cpu_s_per_tx"}
	for i := range 10 {
		trend.Labels = append(trend.Labels, fmt.Sprintf("night %d", i))
		trend.Values = append(trend.Values, 2e-5+float64(i%4)*3e-6)
	}
	var md strings.Builder
	if err := WriteTrends(&md, []Trend{trend}, 10, filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	out = append(out, checkedPlot{path: filepath.Join(dir, "plots", "trend-select1_c8-server_cpu_s_per_tx.svg"),
		series: map[string][]float64{"trend": trend.Values}, colour: map[string]int{"trend": 0}})
	return out
}

// demoSeries are the values each commit's series of the plot name
// draws: a strip's repeats, a tps-time plot's per-second reports.
func demoSeries(r *Report, name string) map[string][]float64 {
	out := map[string][]float64{}
	for _, row := range r.Rows {
		if name == "repeats-"+fileSafe.ReplaceAllString(row.Config+"-"+row.Metric, "_")+".svg" {
			for _, st := range row.Stats {
				out[st.Commit] = append(out[st.Commit], st.Values...)
			}
			return out
		}
	}
	for _, rec := range r.records {
		if rec.Status == results.StatusOK && len(rec.Progress) >= 2 && name == "tps-time-"+fileSafe.ReplaceAllString(rec.Config.ID(), "_")+".svg" {
			for _, p := range rec.Progress {
				out[rec.Commit] = append(out[rec.Commit], p.TPS)
			}
		}
	}
	if len(out) == 0 {
		panic("the test knows no series of " + name)
	}
	return out
}

// differ is whether vals are not all about equal: they span at least a
// twentieth of the largest's size.
func differ(vals []float64) bool {
	lo, hi := slices.Min(vals), slices.Max(vals)
	return hi-lo >= 0.05*math.Max(math.Abs(lo), math.Abs(hi))
}

// affine is an SVG transform matrix: x' = a x + c y + e, y' = b x + d y + f.
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

// then is m applied after n (m·n).
func (m affine) then(n affine) affine {
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func (m affine) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

var transformRE = regexp.MustCompile(`(scale|translate|rotate)\(([^)]*)\)`)

// parseTransform reads the scale, translate and rotate functions of an
// SVG transform attribute, in their order.
func parseTransform(t *testing.T, s string) affine {
	m := identity
	for _, f := range transformRE.FindAllStringSubmatch(s, -1) {
		var args []float64
		for a := range strings.FieldsFuncSeq(f[2], func(r rune) bool { return r == ',' || r == ' ' }) {
			v, err := strconv.ParseFloat(a, 64)
			if err != nil {
				t.Fatalf("transform %q: %v", s, err)
			}
			args = append(args, v)
		}
		var n affine
		switch {
		case f[1] == "scale" && len(args) == 2:
			n = affine{a: args[0], d: args[1]}
		case f[1] == "translate" && len(args) == 2:
			n = affine{a: 1, d: 1, e: args[0], f: args[1]}
		case f[1] == "rotate" && len(args) == 1:
			sin, cos := math.Sincos(args[0] * math.Pi / 180)
			n = affine{a: cos, b: sin, c: -sin, d: cos}
		default:
			t.Fatalf("transform %q: %s of %d arguments", s, f[1], len(args))
		}
		m = m.then(n)
	}
	return m
}

// svgText is a text of a plot and the box of its ink in the drawing's
// coordinates (points, y down).
type svgText struct {
	str                    string
	minX, minY, maxX, maxY float64
}

var (
	textRE     = regexp.MustCompile(`^<text x="([^"]+)" y="([^"]+)" transform="([^"]+)"$`)
	textSizeRE = regexp.MustCompile(`font-size:([0-9.]+)px`)
	textStrRE  = regexp.MustCompile(`>(.*)</text>`)
	viewBoxRE  = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
)

// svgTexts are the texts of an SVG as our canvas writes it, each boxed
// as a browser draws it: as wide as gonum measures it × browserWidth,
// 0.8 em of ink above its baseline and 0.25 em below (DejaVu Sans, what
// a browser without Liberation draws: capitals 0.73 em, descenders
// 0.24 em), through the transforms of the groups that hold it.
func svgTexts(t *testing.T, svg string) (texts []svgText, w, h float64) {
	vb := viewBoxRE.FindStringSubmatch(svg)
	if vb == nil {
		t.Fatal("no viewBox")
	}
	w, _ = strconv.ParseFloat(vb[1], 64)
	h, _ = strconv.ParseFloat(vb[2], 64)
	handler := plot.New().TextHandler
	stack := []affine{identity}
	lines := strings.Split(svg, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, `<g transform="`):
			tr := strings.TrimSuffix(strings.TrimPrefix(l, `<g transform="`), `">`)
			stack = append(stack, stack[len(stack)-1].then(parseTransform(t, tr)))
		case l == "</g>":
			stack = stack[:len(stack)-1]
		case strings.HasPrefix(l, "<text "):
			m := textRE.FindStringSubmatch(l)
			if m == nil || i+1 >= len(lines) {
				t.Fatalf("a text element of another shape: %s", l)
			}
			i++
			size, _ := strconv.ParseFloat(textSizeRE.FindStringSubmatch(lines[i])[1], 64)
			str := html.UnescapeString(textStrRE.FindStringSubmatch(lines[i])[1])
			x, _ := strconv.ParseFloat(m[1], 64)
			y, _ := strconv.ParseFloat(m[2], 64)
			width := text.Style{Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: handler}.Width(str).Points() * browserWidth
			tr := stack[len(stack)-1].then(parseTransform(t, m[3]))
			box := svgText{str: str, minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1)}
			for _, c := range [][2]float64{{x, y - 0.8*size}, {x + width, y - 0.8*size}, {x, y + 0.25*size}, {x + width, y + 0.25*size}} {
				cx, cy := tr.apply(c[0], c[1])
				box.minX, box.maxX = math.Min(box.minX, cx), math.Max(box.maxX, cx)
				box.minY, box.maxY = math.Min(box.minY, cy), math.Max(box.maxY, cy)
			}
			texts = append(texts, box)
		}
	}
	if len(stack) != 1 {
		t.Fatalf("%d groups left open", len(stack)-1)
	}
	return texts, w, h
}

// TestPlotTextInsideDrawing: every text of every plot of the demo (the
// y axis's label, turned, too) lies inside the drawing as a browser
// draws it: none is cut off, as "a line per cel" was. Pure Go: it runs
// where there is no chromium.
func TestPlotTextInsideDrawing(t *testing.T) {
	for _, p := range plotsToCheck(t) {
		data, err := os.ReadFile(p.path)
		if err != nil {
			t.Fatal(err)
		}
		texts, w, h := svgTexts(t, string(data))
		if len(texts) < 5 {
			t.Errorf("%s: %d texts", filepath.Base(p.path), len(texts))
		}
		rotated := 0
		for _, tx := range texts {
			if tx.maxY-tx.minY > tx.maxX-tx.minX {
				rotated++
			}
			const slack = 0.5
			if tx.minX < -slack || tx.minY < -slack || tx.maxX > w+slack || tx.maxY > h+slack {
				t.Errorf("%s: %q at (%.1f, %.1f)–(%.1f, %.1f) is cut off the %.0f×%.0f drawing", filepath.Base(p.path), tx.str, tx.minX, tx.minY, tx.maxX, tx.maxY, w, h)
			}
		}
		if rotated == 0 {
			t.Errorf("%s: no text turned (the y axis's label): the transforms were not read", filepath.Base(p.path))
		}
	}
}

// TestSVGTextsReadTransforms: the check reads a turned label where a
// browser draws it, and a label cut off the drawing is one.
func TestSVGTextsReadTransforms(t *testing.T) {
	svg := `<svg width="100pt" height="50pt" viewBox="0 0 100 50"
<g transform="scale(1, -1) translate(0, -50)">
<g transform="rotate(90)">
<text x="10" y="5" transform="scale(1, -1)"
	style="font-size:10px">ab</text>
</g>
<text x="90" y="-20" transform="scale(1, -1)"
	style="font-size:10px">a long label</text>
</g>
</svg>`
	texts, w, h := svgTexts(t, svg)
	if len(texts) != 2 || w != 100 || h != 50 {
		t.Fatalf("%d texts in %v×%v", len(texts), w, h)
	}
	// Turned: its baseline at x = 5, running up from y = 50−10 = 40,
	// its ink 8 left of the baseline (off the drawing) and 2.5 right.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if tb := texts[0]; !near(tb.maxY, 40) || tb.minY > 35 || !near(tb.maxX, 7.5) || !near(tb.minX, -3) {
		t.Errorf("turned text boxed at %+v", tb)
	}
	if tb := texts[1]; tb.minX != 90 || tb.maxX <= 100 {
		t.Errorf("a text running off the right edge boxed at %+v", tb)
	}
}

// plotBrowser is chromium headless showing pages of a plot's size.
func plotBrowser(t *testing.T, w, h int64) context.Context {
	t.Helper()
	testenv.RequireTools(t, "chromium")
	path, _ := exec.LookPath("chromium")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("hide-scrollbars", true),
		// Its singleton socket goes under TMPDIR, not /tmp: one
		// org.chromium.Chromium.* directory a browser was left there.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(int(w), int(h)),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// screenshot is the plot at path as chromium draws it in an image of
// its size on a magenta page (what shows through where the plot's
// white does not cover it).
func screenshot(t *testing.T, ctx context.Context, path string, w, h int64) image.Image {
	t.Helper()
	page := filepath.Join(t.TempDir(), "plot.html")
	abs, _ := filepath.Abs(path)
	doc := fmt.Sprintf(`<!doctype html><html><body style="margin:0;background:#ff00ff"><img src="file://%s" width="%d" height="%d" style="display:block"></body></html>`, html.EscapeString(abs), w, h)
	if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("%s: screenshot: %v", path, err)
	}
	img, err := png.Decode(strings.NewReader(string(buf)))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); int64(b.Dx()) != w || int64(b.Dy()) != h {
		t.Fatalf("%s: a screenshot of %v, want %d×%d", path, b, w, h)
	}
	return img
}

// rgb is a pixel's 8-bit channels.
func rgb(img image.Image, x, y int) (r, g, b int) {
	r32, g32, b32, _ := img.At(x, y).RGBA()
	return int(r32 >> 8), int(g32 >> 8), int(b32 >> 8)
}

// pixelFaults are what is wrong with a plot's screenshot: the page
// showing through, ink on the border (a label or line cut off), a
// series whose values differ drawn flat (within flatPx) or not at all.
func pixelFaults(img image.Image, p checkedPlot) []string {
	var faults []string
	b := img.Bounds()
	magenta, border := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl := rgb(img, x, y)
			if r > 200 && g < 60 && bl > 200 {
				magenta++
			}
			edge := x == b.Min.X || y == b.Min.Y || x == b.Max.X-1 || y == b.Max.Y-1
			if edge && min(r, g, bl) < 245 {
				border++
			}
		}
	}
	if magenta > 0 {
		faults = append(faults, fmt.Sprintf("%d pixels of the page show through: the white does not cover the drawing", magenta))
	}
	if border > 0 {
		faults = append(faults, fmt.Sprintf("%d pixels of ink on the border: something is cut off", border))
	}
	x0, x1, axisY := xAxis(img)
	if x1-x0 < b.Dx()/3 {
		return append(faults, fmt.Sprintf("no x axis found (longest grey run %d–%d)", x0, x1))
	}
	top, bottom := map[int]int{}, map[int]int{}
	for y := b.Min.Y; y < axisY; y++ {
		for x := x0; x <= x1; x++ {
			if i, ok := seriesColour(img, x, y); ok {
				if _, seen := top[i]; !seen {
					top[i] = y
				}
				bottom[i] = y
			}
		}
	}
	for name, vals := range p.series {
		i := p.colour[name]
		t, ok := top[i]
		switch {
		case !ok:
			faults = append(faults, fmt.Sprintf("series %s (palette %d) not drawn", name, i))
		case differ(vals) && bottom[i]-t < flatPx:
			faults = append(faults, fmt.Sprintf("series %s is flat: its values span %.4g–%.4g, its pixels %d–%d", name, slices.Min(vals), slices.Max(vals), t, bottom[i]))
		}
	}
	return faults
}

// flatPx is the fewest pixels a series whose values differ spans: more
// than a ring glyph (5 pt across) and a line's width.
const flatPx = 12

// xAxis is the x axis: the longest horizontal run of grey (the axis
// line, 0.5 pt of black), its ends and row.
func xAxis(img image.Image) (x0, x1, y int) {
	b := img.Bounds()
	for row := b.Min.Y; row < b.Max.Y; row++ {
		start := -1
		for x := b.Min.X; x <= b.Max.X; x++ {
			grey := false
			if x < b.Max.X {
				r, g, bl := rgb(img, x, row)
				grey = max(r, g, bl) < 220 && max(r, g, bl)-min(r, g, bl) < 30
			}
			switch {
			case grey && start < 0:
				start = x
			case !grey && start >= 0:
				if x-1-start > x1-x0 {
					x0, x1, y = start, x-1, row
				}
				start = -1
			}
		}
	}
	return x0, x1, y
}

// seriesColour is the palette colour nearest the pixel's ink (its
// difference from white: a faded or anti-aliased pixel of a colour is
// the colour's ink, shorter), when it has a colour at all.
func seriesColour(img image.Image, x, y int) (int, bool) {
	r, g, bl := rgb(img, x, y)
	if max(r, g, bl)-min(r, g, bl) < 40 {
		return 0, false
	}
	ink := [3]float64{float64(255 - r), float64(255 - g), float64(255 - bl)}
	best, bestCos := 0, -2.0
	for i, c := range palette {
		pr, pg, pb, _ := c.RGBA()
		pi := [3]float64{float64(255 - pr>>8), float64(255 - pg>>8), float64(255 - pb>>8)}
		dot := ink[0]*pi[0] + ink[1]*pi[1] + ink[2]*pi[2]
		cos := dot / math.Sqrt((ink[0]*ink[0]+ink[1]*ink[1]+ink[2]*ink[2])*(pi[0]*pi[0]+pi[1]*pi[1]+pi[2]*pi[2]))
		if cos > bestCos {
			best, bestCos = i, cos
		}
	}
	return best, true
}

// TestPlotPixels renders every plot of the demo with chromium and
// checks its pixels: the white covers the whole drawing, no ink touches
// the border (a label cut off), and each series whose values differ
// spans more than a glyph's height (not flat on an axis of another
// scale, as server_cpu_s_per_tx was on 0–1).
func TestPlotPixels(t *testing.T) {
	plots := plotsToCheck(t)
	w, h := int64(math.Round(plotW.Points()*4/3)), int64(math.Round(plotH.Points()*4/3))
	ctx := plotBrowser(t, w, h)
	shots := os.Getenv("ABTEST_PLOTCHECK_SHOTS")
	for _, p := range plots {
		img := screenshot(t, ctx, p.path, w, h)
		if shots != "" {
			f, err := os.Create(filepath.Join(shots, strings.TrimSuffix(filepath.Base(p.path), ".svg")+".png"))
			if err == nil {
				png.Encode(f, img)
				f.Close()
			}
		}
		for _, f := range pixelFaults(img, p) {
			t.Errorf("%s: %s", filepath.Base(p.path), f)
		}
	}
	// What the checks were written against, drawn as the plots were: a
	// y label longer than the drawing is high, 2e-5 s on a 0–1 axis.
	bad := plot.New()
	bad.Y.Label.Text = "TPS (pgbench progress; a line per cell, every cell of the configuration)"
	xys := plotter.XYs{{X: 1, Y: 2e-5}, {X: 2, Y: 3e-5}, {X: 3, Y: 2.5e-5}}
	l, err := plotter.NewLine(xys)
	if err != nil {
		t.Fatal(err)
	}
	l.Color = palette[0]
	bad.Add(l)
	bad.Y.Min, bad.Y.Max = 0, 1
	series := checkedPlot{series: map[string][]float64{"base": {2e-5, 3e-5, 2.5e-5}}, colour: map[string]int{"base": 0}}
	for _, c := range []struct {
		background color.Color
		want       []string
	}{
		{color.White, []string{"pixels of ink on the border", "series base is flat"}},
		{color.Transparent, []string{"pixels of the page show through"}},
	} {
		bad.BackgroundColor = c.background
		path := filepath.Join(t.TempDir(), "bad.svg")
		if err := bad.Save(plotW, plotH, path); err != nil {
			t.Fatal(err)
		}
		faults := strings.Join(pixelFaults(screenshot(t, ctx, path, w, h), series), "; ")
		for _, want := range c.want {
			if !strings.Contains(faults, want) {
				t.Errorf("a plot with its label cut off, its series flat, background %v: faults %q, want %q", c.background, faults, want)
			}
		}
	}
}

// TestPixelFaults: the pixel checks on images made to fail them, so
// that they run (and can fail) where there is no chromium too.
func TestPixelFaults(t *testing.T) {
	plot := func(blueSpan int, mark func(img *image.RGBA)) image.Image {
		img := image.NewRGBA(image.Rect(0, 0, 200, 100))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		for x := 20; x < 180; x++ {
			img.Set(x, 90, color.RGBA{80, 80, 80, 255}) // the x axis
		}
		for y := 10; y < 10+blueSpan; y++ {
			img.Set(50, y, palette[0])
		}
		for y := 30; y < 60; y++ {
			img.Set(100, y, color.RGBA{234, 172, 172, 255}) // palette[1] faded on white
		}
		img.Set(190, 5, palette[1]) // a legend's, right of the axis: not the series
		if mark != nil {
			mark(img)
		}
		return img
	}
	p := checkedPlot{series: map[string][]float64{"base": {1, 2}, "patch": {1, 2}}, colour: map[string]int{"base": 0, "patch": 1}}
	if f := pixelFaults(plot(30, nil), p); len(f) != 0 {
		t.Errorf("a good plot: %v", f)
	}
	for name, c := range map[string]struct {
		img  image.Image
		p    checkedPlot
		want string
	}{
		"flat":      {plot(3, nil), p, "series base is flat"},
		"equal":     {plot(3, nil), checkedPlot{series: map[string][]float64{"base": {2, 2}}, colour: p.colour}, ""},
		"missing":   {plot(30, nil), checkedPlot{series: map[string][]float64{"third": {1, 2}}, colour: map[string]int{"third": 2}}, "series third (palette 2) not drawn"},
		"cut":       {plot(30, func(img *image.RGBA) { img.Set(0, 40, color.Black) }), p, "1 pixels of ink on the border"},
		"uncovered": {plot(30, func(img *image.RGBA) { img.Set(150, 20, color.RGBA{255, 0, 255, 255}) }), p, "1 pixels of the page show through"},
	} {
		got := strings.Join(pixelFaults(c.img, c.p), "; ")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: faults %q, want %q", name, got, c.want)
		}
	}
}
