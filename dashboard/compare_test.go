package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// namedRun writes a run into root/results/pgss-lru-ab (the name -o
// chose): three commits on 12 configurations with 12 repeats, patch 10 %
// slower on churn, patch2 5 % faster on select1, every cell with a log
// file, and its report.md and report.json. It returns the directory.
func namedRun(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "results", "pgss-lru-ab")
	var configs []results.Config
	for _, w := range []string{"select1", "churn", "within_max"} {
		for _, c := range []int{1, 4, 16, 64} {
			configs = append(configs, results.Config{Workload: w, Clients: c, Settings: map[string]string{"pg_stat_statements.max": "5000"}})
		}
	}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 7, Repeats: 12,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"},
			{Label: "patch", SHA: storetest.BaseSHA, Patches: []results.Patch{{File: "lru.patch", SHA256: "ffff"}}, Build: "patch"},
			{Label: "patch2", SHA: storetest.BaseSHA, Patches: []results.Patch{{File: "lru2.patch", SHA256: "eeee"}}, Build: "patch2"}},
		Configs: configs,
		Host:    host.Host{Hostname: "bench1", CPU: "Synthetic", NProc: 8, MemoryMB: 16384, Kernel: "6.1"},
		Value: func(k results.Commit, c results.Config, rep int) map[string]float64 {
			v := 4115 * float64(c.Clients) * (1 + 0.003*float64(rep%4))
			switch {
			case k.Label == "patch" && c.Workload == "churn":
				v *= 0.9
			case k.Label == "patch2" && c.Workload == "select1":
				v *= 1.05
			}
			return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 1e4 / v}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, a := range r.Artifacts {
			p := filepath.Join(dir, a)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("pgbench log of "+r.Cell+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(*os.File) error{
		"report.md":   func(f *os.File) error { return rep.WriteMarkdown(f) },
		"report.json": func(f *os.File) error { return rep.WriteJSON(f) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			err = write(f)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestComparePageInBrowser (issue 23): at 1280 × 800 the compare page
// shows the summary and the first regression in the first screen, no
// verdict row is taller than 120 px, nothing is wider than the page, no
// page links to an absolute file:// URL, and a run is found by the name
// of its directory: the index lists it by that name and links to it.
func TestComparePageInBrowser(t *testing.T) {
	ctx := browserSized(t, 1280, 800)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	root := t.TempDir()
	dir := namedRun(t, root)
	s, err := store.Open(bg, filepath.Join(root, "results", store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nights, err := storetest.Nights(filepath.Join(root, "results", "nights"), 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(nights, dir) {
		if _, err := s.Import(bg, d); err != nil {
			t.Fatal(err)
		}
	}
	st, err := dashboard.Write(bg, s, filepath.Join(root, "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shots = ""

	// Found by its directory's name on the index, which links to it.
	page(t, ctx, st.Index, "index-named.png")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var a = Array.from(document.querySelectorAll("#runs td.name a")).find(a => a.textContent.trim() === "pgss-lru-ab"); return a ? a.getAttribute("href") : ""})()`))
	if err != nil || href == "" {
		t.Fatalf("the index does not list the run by its directory name pgss-lru-ab (%v)", err)
	}
	checkLinks(t, ctx, "index")
	compare := filepath.Join(st.Dir, filepath.FromSlash(href))
	page(t, ctx, compare, "compare-named.png")
	if h1, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("h1").textContent`)); !strings.Contains(h1, "pgss-lru-ab") {
		t.Errorf("the index's link to pgss-lru-ab leads to a page headed %q", h1)
	}
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		os.WriteFile(filepath.Join(shotDir(t), "compare-first-screen.png"), png, 0o644)
	}
	firstScreen(t, ctx)
	checkLinks(t, ctx, "compare page")

	// The other commit's page, through the switcher.
	other, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var a = Array.from(document.querySelectorAll("#pairs a")).find(a => a.textContent === "patch2"); return a ? a.getAttribute("href") : ""})()`))
	if err != nil || other == "" {
		t.Fatalf("no link to compare patch2 (%v)", err)
	}
	page(t, ctx, filepath.Join(filepath.Dir(compare), filepath.FromSlash(other)), "compare-patch2.png")
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("summary").textContent`)); !strings.Contains(text, "better") || strings.Contains(text, "worse") {
		t.Errorf("patch2's summary (5 %% faster on select1): %q", text)
	}
	checkLinks(t, ctx, "patch2's compare page")

	// A configuration page: repeats, and artefacts behind a toggle,
	// linked relative to the page.
	cfg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#changes td.cfg a").getAttribute("href")`))
	if err != nil {
		t.Fatal(err)
	}
	cfgPage := filepath.Join(filepath.Dir(compare), filepath.FromSlash(cfg))
	page(t, ctx, cfgPage, "config.png")
	checkLinks(t, ctx, "configuration page")
	arts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#artifacts a")).map(a => a.getAttribute("href"))`))
	if err != nil || len(arts) != 3*12 {
		t.Fatalf("configuration page: %d artefact links (%v), want 36", len(arts), err)
	}
	for _, a := range arts {
		p, _ := url.PathUnescape(a)
		if _, err := os.Stat(filepath.Join(filepath.Dir(cfgPage), filepath.FromSlash(p))); err != nil {
			t.Errorf("artefact link %s: %v", a, err)
		}
	}
	if open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("artifacts").open`)); open {
		t.Error("artefacts are not collapsed")
	}

	// No page of the site has a file:// URL in it.
	filepath.WalkDir(st.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".html") {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), "file://") {
				t.Errorf("%s has a file:// URL", p)
			}
		}
		return nil
	})
}

// firstScreen checks the open compare page at 1280 × 800.
func firstScreen(t *testing.T, ctx context.Context) {
	t.Helper()
	type box struct{ Top, Bottom, Height float64 }
	get := func(sel string) (box, bool) {
		b, err := chromedp.Run(ctx, chromedp.Evaluate[*box](fmt.Sprintf(`(function(){var e = document.querySelector(%q); if (!e) return null; var r = e.getBoundingClientRect(); return {Top: r.top, Bottom: r.bottom, Height: r.height}})()`, sel)))
		if err != nil || b == nil {
			return box{}, false
		}
		return *b, true
	}
	// The first regression's row is the overview's, the report model's
	// table above every comparison (issue 42).
	for _, sel := range []string{"#summary", "#summary .geomean", "#regressions li", "#overview td.worse"} {
		b, ok := get(sel)
		if !ok {
			t.Errorf("compare page: no %s", sel)
			continue
		}
		if b.Height <= 0 || b.Bottom > 800 {
			t.Errorf("compare page: %s at %.0f–%.0f px, not within the first 800 px", sel, b.Top, b.Bottom)
		}
	}
	if g, _ := get("#summary .geomean"); g.Height > 0 {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#summary .geomean").textContent`))
		if !strings.Contains(text, "geometric mean") || !strings.Contains(text, "worse") {
			t.Errorf("geomean line: %q", text)
		}
	}
	heights, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(function(){document.getElementById("quiet-rows").open = true; return Array.from(document.querySelectorAll(".verdicts tbody tr")).map(r => r.getBoundingClientRect().height)})()`))
	if err != nil || len(heights) != 12*2 {
		t.Fatalf("compare page: %d verdict rows (%v), want 24", len(heights), err)
	}
	for i, h := range heights {
		if h > 120 {
			t.Errorf("verdict row %d is %.0f px tall", i, h)
		}
	}
	width, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
	if width > 1280 {
		t.Errorf("the compare page is %.0f px wide", width)
	}
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.textContent`))
	if strings.Contains(body, "e+0") || strings.Contains(body, "Inf") {
		t.Errorf("a number in exponent form or an infinity on the compare page")
	}
}

// checkLinks fails t when the open page links to an absolute URL on disk.
func checkLinks(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("[href], [src]")).map(e => e.getAttribute("href") || e.getAttribute("src")).filter(h => /^(file:|\/)/i.test(h))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%s: absolute links %q", what, bad)
	}
}
