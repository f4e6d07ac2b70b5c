package matrix

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestServersRecorded: a run records what each commit's server ran with
// (servers.json: version, --initdb-opt, pg_settings) and the one pgbench
// of its cells; the report shows the servers and, for equal servers, no
// difference. Open-loop (plumbing): alone 2.5 CPU-s against 3.6
// closed-loop, 5 s of wall (load 1.8-2.4).
func TestServersRecorded(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1, Duration: time.Second, Protocol: "simple",
		InitdbOpts: []string{"--data-checksums"},
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	var out strings.Builder
	deps.Out = &out
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	servers, err := results.ReadServers(dir)
	if err != nil || len(servers) != 2 {
		t.Fatalf("servers.json: %v, %v", servers, err)
	}
	for c, s := range servers {
		if s.Settings["data_checksums"] != "on" || strings.Join(s.InitdbOpts, " ") != "--data-checksums" || !strings.Contains(s.Version, "15") {
			t.Errorf("%s: version %q, initdb %v, data_checksums %q", c, s.Version, s.InitdbOpts, s.Settings["data_checksums"])
		}
		if passed, ok := s.Initdb(); !ok || strings.Join(passed, " ") != "--data-checksums" {
			t.Errorf("%s: initdb given %q (recorded %v)", c, passed, ok)
		}
	}
	recs, _, _ := results.ReadRecords(dir)
	for _, r := range recs {
		if r.Pgbench != filepath.Join(install, "bin", "pgbench") {
			t.Errorf("%s: pgbench %q", r.Cell, r.Pgbench)
		}
	}
	rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	rep.WriteMarkdown(&md)
	if len(rep.ServerDiffs) != 0 || !strings.Contains(md.String(), "## Servers") || !strings.Contains(md.String(), "Every setting is the same") {
		t.Errorf("diffs %v\n%s", rep.ServerDiffs, md.String())
	}
}

// TestNoDataChecksumsBefore17: --initdb-opt=--no-data-checksums, what
// makes PostgreSQL 18 equal to older servers, is given to PG 15's initdb
// too, which does not know it (its checksums are off by default): its
// cells run, with checksums off, the option recorded as asked.
// Open-loop (plumbing): alone 2.6 CPU-s against 4.0 closed-loop,
// 5 s of wall (load 2.2-2.3).
func TestNoDataChecksumsBefore17(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1, Duration: time.Second, Protocol: "simple",
		InitdbOpts: []string{"--no-data-checksums"},
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := results.ReadRecords(dir)
	for _, r := range recs {
		if r.Status != results.StatusOK {
			t.Errorf("%s: %s %s", r.Cell, r.Status, r.Error)
		}
	}
	servers, _ := results.ReadServers(dir)
	for c, s := range servers {
		if s.Settings["data_checksums"] != "off" || strings.Join(s.InitdbOpts, " ") != "--no-data-checksums" {
			t.Errorf("%s: initdb %v, data_checksums %q", c, s.InitdbOpts, s.Settings["data_checksums"])
		}
		// What PG 15's initdb was given: nothing (issue 40: the report
		// listed --no-data-checksums for it).
		if passed, ok := s.Initdb(); !ok || len(passed) != 0 {
			t.Errorf("%s: initdb given %q (recorded %v); want nothing", c, passed, ok)
		}
	}
	if len(recs) != 2 || len(servers) != 2 {
		t.Errorf("%d records, %d servers; want 2 and 2", len(recs), len(servers))
	}
}
