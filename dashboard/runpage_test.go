package dashboard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
)

// Markup a run's names may hold: a commit's label and a workload file's
// name, each with a script and a quote that would end an attribute.
const (
	hostileCommit   = `<script>window.__xss=6</script>"patch`
	hostileWorkload = `<script>window.__xss=7<\script>"w`
)

// TestRunPageModelHostileNames (issue 42): a commit label and a workload
// name holding <script> and " are text everywhere the run page shows the
// report model (the answer line, the overview, the report) and in its
// attributes: the page's one script is its own file.
func TestRunPageModelHostileNames(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	cfg := results.Config{Workload: hostileWorkload, Clients: 4, Settings: map[string]string{}}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 3, Repeats: 6,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: hostileCommit, SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: []results.Config{cfg},
		Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
			v := 5000 + 7*float64(rep%3)
			if k.Label == hostileCommit {
				v *= 0.8
			}
			return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 1e4 / v}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, site := importAndWrite(t, root, dir)
	data, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if n := strings.Count(page, "<script"); n != 1 || !strings.Contains(page, `<script src="../assets/dashboard.js"></script>`) {
		t.Errorf("the run page holds %d script elements, want its own file's alone", n)
	}
	for _, raw := range []string{hostileCommit, hostileWorkload, `</script>"patch`, `<\script>"w`, "__xss=6</script>", "<\\script>"} {
		if strings.Contains(page, raw) {
			t.Errorf("the run page holds %q unescaped", raw)
		}
	}
	// The model's parts are there, and show the names as text.
	for _, part := range []string{`(?s)<p class="answer">(.*?)</p>`, `(?s)<section id="overview">(.*?)</section>`, `(?s)<details id="report">(.*?)</details>\s*<h2>Configurations`} {
		m := regexp.MustCompile(part).FindStringSubmatch(page)
		if m == nil {
			t.Errorf("the run page has no %s", part)
			continue
		}
		text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], ""))
		if !strings.Contains(text, hostileCommit) {
			t.Errorf("%s does not name the commit %q as text: %q", part, hostileCommit, text)
		}
		if part != `(?s)<p class="answer">(.*?)</p>` && !strings.Contains(text, hostileWorkload) {
			t.Errorf("%s does not name the workload %q as text", part, hostileWorkload)
		}
	}
}

// TestRunPageEveryCellFailed (issue 42): a run whose every cell failed
// shows its failures — each error, how many cells it ended — and says
// there is no comparison, never an empty table of verdicts.
func TestRunPageEveryCellFailed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 4, Repeats: 3,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "patch", SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: []results.Config{storetest.Config},
		Value: func(results.Commit, results.Config, int) map[string]float64 {
			return map[string]float64{results.MetricTPS: 1}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	failCells(t, dir, func(r *results.Record) string {
		if r.Commit == "patch" {
			return `server crashed: <b>signal 11</b>`
		}
		return "pgbench: connection refused"
	})
	st, site := importAndWrite(t, root, dir)
	data, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	failures := regexp.MustCompile(`(?s)<section id="failures">(.*?)</section>`).FindStringSubmatch(page)
	if failures == nil {
		t.Fatalf("the run page of a run whose cells all failed has no failures section:\n%s", page)
	}
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(failures[1], ""))
	for _, want := range []string{"6 of 6", "3 cells: server crashed: <b>signal 11</b>", "3 cells: pgbench: connection refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("failures section lacks %q: %q", want, text)
		}
	}
	if strings.Contains(page, "<b>signal 11</b>") {
		t.Error("a cell's error became markup")
	}
	if strings.Contains(page, `<table id="changes"`) || strings.Contains(page, `<table id="quiet"`) || !strings.Contains(page, `id="no-rows"`) {
		t.Errorf("the run page shows tables of verdicts for a run without any, or does not say there is none")
	}
	// The index and the run page say it alike: nothing compared, and
	// the gate could not answer.
	line := regexp.MustCompile(`<p class="answer">([^<]*)</p>`).FindStringSubmatch(page)
	index, err := os.ReadFile(site.Index)
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile(`(?s)<td class="answer">(.*?)</td>`).FindStringSubmatch(string(index))
	if line == nil || !strings.HasPrefix(line[1], "patch vs base: nothing compared") || cell == nil || cell[1] != "<div>"+line[1]+"</div>" {
		t.Errorf("answer on the run page %q, on the index %q; want the same, nothing compared", line, cell)
	}
	if !strings.Contains(page, `gate: <b>incomplete</b>`) || !strings.Contains(string(index), `<td class="gate" title="`) || !strings.Contains(string(index), `">incomplete</td>`) {
		t.Errorf("a run whose every cell failed does not read incomplete on both pages")
	}
}

// failCells rewrites dir's cells as failed with the error errOf gives,
// without metrics.
func failCells(t *testing.T, dir string, errOf func(*results.Record) string) {
	t.Helper()
	path := filepath.Join(dir, results.CellsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r results.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Error, r.Metrics = results.StatusFailed, errOf(&r), results.Values{}
		line, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
