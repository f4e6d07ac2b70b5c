package perf_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/perf"
	"github.com/pgabtest/abtest/perf/profiles"
)

func writeProfile(t *testing.T, path string, spec map[string]int) {
	t.Helper()
	var evs []perf.Event
	for fn, n := range spec {
		for range n {
			evs = append(evs, perf.Event{Comm: "postgres", PID: 1, Period: 1000, Stack: []perf.Frame{{Addr: 1, Func: fn, DSO: "/bin/postgres"}, {Addr: 2, Func: "PostgresMain", DSO: "/bin/postgres"}}})
		}
	}
	if err := profiles.Write(perf.Profile(evs, 1000), path); err != nil {
		t.Fatal(err)
	}
}

// TestCompareFiles: the table has a header and Top rows, the biggest
// per-transaction increase first, and the diff profile on disk is new
// minus base.
func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	base, cur, diff := filepath.Join(dir, "base.pb.gz"), filepath.Join(dir, "new.pb.gz"), filepath.Join(dir, "diff.pb.gz")
	writeProfile(t, base, map[string]int{"entry_dealloc": 40, "exec_simple_query": 60})
	writeProfile(t, cur, map[string]int{"entry_dealloc": 10, "exec_simple_query": 70})
	var out bytes.Buffer
	if err := perf.CompareFiles(&out, perf.CompareOptions{Base: base, New: cur, TxBase: 100, TxNew: 100, Top: 1, Output: diff}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "+100.0") || !strings.Contains(lines[1], "exec_simple_query (ns/tx)") ||
		lines[2] != "diff profile: "+diff+" (abtest perf view "+diff+")" {
		t.Errorf("output:\n%s", out.String())
	}
	p, err := profiles.Read(diff)
	if err != nil {
		t.Fatal(err)
	}
	if _, total := profiles.Funcs(p, false); total != (80-100)*1000 {
		t.Errorf("diff total %d, want %d", total, (80-100)*1000)
	}
	out.Reset()
	if err := perf.CompareFiles(&out, perf.CompareOptions{Base: base, New: filepath.Join(dir, "missing"), Top: 5, Output: diff}); err == nil {
		t.Error("a missing profile compared")
	}
}

// TestRecordFileDryRun: perf.data and perf's log are named after the
// profile, beside it, and a dry run writes nothing.
func TestRecordFileDryRun(t *testing.T) {
	requirePerf(t)
	dir := t.TempDir()
	var trace bytes.Buffer
	res, err := perf.RecordFile(context.Background(), &proc.Runner{DryRun: true, Trace: &trace}, perf.FileOptions{
		Processes: func() []int { return []int{os.Getpid()} }, Duration: 2 * time.Second, Out: filepath.Join(dir, "lfu.pb.gz"),
	})
	if err != nil || res != nil {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	if want := "-o " + filepath.Join(dir, "lfu.perf.data"); !strings.Contains(trace.String(), want) || !strings.Contains(trace.String(), "sleep 2.000") {
		t.Errorf("trace lacks %q:\n%s", want, trace.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("dry run wrote %v", ents)
	}
}

// TestResultWriteSummary: a profile without call graphs says how to get
// them, and unreadable perf script lines are counted.
func TestResultWriteSummary(t *testing.T) {
	var out bytes.Buffer
	(&perf.Result{Profile: &profile.Profile{}, Samples: 12, Event: "cpu-clock", Unparsed: 2, Path: "/x/p.pb.gz"}).WriteSummary(&out)
	want := "profile: /x/p.pb.gz (12 samples of cpu-clock, flat only (no frame pointers: build with abtest switch -b release --profiling for call graphs))\nwarning: 2 lines of perf script could not be read\n"
	if out.String() != want {
		t.Errorf("summary %q, want %q", out.String(), want)
	}
}

// TestReportFile: the top functions of a profile file, and exit 2 for a
// file that is not one.
func TestReportFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.pb.gz")
	writeProfile(t, p, map[string]int{"entry_dealloc": 40, "exec_simple_query": 60})
	var out bytes.Buffer
	if err := perf.ReportFile(&out, p, 1, false); err != nil || !strings.Contains(out.String(), "exec_simple_query") || strings.Contains(out.String(), "entry_dealloc") {
		t.Errorf("report: %v\n%s", err, out.String())
	}
	if err := perf.ReportFile(&out, filepath.Join(t.TempDir(), "none"), 5, false); err == nil {
		t.Error("a missing profile reported")
	}
}

func TestParsePerTx(t *testing.T) {
	if a, b, err := perf.ParsePerTx("1200000,1180000.5"); err != nil || a != 1200000 || b != 1180000.5 {
		t.Errorf("%v %v %v", a, b, err)
	}
	for _, bad := range []string{"x", "1", "1,0", "-1,2", "1,2,3"} {
		if _, _, err := perf.ParsePerTx(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
