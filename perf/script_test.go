package perf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/google/pprof/profile"
)

func readFile(t testing.TB, name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The captures are `perf script` of perf 6.1 on a Debian PostgreSQL 15
// backend running select1 (cpu-clock: the VM has no cycles event).
func TestParseScriptPerf6(t *testing.T) {
	events, bad, err := ParseScript(strings.NewReader(readFile(t, "perf6-pg15.txt")))
	if err != nil || bad != 0 || len(events) < 10 {
		t.Fatalf("%d events, %d bad, %v", len(events), bad, err)
	}
	e := events[0]
	if e.Comm != "postgres" || e.PID != 13202 || e.Period != 2004008 || e.Name != "cpu-clock:ppp" || len(e.Stack) != 17 {
		t.Errorf("first event = %+v", e)
	}
	if f := e.Stack[0]; f.Func != "skb_release_head_state" || f.DSO != "[kernel.kallsyms]" || f.Addr != 0xffffffff81e40455 {
		t.Errorf("kernel frame = %v", f)
	}
	if f := e.Stack[10]; f.Func != "[unknown]" || f.DSO != "/usr/lib/postgresql/15/bin/postgres" {
		t.Errorf("unknown frame = %v", f)
	}
	if f := e.Stack[12]; f.Func != "PostgresMain" || f.Addr != 0x472fd1 {
		t.Errorf("user frame = %v", f)
	}
	ev2, _, _ := ParseScript(strings.NewReader(readFile(t, "perf6-pid-tid.txt")))
	if len(ev2) == 0 || ev2[0].PID != 13202 || ev2[0].TID != 13202 || ev2[0].Stack[0].Func != "skb_release_head_state" {
		t.Errorf("pid/tid capture: %+v", ev2)
	}
}

func TestParseScriptEdgeCases(t *testing.T) {
	in := `kworker/0:1 H  17 [001]  100.5:     1000 cpu-clock: 
	ffffffff81000001 worker_thread+0x1 ([kernel.kallsyms])

postgres 42/43 [000] 101.000000:     250000 cycles:u: 
	    55d1c8a0b1c2 hash_bytes (inlined)
	    55d1c8a0b1c2 pgss_store+0x12 (/pg/lib/pg_stat_statements.so)
	    55d1c8a0b000 standard_ExecutorEnd+0x40 (/pg/bin/postgres)

garbage line without a time
	deadbeef orphan-frame (x)
postgres 44 [001] 102.0: 250000 cycles:u:
	not-hex frame (x)
	    55d1c8a0c000 exec_simple_query+0x1 (/pg/bin/postgres)
postgres 45 [000] 103.0: 250000 cycles:u:
	    55d1c8a0c000 exec_simple_q`
	events, bad, err := ParseScript(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || bad != 3 {
		t.Fatalf("%d events, %d bad lines: %+v", len(events), bad, events)
	}
	if events[0].Comm != "kworker/0:1 H" || events[0].PID != 17 {
		t.Errorf("comm with spaces: %+v", events[0])
	}
	e := events[1]
	if e.PID != 42 || e.TID != 43 || len(e.Stack) != 3 || !e.Stack[0].Inlined || e.Stack[0].Func != "hash_bytes" {
		t.Errorf("inlined event: %+v", e)
	}
	p := Profile(events, 2000000)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	// The inlined frame shares its location with its caller: lines
	// innermost first.
	loc := p.Sample[1].Location[0]
	if len(loc.Line) != 2 || loc.Line[0].Function.Name != "hash_bytes" || loc.Line[1].Function.Name != "pgss_store" {
		t.Errorf("inlined location lines: %+v", loc.Line)
	}
	// The truncated last frame still counts as a frame.
	if last := events[3]; len(last.Stack) != 1 || last.Stack[0].Func != "exec_simple_q" {
		t.Errorf("truncated frame: %+v", last)
	}
}

func TestProfileRoundTripAndReport(t *testing.T) {
	events, _, _ := ParseScript(strings.NewReader(readFile(t, "perf6-pg15.txt")))
	p := Profile(events, 2004008)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Sample) != len(events) || back.SampleType[0].Type != "cpu" || back.Period != 2004008 {
		t.Errorf("round trip: %d samples, types %v, period %d", len(back.Sample), back.SampleType, back.Period)
	}
	fs, total := profiles.Funcs(back, true)
	if total != int64(len(events))*2004008 {
		t.Errorf("total %d", total)
	}
	var main profiles.FuncStat
	for _, f := range fs {
		if f.Name == "PostgresMain" {
			main = f
		}
	}
	if main.CumPct < 50 {
		t.Errorf("PostgresMain cum = %+v; every backend sample runs under it", main)
	}
	var out bytes.Buffer
	profiles.WriteTop(&out, back, 5, false)
	if !strings.Contains(out.String(), "flat%") || strings.Count(out.String(), "\n") != 7 {
		t.Errorf("top:\n%s", out.String())
	}
}

func TestCompareAndDiff(t *testing.T) {
	mk := func(spec map[string]int) *profile.Profile {
		var evs []Event
		for fn, n := range spec {
			for range n {
				evs = append(evs, Event{Comm: "postgres", PID: 1, Period: 1000, Stack: []Frame{{Addr: 1, Func: fn, DSO: "/bin/postgres"}, {Addr: 2, Func: "PostgresMain", DSO: "/bin/postgres"}}})
			}
		}
		return Profile(evs, 1000)
	}
	base := mk(map[string]int{"entry_dealloc": 40, "exec_simple_query": 60})
	cur := mk(map[string]int{"entry_dealloc": 10, "exec_simple_query": 70})
	ds := profiles.Compare(base, cur, 100, 100)
	if ds[0].Name != "exec_simple_query" || ds[0].Diff != 100 || ds[len(ds)-1].Name != "entry_dealloc" || ds[len(ds)-1].Diff != -300 || ds[0].Unit != "ns/tx" {
		t.Errorf("deltas = %+v", ds)
	}
	diff, err := profiles.Diff(base, cur, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	fs, total := profiles.Funcs(diff, false)
	if total != (80-100)*1000 {
		t.Errorf("diff total = %d, want %d", total, (80-100)*1000)
	}
	for _, f := range fs {
		if f.Name == "entry_dealloc" && f.Flat != -30000 {
			t.Errorf("entry_dealloc in diff = %d", f.Flat)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add(readFile(f, "perf6-pg15.txt")[:2000])
	f.Add("postgres 1/2 [000] 1.0: 1 cycles:\n\tffff x (inlined)\n\tffff y+0x1 (/a)\n")
	f.Fuzz(func(t *testing.T, s string) {
		events, _, err := ParseScript(strings.NewReader(s))
		if err != nil {
			return
		}
		p := Profile(events, 1000)
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile from %q: %v", s, err)
		}
	})
}
