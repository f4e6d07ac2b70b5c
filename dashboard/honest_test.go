package dashboard_test

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// verdictRow is a compare page's verdict row: the metric's cell, base
// median, commit median and Δ by their data-sort values, and the Δ
// cell.
var verdictRow = regexp.MustCompile(`<tr data-verdict="[a-z]+"[^>]*>\s*<td class="cfg">.*?</td>\s*<td>(.*?)</td>\s*<td data-sort="([^"]*)">.*?</td>\s*<td data-sort="([^"]*)">.*?</td>\s*<td data-sort="([^"]*)">(.*?)</td>`)

// TestDashboardMarksDeltaAgainstMedians (issue 23): where a row's Δ (the
// paired estimate, +9 % here) points the other way than the medians
// beside it (295 → 290), the compare page and the configuration page
// mark it with the report's † and say why, as report.md and the text
// report do; every row carries the mark exactly where the report model
// does (Stat.MediansDisagree), the dashboard deriving none of its own.
func TestDashboardMarksDeltaAgainstMedians(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	base, patch := []float64{100, 290, 310, 300}, []float64{150, 280, 300, 305}
	cfg := results.Config{Workload: "select1", Clients: 1, Settings: map[string]string{}}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 1, Repeats: len(base),
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "patch", SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: []results.Config{cfg},
		Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
			v := base[rep-1]
			if k.Label == "patch" {
				v = patch[rep-1]
			}
			return map[string]float64{results.MetricTPS: v}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, site := importAndWrite(t, root, dir)
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	// The report model marks the Δ (Stat.MediansDisagree); the page
	// carries exactly its marks.
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, row := range rep.Rows {
		for _, s := range row.Stats {
			if s.Commit != rep.Baseline && s.NoSignal == "" {
				want[row.Metric] = s.MediansDisagree
			}
		}
	}
	if !want[results.MetricTPS] {
		t.Fatalf("the report does not mark tps's Δ against its medians: %+v", rep.Rows)
	}
	rows := 0
	for _, m := range verdictRow.FindAllStringSubmatch(string(page), -1) {
		metric := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], "")
		mark, ok := want[metric]
		if !ok {
			continue
		}
		rows++
		if got := strings.Contains(m[5], analysis.DisagreeMark); got != mark {
			t.Errorf("compare page: %s's Δ %s against medians %s → %s marked %v, the report's %v", metric, m[4], m[2], m[3], got, mark)
		}
	}
	if rows != len(want) {
		t.Fatalf("%d of the report's %d rows found on the compare page:\n%s", rows, len(want), page)
	}
	cfgPage, err := os.ReadFile(filepath.Join(site.Dir, dashboard.ConfigPage(st.Run, cfg.ID())))
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]byte{"compare page": page, "configuration page": cfgPage} {
		if !strings.Contains(string(p), analysis.DisagreeMark+"</span>") || !strings.Contains(html.UnescapeString(string(p)), analysis.DisagreeNote) {
			t.Errorf("the %s neither marks the tps row nor says why", name)
		}
	}
}

// importAndWrite imports the run in dir into a new store under root and
// writes the dashboard's site there.
func importAndWrite(t *testing.T, root, dir string) (store.ImportStats, *dashboard.Site) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	site, err := dashboard.Write(ctx, s, filepath.Join(root, "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, site
}
