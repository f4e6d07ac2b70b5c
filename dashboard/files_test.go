package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/store"
)

// served is a site WriteAndServe serves for a test, until it ends.
type served struct {
	base string // http://127.0.0.1:PORT
	dir  string // the site's directory
}

// serveStore serves the site of s (which it closes) until the test ends.
func serveStore(t *testing.T, s *store.Store) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan served, 1)
	done := make(chan error, 1)
	go func() {
		done <- dashboard.WriteAndServe(ctx, s, filepath.Join(t.TempDir(), "site"), "127.0.0.1:0", func(dir, addr string) {
			ready <- served{base: "http://" + addr, dir: dir}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case sv := <-ready:
		return sv
	case err := <-done:
		done <- err
		t.Fatalf("serve: %v", err)
	}
	return served{}
}

// get fetches a raw path (sent as written: no client cleans it) and
// returns the response with its body.
func get(t *testing.T, base, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = path
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var hrefs = regexp.MustCompile(`href="([^"#]+)"`)

// links are the resolved URLs of the links of the page at path.
func links(t *testing.T, base, path string) []*url.URL {
	t.Helper()
	resp, body := get(t, base, path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	at, _ := url.Parse(base + path)
	var out []*url.URL
	for _, m := range hrefs.FindAllStringSubmatch(body, -1) {
		u, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err != nil {
			t.Fatalf("%s: link %q: %v", path, m[1], err)
		}
		out = append(out, at.ResolveReference(u))
	}
	return out
}

// TestServeRunFiles (issue 42): under serve, a run page's report.md and
// report.json and a configuration page's cell logs are links that
// answer 200 with the file, as plain text or JSON under the files'
// policy; every link of those pages resolves on the server. A path with
// "..", plain or encoded, a link planted in the results directory (to
// /etc/shadow, to another run's report, to /etc as a directory), a
// directory (no listing), another run's files under this run's prefix,
// an unknown run, and a method other than GET or HEAD are refused; an
// .html a run left is served as text.
func TestServeRunFiles(t *testing.T) {
	bg := context.Background()
	root := t.TempDir()
	dir := namedRun(t, root)
	nights, err := storetest.Nights(filepath.Join(root, "results", "nights"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(nights[0], "report.md")
	if err := os.WriteFile(other, []byte("another run's report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"shadow.md": "/etc/shadow", "other.md": other, "etc": "/etc", "up.md": "../nights/night-000/report.md"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "evil.html"), []byte("<script>alert(1)</script>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(bg, filepath.Join(root, "results", store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	var run, night string
	for _, d := range []string{dir, nights[0]} {
		st, err := s.Import(bg, d)
		if err != nil {
			t.Fatal(err)
		}
		if d == dir {
			run = st.Run
		} else {
			night = st.Run
		}
	}
	sv := serveStore(t, s)

	runPage := "/" + filepath.ToSlash(dashboard.RunPage(run))
	var report, reportJSON, config string
	for _, u := range links(t, sv.base, runPage) {
		switch {
		case strings.HasSuffix(u.Path, "/report.md"):
			report = u.Path
		case strings.HasSuffix(u.Path, "/report.json"):
			reportJSON = u.Path
		case config == "" && strings.HasPrefix(u.Path, "/runs/"+run+"/"):
			config = u.Path
		}
		checkServed(t, sv.base, runPage, u)
	}
	prefix := "/files/" + run + "/1-of-1/"
	if report != prefix+"report.md" || reportJSON != prefix+"report.json" || config == "" {
		t.Fatalf("the run page links report.md %q, report.json %q, a configuration page %q; want them beneath %s", report, reportJSON, config, prefix)
	}
	resp, body := get(t, sv.base, report)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "# ") || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		resp.Header.Get("Content-Security-Policy") != dashboard.FilesPolicy || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("report.md: %s %q, headers %v", resp.Status, body[:min(len(body), 40)], resp.Header)
	}
	if resp, body := get(t, sv.base, reportJSON); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(body, "{") {
		t.Errorf("report.json: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	logs := 0
	for _, u := range links(t, sv.base, config) {
		if strings.HasSuffix(u.Path, "/pgbench.log") {
			logs++
			if resp, body := get(t, sv.base, u.Path); resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "pgbench log of ") {
				t.Errorf("log %s: %s %q", u.Path, resp.Status, body)
			}
			continue
		}
		checkServed(t, sv.base, config, u)
	}
	if logs == 0 {
		t.Errorf("the configuration page %s links no pgbench.log", config)
	}

	for path, want := range map[string]int{
		prefix + "../../../results/pgss-lru-ab/report.md":       404,
		prefix + "%2e%2e/%2e%2e/" + night + "/1-of-1/report.md": 404,
		prefix + "cells/..%2f..%2freport.md":                    404,
		prefix + "shadow.md":                                    403,
		prefix + "other.md":                                     403,
		prefix + "up.md":                                        403,
		prefix + "etc/shadow":                                   403,
		prefix + "etc":                                          403,
		prefix + "cells":                                        403,
		prefix + "cells/":                                       404,
		prefix:                                                  404,
		prefix + "fifo.log":                                     403,
		prefix + "nope.md":                                      404,
		prefix + "/" + strings.TrimPrefix(other, "/"):           404,
		"/files/" + run + "/1-of-1/" + "../../" + night + "/1-of-1/x.md": 404,
		"/files/0000000000000000/1-of-1/report.md":                       404,
		"/files/" + run + "/2-of-2/report.md":                            404,
		"/files/" + run:                                                  404,
		"/files/":                                                        404,
		"/files":                                                         404,
	} {
		resp, body := get(t, sv.base, path)
		if resp.StatusCode != want || strings.Contains(body, "another run") || strings.Contains(body, "root:") {
			t.Errorf("GET %s: %s (%q), want %d", path, resp.Status, body[:min(len(body), 60)], want)
		}
	}
	if resp, _ := get(t, sv.base, "/files/"+night+"/1-of-1/report.md"); resp.StatusCode != http.StatusOK {
		t.Errorf("the other run's own report: %s", resp.Status)
	}
	resp, body = get(t, sv.base, prefix+"evil.html")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("evil.html: %s, %v %q", resp.Status, resp.Header, body)
	}
	post, err := http.Post(sv.base+report, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %s", report, post.Status)
	}
}

// checkServed fails when a link of a served page (a page, an asset, a
// results file) does not answer 200 on the server.
func checkServed(t *testing.T, base, from string, u *url.URL) {
	t.Helper()
	if u.Scheme == "data" {
		return // the empty icon
	}
	if u.Scheme != "http" || u.Host != strings.TrimPrefix(base, "http://") {
		t.Errorf("%s links %s, off the server", from, u)
		return
	}
	resp, _ := get(t, base, u.EscapedPath())
	// The file server sends /index.html to / (one redirect, followed).
	if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusMovedPermanently && strings.HasPrefix(loc, "./") {
		resp, _ = get(t, base, strings.TrimSuffix(u.EscapedPath(), "index.html"))
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s links %s: %s", from, u.Path, resp.Status)
	}
}

// TestServedDemoInBrowser: the demo's site under serve loads its index,
// run page and a trend of both arms in chromium without a console error
// (a policy violation is one), and the run page's report.md link opens
// the report as text.
func TestServedDemoInBrowser(t *testing.T) {
	ctx := browser(t)
	shots = ""
	root := t.TempDir()
	s, run, rep, written := demoSite(t, root)
	f, err := os.Create(filepath.Join(root, "demo-run", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sv := serveStore(t, s)
	page(t, ctx, sv.base+"/index.html", "served-index.png")
	page(t, ctx, sv.base+"/"+filepath.ToSlash(dashboard.RunPage(run)), "served-run.png")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var a = Array.from(document.querySelectorAll("#files a")).find(a => a.textContent === "report.md"); return a ? a.href : ""})()`))
	if err != nil || !strings.HasPrefix(href, sv.base+"/files/"+run+"/") {
		t.Fatalf("report.md links %q (%v)", href, err)
	}
	if resp, body := get(t, sv.base, strings.TrimPrefix(href, sv.base)); resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "# ") {
		t.Errorf("report.md: %s", resp.Status)
	}
	for _, tr := range written.Trends {
		if tr.Key.Metric == "tps" {
			page(t, ctx, sv.base+"/"+filepath.ToSlash(tr.Page), "served-trend.png")
			series, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.abtestChart.getOption().series.length`))
			if err != nil || series != 2 {
				t.Errorf("the trend chart draws %d series (%v), want the commit's and the baseline's", series, err)
			}
			break
		}
	}
}
