package dashboard_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
)

// TestConfigPageMarksFailedCells: a configuration page marks the row of
// each failed cell, and only those (the template is told by a field, not
// by comparing a status with a literal).
func TestConfigPageMarksFailedCells(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	cfg := results.Config{Workload: "select1", Clients: 4, Settings: map[string]string{}}
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), Seed: 1, Repeats: 3,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "patch", SHA: storetest.BaseSHA, Build: "patch"}},
		Configs: []results.Config{cfg},
		Value: func(_ results.Commit, _ results.Config, rep int) map[string]float64 {
			return map[string]float64{results.MetricTPS: 1000 + float64(rep)}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for i := range recs {
		if recs[i].Commit == "patch" && recs[i].Repeat == 2 {
			recs[i].Status, recs[i].Error, recs[i].Metrics = results.StatusFailed, "pgbench: exit 2", results.Values{}
		}
		line, _ := json.Marshal(&recs[i])
		buf.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st, site := importAndWrite(t, root, dir)
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.ConfigPage(st.Run, cfg.ID())))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`<tr class="(fail)?"><td>(base|patch)</td><td>r(\d)</td>`).FindAllStringSubmatch(string(page), -1)
	if len(rows) != 6 {
		t.Fatalf("%d cell rows on the configuration page, want 6:\n%s", len(rows), page)
	}
	for _, r := range rows {
		if failed := r[2] == "patch" && r[3] == "2"; (r[1] == "fail") != failed {
			t.Errorf("%s r%s: class %q", r[2], r[3], r[1])
		}
	}
}
