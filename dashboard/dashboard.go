// Package dashboard writes a static web site from the results store.
//
// The index lists the runs first, newest first, each by the name the
// user gave it (its results directory's base name, what -o chose), its
// date, each commit's answer line and its gate as the run's report says
// them (the run is judged once, for its row and its pages), the id
// secondary;
// then the trends, grouped by configuration with a sparkline per series
// of 3 points or more that moves. A run's compare page (one per commit against the
// baseline, with links to switch) reads the run's report model (the run
// judged through history, analysis.Report.Doc, rendered by doc.go):
// it answers first, with the report's answer line, the counts of
// verdicts, the run-level geometric means, the gate and the
// regressions; then the report's overview table; then every
// comparison, the changes sorted by significance and size (gated
// first, then by |Δ|) and the rest behind a toggle, a row with no
// signal as "—" with its reason; then the whole report collapsed, and
// links to the run's report.md and report.json and to the diff
// profiles its report.json names. A run's failed cells are listed by
// their errors. Each row links to its configuration's page: the repeats of
// every commit, the verdicts, and the cells' artefacts collapsed. A
// trend page per metric × configuration draws the series over runs with
// its change points and annotations, zoom, and hover showing commit,
// sha, value and host.
//
// Every link is relative, so the site can be copied or served: files of
// a results directory are linked relative to the page (they resolve
// while the site stays beside the results), or, in a site written to be
// served, beneath files/RUN/SHARD/, where serve serves each run's
// results directories read-only; a file is named as text where no such
// file exists. The chart library (Apache ECharts 5.6.0,
// Apache-2.0, assets/echarts.min.js from its npm package) is embedded in
// the binary and copied beside the pages, and nothing is fetched from a
// network. Serve serves a written site on the loopback interface, for
// browsers that restrict file:// pages.
//
// A page shows stored text (labels, host names, notes) as text: the
// templates escape it, the pages' script builds what it draws from data
// with textContent, and every page, opened from disk or served, runs
// under a Content-Security-Policy without inline script or style
// (Policy), so a text that slipped through would still not run.
package dashboard

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

//go:embed assets
var assets embed.FS

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"short": text.Short,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"num":   num,
	"pnum":  pnum,
	"human": human,
	"pval":  pval,
	"raw":   raw,
	// The report's mark and note for a Δ against its medians.
	"anyDisagree":  anyDisagree,
	"disagreeMark": func() string { return analysis.DisagreeMark },
	"disagreeNote": func() string { return analysis.DisagreeNote },
	"date":         func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
	"gateWord":     gateWord,
	"csp":          func() string { return MetaPolicy },
}).ParseFS(templateFS, "templates/*.html"))

// gateWord is how a page names a run's gate status: as the report
// does, "incomplete" where the store says failed (the run could not
// answer: gated cells or metrics missing), which beside a column of
// failed cells read as a crash when none had failed.
func gateWord(g results.GateStatus) string {
	if g == results.GateFailed {
		return "incomplete"
	}
	return string(g)
}

// Policy is the Content-Security-Policy Serve sends: the pages' own
// scripts, styles and images, nothing inline (no inline script, no
// style attribute, no event handler attribute), no plugin, no base
// element, no form, no framing. A text a page shows is then never run,
// even if a template or a script forgot to escape it.
const Policy = MetaPolicy + "; frame-ancestors 'none'"

// MetaPolicy is Policy as every page carries it in a <meta> element,
// for a site opened from disk: frame-ancestors is not allowed there
// (a browser ignores it, with a console error).
const MetaPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'"

// Options shape the site.
type Options struct {
	// Title heads every page; empty means "abtest".
	Title string
	// Served: the site is written for Serve, which serves the runs'
	// results directories beneath FilesPrefix, and its pages link their
	// files there; else they link them relative to the page, for a site
	// opened from disk beside the results.
	Served bool
}

// Site is what Write wrote.
type Site struct {
	Dir    string
	Index  string
	Runs   []string
	Trends []Trend
	// files are the results directories a served site links.
	files runDirs
}

// Trend is one trend page.
type Trend struct {
	Key  store.SeriesKey
	Page string // relative to the site
	// Points, ChangePoints and Unexpected count the series' values, its
	// change points and those no annotation explains.
	Points, ChangePoints, Unexpected int
}

// Marker is the file that marks a directory as a site abtest wrote: only
// such a directory, an empty one or a new one is (re)written.
const Marker = ".abtest-dashboard"

// CheckDir refuses (exit 2) a site directory that holds files and no
// Marker: the user's own files (an index.html of theirs) are never
// overwritten.
func CheckDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exitcode.BadInputf("dashboard -o %s: %v", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(dir, Marker)); err == nil && fi.Mode().IsRegular() {
		return nil
	}
	return exitcode.BadInputf("dashboard -o %s: the directory holds files abtest did not write (no %s); give a new or empty directory", dir, Marker)
}

// Write writes the site for everything in s into dir: a new or empty
// directory, or a site Write wrote before (CheckDir), whose pages are
// replaced.
func Write(ctx context.Context, s *store.Store, dir string, o Options) (*Site, error) {
	if o.Title == "" {
		o.Title = "abtest"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := CheckDir(abs); err != nil {
		return nil, err
	}
	site := &Site{Dir: abs, Index: filepath.Join(abs, "index.html")}
	for _, d := range []string{"assets", "runs", "trends"} {
		if err := safefile.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, exitcode.Failure(fmt.Errorf("dashboard: %w", err))
		}
	}
	if err := safefile.WriteFile(filepath.Join(abs, Marker), []byte("written by abtest dashboard; it rewrites this directory\n"), 0o644); err != nil {
		return nil, exitcode.Failure(fmt.Errorf("dashboard: %w", err))
	}
	if err := copyAssets(filepath.Join(abs, "assets")); err != nil {
		return nil, exitcode.Failure(fmt.Errorf("dashboard: %w", err))
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := s.SeriesKeys(ctx)
	if err != nil {
		return nil, err
	}
	series, err := history.AllTrends(ctx, s, keys)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Run{}
	for i := range runs {
		byID[runs[i].ID] = &runs[i]
	}
	for _, ser := range series {
		if len(ser.Points) == 0 {
			continue
		}
		t := Trend{Key: store.SeriesKey{Metric: ser.Metric, Config: ser.Config}, Page: trendPage(ser.Metric, ser.Config),
			Points: len(ser.Points), ChangePoints: len(ser.ChangePoints), Unexpected: len(ser.Unexpected())}
		if err := writeTrend(filepath.Join(abs, t.Page), o, ser, byID); err != nil {
			return nil, exitcode.Failure(fmt.Errorf("dashboard: %w", err))
		}
		site.Trends = append(site.Trends, t)
	}
	if o.Served {
		site.files = runDirs{}
	}
	rows := make([]indexRun, 0, len(runs))
	for i := range runs {
		if o.Served {
			site.files.addRun(&runs[i])
		}
		row, err := writeRun(ctx, s, abs, o, &runs[i], site.Trends)
		if err != nil {
			return nil, err
		}
		site.Runs = append(site.Runs, row.Page)
		rows = append(rows, row)
	}
	slices.Reverse(rows)
	groups, hidden := trendGroups(series, site.Trends)
	err = render(site.Index, "index.html", map[string]any{
		"Title": o.Title, "Root": ".", "Runs": rows, "Groups": groups, "Hidden": hidden, "Trends": len(site.Trends),
		"Generated": time.Now().UTC(), "Store": s.Where(),
	})
	return site, err
}

func copyAssets(dir string) error {
	return fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assets.ReadFile(path)
		if err != nil {
			return err
		}
		return safefile.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o644)
	})
}

func render(path, name string, data any) error {
	if err := safefile.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return exitcode.Failure(fmt.Errorf("dashboard: %w", err))
	}
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("dashboard: %w", err))
	}
	// A template writes in many small pieces: one write per page, not
	// one system call per piece.
	w := bufio.NewWriterSize(f, 64<<10)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		f.Close()
		return exitcode.Failure(fmt.Errorf("dashboard: %s: %w", name, err))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return exitcode.Failure(fmt.Errorf("dashboard: %s: %w", name, err))
	}
	return exitcode.Failure(f.Close())
}

// RunPage is a run's compare page, relative to the site.
func RunPage(id string) string { return filepath.Join("runs", id+".html") }

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// trendPage names a trend's page: readable, and unique through a hash of
// the exact key (two configurations could sanitise alike).
func trendPage(metric, config string) string {
	h := fnv.New32a()
	io.WriteString(h, metric+"\x00"+config)
	return filepath.Join("trends", fmt.Sprintf("%s--%s-%06x.html", unsafe.ReplaceAllString(metric, "_"), unsafe.ReplaceAllString(config, "_"), h.Sum32()&0xffffff))
}

// chartPoint is what the trend chart needs of a point.
type chartPoint struct {
	Date   string  `json:"date"`
	Value  float64 `json:"value"`
	Commit string  `json:"commit"`
	SHA    string  `json:"sha"`
	Run    string  `json:"run"`
	Page   string  `json:"page"`
	Host   string  `json:"host"`
	Doctor int     `json:"doctor"`
	// Base is the baseline's value in the point's run: the other arm.
	Base     *float64 `json:"base,omitempty"`
	BaseName string   `json:"base_name,omitempty"`
}

// trendData is the trend page's JSON block, which its script reads.
// html/template writes it as JSON with <, > and & escaped (\u003c…),
// so no text in it can end the block (a label's </script>).
type trendData struct {
	Series *store.Series `json:"series"`
	Points []chartPoint  `json:"points"`
}

func writeTrend(path string, o Options, ser *store.Series, runs map[string]*store.Run) error {
	base := map[string]store.Point{}
	for _, b := range ser.Baseline {
		base[b.Run] = b
	}
	pts := make([]chartPoint, len(ser.Points))
	for i, p := range ser.Points {
		cp := chartPoint{Date: p.Time.UTC().Format("2006-01-02 15:04"), Value: p.Value, Commit: p.Commit, SHA: p.SHA, Run: p.Run,
			Page: filepath.Join("..", RunPage(p.Run))}
		if b, ok := base[p.Run]; ok {
			cp.Base, cp.BaseName = &b.Value, b.Commit
		}
		if r := runs[p.Run]; r != nil {
			var hosts []string
			for _, sh := range r.Shards {
				hosts = append(hosts, sh.Host.Hostname)
				for _, f := range sh.Doctor {
					if f.Status != results.FindingOK {
						cp.Doctor++
					}
				}
			}
			cp.Host = strings.Join(hosts, ", ")
		}
		pts[i] = cp
	}
	return render(path, "trend.html", map[string]any{
		"Title": o.Title, "Root": "..", "Series": ser, "Points": pts, "Data": trendData{ser, pts},
	})
}

// Serve serves the site in dir on addr, which must be a loopback
// address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT), until ctx ends.
// ready, when not nil, receives the address it listens on. It serves
// the site's files alone: WriteAndServe serves the results directories
// too.
func Serve(ctx context.Context, dir, addr string, ready func(string)) error {
	return serve(ctx, siteHandler(dir, nil), addr, ready)
}

func serve(ctx context.Context, h http.Handler, addr string, ready func(string)) error {
	if err := CheckAddr(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("serve: %w", err))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if ready != nil {
		ready(ln.Addr().String())
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return exitcode.Failure(fmt.Errorf("serve: %w", err))
	}
	return nil
}

// secured adds to every response of h the Policy (the header, which
// unlike the pages' <meta> also forbids framing) and nosniff: a file is
// only ever read as the type its name gives it (a stored log is never
// run as a script).
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", Policy)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// CheckAddr refuses an address Serve cannot listen on as bad input,
// before anything is opened or written: not HOST:PORT, a port outside
// 0–65535 (0: any free one), or a host off the loopback interface.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return exitcode.BadInputf("--addr %s: want HOST:PORT on the loopback interface with a port from 0 to 65535, e.g. 127.0.0.1:8080", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return exitcode.BadInputf("--addr %s: the dashboard is served on the loopback interface only (127.0.0.1)", addr)
	}
	return nil
}

// WriteAndServe writes the site of s into dir (a temporary directory,
// removed when serving ends, when dir is empty), closes s (serving needs
// only the files), and serves the site on addr (Serve) until ctx ends,
// with the runs' results directories read-only beneath FilesPrefix,
// where its pages link them. ready, when not nil, receives the site's
// directory and the address.
func WriteAndServe(ctx context.Context, s *store.Store, dir, addr string, ready func(dir, addr string)) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "abtest-dashboard-")
		if err != nil {
			s.Close()
			return exitcode.Failure(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	site, err := Write(ctx, s, dir, Options{Served: true})
	s.Close()
	if err != nil {
		return err
	}
	return serve(ctx, siteHandler(site.Dir, site.files), addr, func(a string) {
		if ready != nil {
			ready(site.Dir, a)
		}
	})
}
