package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// demoSite imports the demo's recorded run (demo/testdata/run, copied
// to root/demo-run) and writes its site; it returns the store (open
// until the test ends), the run, the report of the directory and the
// site.
func demoSite(t *testing.T, root string) (*store.Store, string, *analysis.Report, *dashboard.Site) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(root, "demo-run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{results.PlanFile, results.CellsFile} {
		data, err := os.ReadFile(filepath.Join("..", "demo", "testdata", "run", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	site, err := dashboard.Write(ctx, s, filepath.Join(root, "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, st.Run, rep, site
}

// pageCounts reads a compare page's badges as a summary.
func pageCounts(t *testing.T, page []byte) analysis.Summary {
	t.Helper()
	summary := regexp.MustCompile(`(?s)<p class="counts">(.*?)</p>`).FindSubmatch(page)
	if summary == nil {
		t.Fatalf("no counts on the compare page")
	}
	var got analysis.Summary
	for _, m := range answerBadge.FindAllSubmatch(summary[1], -1) {
		n, _ := strconv.Atoi(string(m[3]))
		if string(m[1]) == string(results.RoleUntested) {
			got.Behind += n
			continue
		}
		for range n {
			got.Count(results.RoleGated, results.Verdict(m[1]))
		}
	}
	return got
}

func sameCounts(a, b analysis.Summary) bool {
	return a.Better == b.Better && a.Worse == b.Worse && a.Same == b.Same && a.Unknown == b.Unknown &&
		a.Incomplete == b.Incomplete && a.Behind == b.Behind && a.Higher == b.Higher && a.Lower == b.Lower
}

// TestDemoRunPageAnswer (issue 42): the demo's run page shows the
// report's summary counts and names the finding (pgss_deallocs better)
// and the TPS answer first, in the report's answer line; the index says
// the same line, word for word (one wording of one answer).
func TestDemoRunPageAnswer(t *testing.T) {
	root := t.TempDir()
	_, run, rep, site := demoSite(t, root)
	want := rep.Summaries[0]
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(run)))
	if err != nil {
		t.Fatal(err)
	}
	if got := pageCounts(t, page); !sameCounts(got, want) || want.Better == 0 || want.Behind == 0 {
		t.Errorf("badges %+v, the report's summary %+v", got, want)
	}
	line := regexp.MustCompile(`<p class="answer">([^<]*)</p>`).FindSubmatch(page)
	if line == nil || !strings.HasPrefix(html.UnescapeString(string(line[1])), "patch vs base: pgss_deallocs -66.6% better on churn; tps: ") {
		t.Fatalf("the answer line: %q", line)
	}
	index, err := os.ReadFile(site.Index)
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile(`(?s)<td class="answer">(.*?)</td>`).FindSubmatch(index)
	if lines := rep.AnswerLines(); cell == nil || len(lines) != 1 || string(cell[1]) != "<div>"+string(line[1])+"</div>" ||
		html.UnescapeString(string(line[1])) != lines[0] {
		t.Errorf("the index's answer %q, the run page's %q, the report's %q", cell, line[1], lines)
	}
}

// changeRow is a row of a compare page's table: its configuration and
// metric.
var changeRow = regexp.MustCompile(`<tr data-verdict="[a-z]+"[^>]*>\s*<td class="cfg"><a [^>]*>([^<]+)</a></td>\s*<td>(?:<a [^>]*>)?([^<]+)<`)

// tableRows are the configuration/metric pairs of a compare page's table
// id.
func tableRows(t *testing.T, page []byte, id string) []string {
	t.Helper()
	tbl := regexp.MustCompile(`(?s)<table id="` + id + `".*?</table>`).Find(page)
	if tbl == nil {
		t.Fatalf("no table %s", id)
	}
	var out []string
	for _, m := range changeRow.FindAllSubmatch(tbl, -1) {
		out = append(out, html.UnescapeString(string(m[1]))+" "+string(m[2]))
	}
	slices.Sort(out)
	return out
}

// TestDemoSignificantRowsNotFolded (issue 42): on the demo's run page
// the changes table lists exactly the called rows and the unknown ones
// whose interval excludes 0 (select1 latency_p99_ms +11.65 % [+5.73,
// +17.91]); none of them is folded among the rows without a
// significant change, and such a row does not say what it could not
// detect.
func TestDemoSignificantRowsNotFolded(t *testing.T) {
	root := t.TempDir()
	s, run, _, site := demoSite(t, root)
	rep, err := history.Judge(context.Background(), s, run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	uncalled, rows := 0, 0
	for _, row := range rep.Rows {
		for _, v := range row.Stats {
			if v.Commit == rep.Baseline {
				continue
			}
			rows++
			called := v.Verdict != results.Same && v.Verdict != results.Unknown
			moved := v.DeltaLo > 0 || v.DeltaHi < 0
			if called || (v.Verdict == results.Unknown && moved) {
				want = append(want, row.Config+" "+row.Metric)
				if !called {
					uncalled++
				}
			}
		}
	}
	slices.Sort(want)
	if uncalled == 0 || !slices.Contains(want, "select1/c8/cpuall/pgss.max=1000 latency_p99_ms") {
		t.Fatalf("the demo has no unknown row whose interval excludes 0: %v", want)
	}
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(run)))
	if err != nil {
		t.Fatal(err)
	}
	if got := tableRows(t, page, "changes"); !slices.Equal(got, want) {
		t.Errorf("changes table %q, want %q", got, want)
	}
	quiet := tableRows(t, page, "quiet")
	for _, w := range want {
		if slices.Contains(quiet, w) {
			t.Errorf("%s is folded among the rows without a significant change", w)
		}
	}
	if len(quiet)+len(want) != rows {
		t.Errorf("%d folded and %d shown rows of %d", len(quiet), len(want), rows)
	}
	row := regexp.MustCompile(`(?s)<a [^>]*>select1/c8/cpuall/pgss.max=1000</a></td>\s*<td><a [^>]*>latency_p99_ms</a>.*?</tr>`).Find(page)
	// Called higher (report-only, in a family of its own), or unknown
	// with an interval that excludes 0: either way said, with no MDE.
	if !strings.Contains(string(row), "interval excludes 0") && !strings.Contains(string(row), ">higher<") || strings.Contains(string(row), "could not detect") {
		t.Errorf("select1 latency_p99_ms row: %s", row)
	}
}

// TestDemoConfigPageOrder (issue 42): the demo's churn configuration
// page lists tps first, then pgss_deallocs (the gated change), the
// report-only changes after it, and every constant (0 vs 0 counters)
// after every metric that varies, each constant in one line without
// its table of repeats.
func TestDemoConfigPageOrder(t *testing.T) {
	root := t.TempDir()
	_, run, _, site := demoSite(t, root)
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.ConfigPage(run, "churn/c8/cpuall/pgss.max=1000")))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var constant []bool
	for _, sec := range regexp.MustCompile(`(?s)<section class="metric">.*?</section>`).FindAll(page, -1) {
		m := regexp.MustCompile(`<h2>([a-z0-9_]+)`).FindSubmatch(sec)
		if m == nil {
			t.Fatalf("a section without its metric: %s", sec)
		}
		order = append(order, string(m[1]))
		c := strings.Contains(string(sec), `class="meta constant"`)
		if c && strings.Contains(string(sec), `<table class="repeats">`) {
			t.Errorf("constant %s has its table of repeats", m[1])
		}
		constant = append(constant, c)
	}
	if len(order) < 10 || order[0] != results.MetricTPS || order[1] != "pgss_deallocs" {
		t.Fatalf("metrics in the order %v: want tps, then pgss_deallocs", order)
	}
	first := slices.Index(constant, true)
	if first < 0 || slices.Contains(constant[first:], false) {
		t.Errorf("constants %v among %v: want them all last", constant, order)
	}
	for _, m := range []string{"tup_ins", "tup_del", "failed_tx"} {
		if i := slices.Index(order, m); i < 0 || !constant[i] {
			t.Errorf("%s is not listed as a constant: %v", m, order)
		}
	}
	if hot, cold := slices.Index(order, "pgss_hot"), slices.Index(order, "pgss_cold"); cold < 2 || hot < 2 || cold > first || hot > first {
		t.Errorf("pgss_cold at %d, pgss_hot at %d in %v", cold, hot, order)
	}
}

// TestDemoIndexAndTrend (issue 42): the index of one run shows the run
// with its answer and no sparkline (each trend has one point); the
// run's tps trend page carries both arms, the patch's median and the
// baseline's, as the report has them.
func TestDemoIndexAndTrend(t *testing.T) {
	root := t.TempDir()
	_, run, rep, site := demoSite(t, root)
	index, err := os.ReadFile(site.Index)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(index), `class="spark"`) || !strings.Contains(string(index), "<div>patch vs base: pgss_deallocs -66.6% better on churn; ") {
		t.Errorf("the index draws one-point sparklines or lacks the answer:\n%s", index)
	}
	var tr *dashboard.Trend
	for i, x := range site.Trends {
		if x.Key.Metric == results.MetricTPS && strings.HasPrefix(x.Key.Config, "select1/") {
			tr = &site.Trends[i]
		}
	}
	if tr == nil {
		t.Fatal("no tps trend of select1")
	}
	page, err := os.ReadFile(filepath.Join(site.Dir, tr.Page))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)<script type="application/json" id="trend-data">(.*?)</script>`).FindSubmatch(page)
	if block == nil {
		t.Fatal("no trend data")
	}
	var data struct {
		Points []struct {
			Run      string   `json:"run"`
			Value    float64  `json:"value"`
			Base     *float64 `json:"base"`
			BaseName string   `json:"base_name"`
		} `json:"points"`
	}
	if err := json.Unmarshal(block[1], &data); err != nil {
		t.Fatal(err)
	}
	median := map[string]float64{}
	for _, row := range rep.Rows {
		if row.Metric == results.MetricTPS && row.Config == tr.Key.Config {
			for _, st := range row.Stats {
				median[st.Commit] = st.Median
			}
		}
	}
	if len(data.Points) != 1 || data.Points[0].Run != run || data.Points[0].Base == nil || data.Points[0].BaseName != rep.Baseline ||
		*data.Points[0].Base != median[rep.Baseline] || data.Points[0].Value != median["patch"] {
		t.Errorf("trend points %+v; the report's medians %v", data.Points, median)
	}
}
