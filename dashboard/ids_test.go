package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestConfigIDsRoundTrip follows configurations whose setting values hold
// "/", "," and "=" (and would collide if ids or directories were not
// escaped: "a/b" vs "a_b" vs "a%2Fb") from the plan through the cell
// directories, the records, the analysis, the store and the dashboard:
// each keeps one id, and distinct configurations keep distinct ids.
func TestConfigIDsRoundTrip(t *testing.T) {
	ctx := context.Background()
	values := []string{`a/b,c=d`, `a_b,c=d`, `a%2Fb,c=d`, `a b`, `a/work_mem=1MB`}
	var quoted []string
	for _, v := range values {
		quoted = append(quoted, `"`+v+`"`)
	}
	ax, err := results.ParseAxis("search_path=" + strings.Join(quoted, ","))
	if err != nil || !slices.Equal(ax.Values, values) {
		t.Fatalf("ParseAxis = %+v, %v", ax, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	want := writeRun(t, dir, ax)
	ids := slices.Sorted(maps.Keys(want))
	if len(ids) != len(values) {
		t.Fatalf("%d configurations have %d ids: %q", len(values), len(ids), ids)
	}
	// A second run whose configuration, unescaped, would have the id of
	// the first run's "a/work_mem=1MB".
	dir2 := filepath.Join(t.TempDir(), "run2")
	want2 := writeRun(t, dir2, results.Axis{Name: "search_path", Values: []string{"a"}}, results.Axis{Name: "work_mem", Values: []string{"1MB"}})
	for id := range want2 {
		if _, ok := want[id]; ok {
			t.Fatalf("configurations of two runs share the id %q", id)
		}
	}

	// Records, as read back.
	in, err := analysis.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "cells.jsonl", in, want)

	// Analysis.
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, row := range rep.Rows {
		got[row.Config] = true
	}
	if g := slices.Sorted(maps.Keys(got)); !slices.Equal(g, ids) {
		t.Errorf("analysis configurations %q, want %q", g, ids)
	}

	// Store: verdicts, cells and the input it gives back.
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	judged, err := history.Judge(ctx, s, st.Run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]bool{}
	for _, row := range judged.Rows {
		got[row.Config] = true
	}
	if g := slices.Sorted(maps.Keys(got)); !slices.Equal(g, ids) {
		t.Errorf("store verdict configurations %q, want %q", g, ids)
	}
	for _, id := range ids {
		if r, err := s.ResolveConfig(ctx, id); err != nil || r != id {
			t.Errorf("ResolveConfig(%q) = %q, %v", id, r, err)
		}
	}
	back, err := history.Input(ctx, s, st.Run)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "the store", back, want)
	st2, err := s.Import(ctx, dir2)
	if err != nil {
		t.Fatal(err)
	}
	if back, err = history.Input(ctx, s, st2.Run); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "the store (second run)", back, want2)
	if back, err = history.Input(ctx, s, st.Run); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "the store (first run, after the second)", back, want)

	// Dashboard: the run page names every configuration, and each has
	// its own trend page.
	site, err := dashboard.Write(ctx, s, filepath.Join(t.TempDir(), "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(site.Dir, dashboard.RunPage(st.Run)))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !strings.Contains(html.UnescapeString(string(page)), id) {
			t.Errorf("the run page does not name configuration %q", id)
		}
	}
	pages := map[string]string{}
	for _, tr := range site.Trends {
		if tr.Key.Metric != results.MetricTPS {
			continue
		}
		if other, ok := pages[tr.Page]; ok {
			t.Errorf("trends of %q and %q share page %s", tr.Key.Config, other, tr.Page)
		}
		pages[tr.Page] = tr.Key.Config
	}
	all := slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(want2)), ids...)))
	if g := slices.Sorted(maps.Values(pages)); !slices.Equal(g, all) {
		t.Errorf("TPS trend pages for %q, want %q", g, all)
	}
}

// checkRecords checks that in's records name the planned configurations
// by the same ids, with the same settings.
func checkRecords(t *testing.T, where string, in *analysis.Input, want map[string]results.Config) {
	t.Helper()
	for _, rec := range in.Records {
		c, ok := want[rec.Config.ID()]
		if !ok {
			t.Errorf("%s: cell %s has configuration %q, not a planned one", where, rec.Cell, rec.Config.ID())
			continue
		}
		a, _ := json.Marshal(c.Settings)
		b, _ := json.Marshal(rec.Settings)
		if string(a) != string(b) {
			t.Errorf("%s: cell %s settings %s, want %s", where, rec.Cell, b, a)
		}
	}
	if len(in.Records) == 0 {
		t.Errorf("%s: no records", where)
	}
}

// writeRun writes a run of two commits over the settings axes into dir,
// each cell with a directory of its own, and returns the plan's
// configurations by id.
func writeRun(t *testing.T, dir string, axes ...results.Axis) map[string]results.Config {
	t.Helper()
	commits := []results.Commit{{Label: "base", Install: "/x", Build: "base"}, {Label: "patch", Install: "/y", Build: "patch"}}
	settings := []string{results.PgssMax + "=1000"}
	for _, a := range axes {
		settings = append(settings, a.Name+`="`+strings.Join(a.Values, `","`)+`"`)
	}
	req := matrix.Request{Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"2"}, "settings": settings},
		Repeats: 3, Duration: 5 * time.Second, Protocol: "simple", Build: "release", Order: matrix.ABBA, Seed: 1}
	p, err := matrix.PlanFor(req, commits)
	if err != nil {
		t.Fatal(err)
	}
	p.Created = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	want := map[string]results.Config{}
	for _, c := range p.Configs {
		want[c.ID()] = c
	}

	// Plan and cell directories.
	dirs := map[string]string{}
	var recs []results.Record
	for _, c := range p.Cells {
		if !strings.HasPrefix(c.ID, c.Config.ID()+"/") {
			t.Errorf("cell %s does not start with its configuration's id %s", c.ID, c.Config.ID())
		}
		cd := results.CellDir(dir, c.ID)
		if other, ok := dirs[cd]; ok {
			t.Fatalf("cells %s and %s share %s", c.ID, other, cd)
		}
		dirs[cd] = c.ID
		if err := os.MkdirAll(cd, 0o755); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, filepath.Join(cd, "pgbench.log"))
		tps := 1000.0 + float64(c.Repeat)
		recs = append(recs, results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: results.Config{Workload: c.Workload, Clients: c.Clients, Settings: c.Settings},
			Repeat: c.Repeat, Status: results.StatusOK, DurationS: 5, StartedAt: p.Created.Add(time.Duration(c.Seq) * time.Minute),
			Metrics: results.ValuesOf(map[string]float64{results.MetricTPS: tps, results.MetricLatencyAvg: 2000 / tps}), Artifacts: map[string]string{"pgbench": rel}})
	}
	if err := results.WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := results.AppendRecord(dir, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}

	return want
}
