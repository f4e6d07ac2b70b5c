package matrix

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/results"
)

// TestRunRefusesALockedDirectory: a second run on a directory another
// run holds exits 2 naming the holder's pid, and writes nothing.
func TestRunRefusesALockedDirectory(t *testing.T) {
	dir := t.TempDir()
	release, err := results.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p, _ := NewPlan(opts())
	err = Run(context.Background(), &Deps{}, p, dir)
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second run: %v; want exit 2 naming pid %d", err, os.Getpid())
	}
	if _, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
		t.Error("the refused run wrote plan.json")
	}
}

// TestAdoptRepairsAndRefuses: resuming repairs a torn last line and says
// so; another plan in the directory is refused.
func TestAdoptRepairsAndRefuses(t *testing.T) {
	dir := t.TempDir()
	p, _ := NewPlan(opts())
	if err := results.WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	rec := &results.Record{Cell: p.Cells[0].ID, Commit: p.Cells[0].Commit, Status: results.StatusOK}
	results.AppendRecord(dir, rec)
	f, _ := os.OpenFile(filepath.Join(dir, results.CellsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"cell":"torn`)
	f.Close()
	var out strings.Builder
	if err := adopt(&Deps{Out: &out}, p, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "torn last line") {
		t.Errorf("no note of the repair: %q", out.String())
	}
	data, _ := os.ReadFile(filepath.Join(dir, results.CellsFile))
	if !strings.HasSuffix(string(data), "}\n") || strings.Contains(string(data), "torn") {
		t.Errorf("cells.jsonl after repair: %q", data)
	}
	o := opts()
	o.Axes["clients"] = []string{"8"}
	other, _ := NewPlan(o)
	if err := adopt(&Deps{}, other, dir); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "another plan") {
		t.Errorf("another plan: %v", err)
	}
}

// TestTodoIgnoresUnknownRecords: records of cells the plan does not have
// are ignored with a note; recorded cells are not run again.
func TestTodoIgnoresUnknownRecords(t *testing.T) {
	dir := t.TempDir()
	p, _ := NewPlan(opts())
	results.AppendRecord(dir, &results.Record{Cell: p.Cells[0].ID, Status: results.StatusOK})
	results.AppendRecord(dir, &results.Record{Cell: "nosuch/c1/cpuall/r1/base", Status: results.StatusOK})
	var out strings.Builder
	r := &run{deps: &Deps{Out: &out}, plan: p, dir: dir}
	todo, err := r.todo()
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != len(p.Cells)-1 || todo[0].ID == p.Cells[0].ID {
		t.Errorf("%d cells to do of %d", len(todo), len(p.Cells))
	}
	if !strings.Contains(out.String(), "1 record(s)") || !strings.Contains(out.String(), "ignored") {
		t.Errorf("no note of the unknown record: %q", out.String())
	}
}

// TestCheckBounds: the size is checked before anything is built, also
// with adaptive repeats (their worst case counts).
func TestCheckBounds(t *testing.T) {
	o := opts()
	o.Repeats = 100_000_000
	if _, err := o.Check(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "cells") || !strings.Contains(err.Error(), " years: above the limit of 100000 cells or 30 days") {
		t.Errorf("huge -r: %v", err)
	}
	for secs, want := range map[float64]string{90: "1m30s", 3 * 86400: "3 days", 3 * 365.25 * 86400: "3 years"} {
		if got := longTime(secs); got != want {
			t.Errorf("longTime(%v) = %q, want %q", secs, got, want)
		}
	}
	o = opts()
	o.Repeats, o.Adaptive = 2, Adaptive{UntilDecided: true, MaxRepeats: 10_000}
	if _, err := o.Check(); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("huge --max-repeats: %v", err)
	}
	o.Adaptive.MaxRepeats = 6
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	if cells, _ := WorstCase(p); cells != len(p.Cells)*3 {
		t.Errorf("worst case %d cells, want %d", cells, len(p.Cells)*3)
	}
}

// TestWarmupFailureNamesItsLog (issue 14 item 14): a failed warm-up's
// error names its pgbench log, and that log is still there (it was in a
// temporary directory removed before the error was read).
func TestWarmupFailureNamesItsLog(t *testing.T) {
	t.Parallel()
	deps, pg := prebuiltDeps(t)
	install := testpg.CopyInstall(t, pg, "fp-warm")
	// The preflight's one transaction (-t 1) passes; the warm-up fails.
	fail := "#!/bin/sh\ncase \" $* \" in *' -t 1 '*) exit 0;; esac\necho 'pgbench: simulated failure' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(install, "bin", "pgbench"), []byte(fail), 0o755); err != nil {
		t.Fatal(err)
	}
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: map[string][]string{"clients": {"1"}}, Repeats: 1, Duration: time.Second, Warmup: time.Second, Protocol: "simple",
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	deps.Out = &out
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	Run(context.Background(), deps, plan, dir)
	recs, _, err := results.ReadRecords(dir)
	if err != nil || len(recs) == 0 {
		t.Fatalf("no records (%v)\n%s", err, out.String())
	}
	logRE := regexp.MustCompile(`/[^\s():]*pgbench\.log`)
	for _, r := range recs {
		path := logRE.FindString(r.Error)
		if r.Status != results.StatusFailed || !strings.Contains(r.Error, "warm-up") || path == "" {
			t.Errorf("cell %s: %s %q; want a failed warm-up naming its pgbench.log", r.Cell, r.Status, r.Error)
			continue
		}
		if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "simulated failure") {
			t.Errorf("cell %s: the log its error names: %v %q", r.Cell, err, data)
		}
	}
}

// TestPeakTPSIsPerCommitAndConfiguration: a cell's latency log is sized
// by the highest TPS its own commit and configuration reached in
// earlier repeats (issue 27), never another commit's or configuration's.
func TestPeakTPSIsPerCommitAndConfiguration(t *testing.T) {
	cell := func(commit string, clients, repeat int) results.Cell {
		return results.Cell{Commit: commit, Repeat: repeat, Config: results.Config{Workload: "select1", Clients: clients}}
	}
	r := &run{}
	if p := r.peakTPS[peakKey(cell("a", 8, 1))]; p != 0 {
		t.Fatalf("a peak before any window: %v", p)
	}
	r.notePeak(cell("a", 8, 1), 9000)
	r.notePeak(cell("a", 8, 2), 15000)
	r.notePeak(cell("a", 8, 3), 5000)
	r.notePeak(cell("b", 8, 1), 30000)
	r.notePeak(cell("a", 16, 1), 40000)
	if p := r.peakTPS[peakKey(cell("a", 8, 4))]; p != 15000 {
		t.Errorf("a at 8 clients: peak %v, want 15000", p)
	}
	if p := r.peakTPS[peakKey(cell("b", 8, 2))]; p != 30000 {
		t.Errorf("b at 8 clients: peak %v, want 30000", p)
	}
}
