package dashboard_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
)

// answerBadge is one count of a compare page's summary: a headline
// verdict, the secondary tests not run, or a report-only one.
var answerBadge = regexp.MustCompile(`<span class="count ([a-z]+)( report-only)?"[^>]*>(\d+) `)

// TestDashboardCountsAsReport: a run analysed to markdown and imported
// into the store gives the same counts on the dashboard's compare page
// as the report's summary line: the headline counts only tested rows, the
// secondary tests not run and the report-only higher and lower are said
// apart, and report-only same or unknown rows and mirrored ones are not
// counted (before the store kept each row's role, the page counted every
// stored row).
func TestDashboardCountsAsReport(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	var configs []results.Config
	for _, w := range []string{"select1", "churn", "tpcb"} {
		configs = append(configs, results.Config{Workload: w, Clients: 4, Settings: map[string]string{}})
	}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 3, Repeats: 8,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "patch", SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: configs, Metrics: results.Builtin,
		Value: func(k results.Commit, c results.Config, rep int) map[string]float64 {
			// select1 too noisy for its 2 % threshold: its tps is
			// unknown, and its secondaries are not tested.
			step := 0.01
			if c.Workload == "select1" {
				step = 0.06
			}
			noise := 1 + step*float64((rep*7+len(c.Workload)+len(k.Label))%5-2)
			tps, entries := 5000*noise, 100.0
			if k.Label == "patch" {
				entries = 130
				if c.Workload == "churn" {
					tps *= 0.85
				}
			}
			return map[string]float64{results.MetricTPS: tps, results.MetricLatencyAvg: 4000 / tps,
				results.MetricLatencyP95: 9 * noise, results.MetricLatencyP99: 12 / noise,
				results.MetricServerCPUPerTx: 1e-4 * noise, results.MetricPGSSEntries: entries}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var want analysis.Summary
	for _, sm := range rep.Summaries {
		if sm.Commit == "patch" {
			want = sm
		}
	}
	// The run must have what the counts tell apart.
	rows := 0
	for _, row := range rep.Rows {
		rows += len(row.Stats) - 1
	}
	headline := want.Better + want.Worse + want.Same + want.Unknown + want.Incomplete
	if want.Behind == 0 || want.Higher+want.Lower == 0 || headline+want.Behind+want.Higher+want.Lower >= rows {
		t.Fatalf("the run has no row of every role: summary %+v of %d rows", want, rows)
	}

	st, site := importAndWrite(t, root, dir)
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	summary := regexp.MustCompile(`(?s)<p class="counts">(.*?)</p>`).FindSubmatch(page)
	if summary == nil {
		t.Fatalf("no counts on the compare page:\n%s", page)
	}
	var got analysis.Summary
	for _, m := range answerBadge.FindAllSubmatch(summary[1], -1) {
		n, _ := strconv.Atoi(string(m[3]))
		if string(m[1]) == string(results.RoleUntested) {
			got.Behind += n
			continue
		}
		got.Count(results.RoleGated, results.Verdict(m[1]))
		for i := 1; i < n; i++ {
			got.Count(results.RoleGated, results.Verdict(m[1]))
		}
	}
	if got.Better != want.Better || got.Worse != want.Worse || got.Same != want.Same || got.Unknown != want.Unknown ||
		got.Incomplete != want.Incomplete || got.Behind != want.Behind || got.Higher != want.Higher || got.Lower != want.Lower {
		t.Errorf("dashboard counts %s\nreport's summary: %d better, %d worse, %d same, %d unknown, %d incomplete, %d not run, %d higher, %d lower",
			summary[1], want.Better, want.Worse, want.Same, want.Unknown, want.Incomplete, want.Behind, want.Higher, want.Lower)
	}
}

// TestIncompleteGateIsNotFailed: a run whose gated tps is missing from
// one cell could not answer; the store calls its gate failed, and the
// run list and its page say incomplete, as the report does, beside 0
// failed cells (the demo's run list read "failed" with none failed).
func TestIncompleteGateIsNotFailed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 5, Repeats: 6,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "patch", SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: []results.Config{storetest.Config},
		Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
			m := map[string]float64{results.MetricLatencyAvg: 0.8 + 0.01*float64(rep)}
			if k.Label == "base" || rep != 2 {
				m[results.MetricTPS] = 5000 + 10*float64(rep)
			}
			return m
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, site := importAndWrite(t, root, dir)
	index, err := os.ReadFile(site.Index)
	if err != nil {
		t.Fatal(err)
	}
	gate := regexp.MustCompile(`<td class="gate" title="([^"]*)">([^<]*)</td>`).FindSubmatch(index)
	if gate == nil || string(gate[2]) != "incomplete" || len(gate[1]) == 0 {
		t.Errorf("run list's gate cell: %q, want incomplete with its reason", gate)
	}
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`gate: <b>incomplete</b> · \S`).Match(page) {
		t.Errorf("run page's gate: %s", regexp.MustCompile(`<p class="gate[^>]*>.*?</p>`).Find(page))
	}
}
