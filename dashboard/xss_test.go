package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// Texts a store may hold that a page must show as text: each sets
// window.__xss when a browser runs it.
const (
	xssLabel = `<img src=x onerror="window.__xss=1">`
	xssHost  = `<script>window.__xss=2</script>`
	xssNote  = `<img src=x onerror=window.__xss=3>`
	// xssLegacy is a note the import and annotate checks refuse (a
	// control character), stored as a row from before them: the pages
	// must hold without the check. Its </script> would end a script
	// block written unescaped.
	xssLegacy = "</script><script>window.__xss=4</script>\x1b[31m<img src=x onerror=window.__xss=5>"
)

// hostileSite stores three runs whose head is labelled xssLabel on a
// host named xssHost, the first night's head annotated with xssNote and
// the second's with xssLegacy (written into the database, past
// Annotate's check), and writes their dashboard. It returns the site and
// the runs' ids.
func hostileSite(t *testing.T) (*dashboard.Site, []string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	start := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprintf("night-%d", i))
		_, err := storetest.Write(dir, storetest.Run{
			Created: start.AddDate(0, 0, i), Seed: int64(i) + 1, Repeats: 3,
			Commits: []results.Commit{
				{Label: "base", Ref: "REL_17_0", SHA: storetest.BaseSHA, Build: "base", BuildType: "release"},
				{Label: xssLabel, Ref: xssLabel, SHA: storetest.NightSHA(i), Build: "head", BuildType: "release"},
			},
			Configs: []results.Config{storetest.Config},
			Host:    host.Host{Hostname: xssHost, CPU: "Synthetic CPU", NProc: 8, MemoryMB: 16384, Kernel: "6.1.0"},
			Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
				v := 10000 + float64(10*i+rep)
				if k.Label == xssLabel {
					v *= 0.9
				}
				return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 24000 / v}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Import(ctx, dir)
		if err != nil {
			t.Fatalf("import: markup is text, the import takes it: %v", err)
		}
		ids = append(ids, st.Run)
	}
	if err := s.Annotate(ctx, store.Annotation{SHA: storetest.NightSHA(0), Metric: results.MetricTPS, Note: xssNote}); err != nil {
		t.Fatal(err)
	}
	legacy := store.Annotation{SHA: storetest.NightSHA(1), Metric: results.MetricTPS, Note: xssLegacy}
	if err := s.Annotate(ctx, legacy); exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("annotate with a control character: %v, want it refused (exit 2)", err)
	}
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO annotations (sha, metric, config, note, created) VALUES (?, ?, '', ?, ?)`,
		legacy.SHA, legacy.Metric, legacy.Note, start.Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
	site, err := dashboard.Write(ctx, s, filepath.Join(root, "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return site, ids
}

// noScriptRan fails t when a page ran a stored text or holds an element
// made from one: window.__xss set, an img anywhere (the pages have
// none), a script that is not the pages' own files or their JSON block.
func noScriptRan(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	// An image's error event comes after its load fails: give it time.
	if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		xss: window.__xss === undefined ? null : window.__xss,
		imgs: document.querySelectorAll("img").length,
		scripts: Array.from(document.scripts).filter(s => !s.src && s.type !== "application/json").length})`))
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"xss":null,"imgs":0,"scripts":0}` {
		t.Errorf("%s: a stored text became markup: %s", where, got)
	}
}

// hasText fails t when the text of the elements sel selects lacks any
// of want, literally.
func hasText(t *testing.T, ctx context.Context, where, sel string, want ...string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.textContent).join("\n")`, sel)))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %s does not show %q as text; it shows:\n%s", where, sel, w, got)
		}
	}
}

// tooltipAt shows the trend chart's tooltip at dataIndex i and returns
// its text.
func tooltipAt(t *testing.T, ctx context.Context, i int) string {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.abtestChart.dispatchAction({type: "showTip", seriesIndex: 0, dataIndex: %d})`, i)),
		chromedp.Sleep(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var d = document.querySelector("#chart .tip"); return d ? d.textContent : ""})()`))
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

// TestDashboardHostileTextInBrowser: labels, host names and notes with
// markup (<img onerror>, <script>, a </script> in a row stored before
// the import's check) are shown as text on the index, compare,
// configuration and trend pages and in the trend's tooltips, from disk
// and served, in chromium: nothing runs, no element is made of them, and
// the Content-Security-Policy of both is in force without breaking the
// chart.
func TestDashboardHostileTextInBrowser(t *testing.T) {
	ctx := browser(t)
	st, ids := hostileSite(t)
	shots = ""
	var trend string
	for _, tr := range st.Trends {
		if tr.Key.Metric == results.MetricTPS && tr.Key.Config == storetest.Config.ID() {
			trend = tr.Page
		}
	}
	if trend == "" {
		t.Fatalf("no trend page for tps %s: %+v", storetest.Config.ID(), st.Trends)
	}

	sctx, stop := context.WithCancel(context.Background())
	served := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- dashboard.Serve(sctx, st.Dir, "127.0.0.1:0", func(a string) { served <- a }) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var addr string
	select {
	case addr = <-served:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	for _, base := range []string{st.Dir, "http://" + addr} {
		at := func(rel string) string {
			if strings.HasPrefix(base, "http://") {
				return base + "/" + filepath.ToSlash(rel)
			}
			return filepath.Join(base, rel)
		}
		how := "disk"
		if strings.HasPrefix(base, "http://") {
			how = "served"
		}

		page(t, ctx, at("index.html"), how+"-index.png")
		hasText(t, ctx, how+" index", "#runs", xssLabel, xssHost)
		noScriptRan(t, ctx, how+" index")

		page(t, ctx, at(dashboard.RunPage(ids[0])), how+"-compare.png")
		hasText(t, ctx, how+" compare page", "h1", xssLabel)
		hasText(t, ctx, how+" compare page", "#setup", xssLabel, xssHost)
		noScriptRan(t, ctx, how+" compare page")

		page(t, ctx, at(dashboard.ConfigPage(ids[0], storetest.Config.ID())), how+"-config.png")
		hasText(t, ctx, how+" configuration page", "main", xssLabel)
		noScriptRan(t, ctx, how+" configuration page")

		page(t, ctx, at(trend), how+"-trend.png")
		hasText(t, ctx, how+" trend page", "#annotations", xssNote, xssLegacy)
		drawn, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector("#chart canvas") ? window.abtestChart.getOption().series[0].data.length : -1`))
		if err != nil || drawn != 3 {
			t.Errorf("%s trend page: chart of %d points (%v), want a canvas with 3", how, drawn, err)
		}
		for i, note := range []string{xssNote, xssLegacy} {
			tip := tooltipAt(t, ctx, i)
			for _, w := range []string{xssLabel, "host " + xssHost, "note: " + note, storetest.NightSHA(i)[:8]} {
				if !strings.Contains(tip, w) {
					t.Errorf("%s trend tooltip at %d: %q lacks %q", how, i, tip, w)
				}
			}
		}
		// A note's pin, hovered (the mouse moved up from its point, past
		// the axis' tooltip), shows the note alone.
		pin, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.abtestChart.convertToPixel({seriesIndex: 0}, [0, window.abtestChart.getOption().series[0].data[0]])`))
		if err != nil || len(pin) != 2 {
			t.Fatalf("%s: the note's pin: %v %v", how, pin, err)
		}
		var pinTip string
		want := "note: " + xssNote
		for dy := 0.0; dy <= 40 && pinTip != want; dy += 4 {
			err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function(){var c = document.querySelector("#chart canvas"), r = c.getBoundingClientRect();
				c.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + %g, clientY: r.top + %g, bubbles: true}))})()`, pin[0], pin[1]-dy)),
				chromedp.Sleep(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			pinTip, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#chart .tip")).map(d => d.textContent).join(" ")`))
		}
		if pinTip != want {
			t.Errorf("%s: hovering the note's pin shows %q, want %q", how, pinTip, want)
		}
		noScriptRan(t, ctx, how+" trend page")

		// The policy is in force: a script added inline does not run.
		ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function(){var s = document.createElement("script"); s.textContent = "window.__inline = 1"; document.body.appendChild(s); return window.__inline === 1})()`))
		if err != nil || ran {
			t.Errorf("%s: an inline script ran (%v): the Content-Security-Policy is not in force", how, err)
		}
	}
}

// TestServeSecurityHeaders: every response of Serve (a page, a script,
// a missing file) carries the Content-Security-Policy, without
// 'unsafe-inline' or 'unsafe-eval', and nosniff; the pages' <meta>
// policy is the same but for frame-ancestors, which a <meta> cannot
// carry.
func TestServeSecurityHeaders(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.ImportAll(ctx, s, dirs, nil, nil); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- dashboard.WriteAndServe(sctx, s, filepath.Join(root, "site"), "127.0.0.1:0", func(_, a string) { served <- a })
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-served:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	for _, path := range []string{"/", "/index.html", "/assets/dashboard.js", "/assets/echarts.min.js", "/nosuch.html"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != dashboard.Policy || strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s (%s): Content-Security-Policy %q, want %q", path, resp.Status, csp, dashboard.Policy)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, got)
		}
	}
	if want := dashboard.MetaPolicy + "; frame-ancestors 'none'"; dashboard.Policy != want || strings.Contains(dashboard.MetaPolicy, "frame-ancestors") {
		t.Errorf("Policy %q, MetaPolicy %q: want the same but for frame-ancestors", dashboard.Policy, dashboard.MetaPolicy)
	}
}
