package progress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// clock returns a clock that moves by the next of steps at every call
// (the last step repeats).
func clock(steps ...time.Duration) func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	i := 0
	return func() time.Time {
		t = t.Add(steps[min(i, len(steps)-1)])
		i++
		return t
	}
}

// events is a meson build with ninja steps, a cached build, two cells
// (one failed) and the end.
var events = []Event{
	{Kind: BuildStart, Task: "patch", Detail: "master 0123456789ab + fix.patch", Log: "/i/patch.build.log", Estimate: 40 * time.Second, From: "warm: the last warm build of this tree"},
	{Kind: Phase, Task: "patch", Phase: "configure"},
	{Kind: Phase, Task: "patch", Phase: "compile"},
	{Kind: Step, Task: "patch", Done: 1, Total: 4},
	{Kind: Step, Task: "patch", Done: 4, Total: 4},
	{Kind: Phase, Task: "patch", Phase: "install"},
	{Kind: BuildDone, Task: "patch", Detail: "release meson, ccache 100.0% hits (4/4); PostgreSQL 18.3"},
	{Kind: BuildCached, Task: "base", Detail: "master 0123456789ab", From: "fingerprint fedcba987654"},
	{Kind: CellStart, Task: "select1/c1/cpuall/r1/base", Done: 1, Total: 2, Estimate: 8 * time.Second},
	{Kind: Note, Detail: "a note"},
	{Kind: CellDone, Task: "select1/c1/cpuall/r1/base", Detail: "tps=100"},
	{Kind: CellStart, Task: "select1/c1/cpuall/r1/patch", Done: 2, Total: 2, Estimate: 8 * time.Second},
	{Kind: CellDone, Task: "select1/c1/cpuall/r1/patch", Detail: "server did not start", Failed: true},
	{Kind: End},
}

func render(o Options) string {
	var b strings.Builder
	o.Now = clock(0, 2*time.Second, 3*time.Second, 5*time.Second)
	Replay(New(&b, o), events)
	return b.String()
}

// TestLines: not on a terminal, one line per event: the build names its
// patches, estimate and log; phases say elapsed and ETA; the end says
// the total and the slowest phase.
func TestLines(t *testing.T) {
	want := `build patch (master 0123456789ab + fix.patch): about 40s (warm: the last warm build of this tree); log /i/patch.build.log
build patch: configure (2s in, ETA 38s)
build patch: compile (5s in, ETA 35s)
build patch: install (20s in, ETA 20s)
build patch: built in 25s (configure 3s, compile 15s, install 5s); release meson, ccache 100.0% hits (4/4); PostgreSQL 18.3
build base (master 0123456789ab): up to date (fingerprint fedcba987654), nothing to build (--force rebuilds)
[1/2] select1/c1/cpuall/r1/base, ETA 16s by the plan
a note
    tps=100 (10s)
[2/2] select1/c1/cpuall/r1/patch, ETA 10s
    FAILED: server did not start
total 1m00s (builds 25s, 2 cells 15s); slowest phase: build patch compile 15s
`
	if got := render(Options{}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestTTY: on a terminal the status line is redrawn in place (a bar for
// ninja's steps), lines that stay clear it first, and it never grows
// past the width.
func TestTTY(t *testing.T) {
	got := render(Options{TTY: true, Width: 72})
	for _, s := range []string{
		"\r\x1b[Kbuild patch: compile [=====               ] 1/4 · 10s · ETA 15s by the…\r",
		"\r\x1b[Ka note\n\r\x1b[K[1/2] select1/c1/cpuall/r1/base · 5s · ETA 16s by the plan",
		"\r\x1b[K[1/2] select1/c1/cpuall/r1/base: tps=100 (10s)\n",
		"\r\x1b[K[2/2] select1/c1/cpuall/r1/patch: FAILED: server did not start\n",
		"\ntotal 1m00s",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("no %q in\n%q", s, got)
		}
	}
	for _, l := range strings.Split(got, "\r\x1b[K") {
		if !strings.Contains(l, "\n") && len([]rune(l)) > 71 {
			t.Errorf("status line of %d columns (width 72): %q", len([]rune(l)), l)
		}
	}
	if strings.Contains(got, "build patch: configure (") {
		t.Error("a phase line on a terminal: the status line shows phases")
	}
}

// TestQuiet: only warnings and failed cells.
func TestQuiet(t *testing.T) {
	var b strings.Builder
	r := New(&b, Options{Quiet: true, Now: clock(time.Second)})
	Replay(r, append(events, Event{Kind: Warn, Detail: "resume: torn line"}))
	want := "    FAILED: server did not start\nresume: torn line\n"
	if b.String() != want {
		t.Errorf("quiet: %q, want %q", b.String(), want)
	}
}

// TestStepsThrottled: ninja's steps redraw at most every 200 ms, and the
// last one always.
func TestStepsThrottled(t *testing.T) {
	var b strings.Builder
	r := New(&b, Options{TTY: true, Now: clock(10 * time.Millisecond)})
	r.Emit(Event{Kind: BuildStart, Task: "x", Log: "l"})
	r.Emit(Event{Kind: Phase, Task: "x", Phase: "compile"})
	for i := 1; i <= 100; i++ {
		r.Emit(Event{Kind: Step, Task: "x", Done: i, Total: 100})
	}
	if n := strings.Count(b.String(), "/100"); n < 4 || n > 6 {
		t.Errorf("%d redraws for 100 steps in 1 s", n)
	}
	if !strings.Contains(b.String(), "100/100") {
		t.Error("the last step was not drawn")
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 850 * time.Millisecond: "900ms", 12400 * time.Millisecond: "12s",
		185 * time.Second: "3m05s", 62*time.Minute + 20*time.Second: "1h02m",
	} {
		if got := Dur(d); got != want {
			t.Errorf("Dur(%s) = %s, want %s", d, got, want)
		}
	}
}

// TestEndStartsAnew: a second run through the same renderer (bisect's
// steps) gets its own totals.
func TestEndStartsAnew(t *testing.T) {
	var b strings.Builder
	r := New(&b, Options{Now: clock(time.Second)})
	for i := 0; i < 2; i++ {
		Replay(r, []Event{{Kind: CellStart, Task: "c", Done: 1, Total: 1}, {Kind: CellDone, Task: "c", Detail: "ok"}, {Kind: End}})
	}
	if n := strings.Count(b.String(), "total 2s (1 cell 1s); slowest phase: cells 1s\n"); n != 2 {
		t.Errorf("%d fresh totals in\n%s", n, b.String())
	}
}

// TestIsTerminal: a pseudo-terminal is a terminal (Console redraws in
// place there), a file and a buffer are not.
func TestIsTerminal(t *testing.T) {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	file, _ := os.Create(filepath.Join(t.TempDir(), "out"))
	defer file.Close()
	if !IsTerminal(pts) || IsTerminal(file) || IsTerminal(&strings.Builder{}) {
		t.Errorf("IsTerminal: pts %v, file %v, buffer %v", IsTerminal(pts), IsTerminal(file), IsTerminal(&strings.Builder{}))
	}
	if !Console(pts, false, nil).o.TTY || Console(file, false, nil).o.TTY {
		t.Error("Console does not follow the terminal")
	}
}

// TestRedraw: on a terminal the status line moves while nothing happens
// (make says nothing for minutes), and stops once the line is gone.
func TestRedraw(t *testing.T) {
	var b syncBuilder
	r := New(&b, Options{TTY: true, Redraw: 20 * time.Millisecond})
	r.Emit(Event{Kind: CellStart, Task: "c", Done: 1, Total: 1})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), "[1/1] c · 300ms") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(b.String(), "[1/1] c · 300ms") {
		t.Fatalf("no redraw at 300ms:\n%q", b.String())
	}
	r.Emit(Event{Kind: CellDone, Task: "c", Detail: "ok"})
	n := len(b.String())
	time.Sleep(100 * time.Millisecond)
	if len(b.String()) != n {
		t.Errorf("redrawn after the cell ended: %q", b.String()[n:])
	}
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAbort: a failure takes the status line away, so the error is not
// written after it, and prints no totals.
func TestAbort(t *testing.T) {
	var b strings.Builder
	r := New(&b, Options{TTY: true, Now: clock(time.Second)})
	Replay(r, []Event{{Kind: BuildStart, Task: "x", Log: "l"}, {Kind: Phase, Task: "x", Phase: "compile"}, {Kind: Abort}})
	if !strings.HasSuffix(b.String(), "\r\x1b[K") || strings.Contains(b.String(), "total") {
		t.Errorf("after abort: %q", b.String())
	}
}

// TestBuildWithoutPhases: a build that reports no phase (an extension's
// PGXS build) ends with its time and no empty list of phases.
func TestBuildWithoutPhases(t *testing.T) {
	var b strings.Builder
	Replay(New(&b, Options{Now: clock(0, 6*time.Second)}), []Event{
		{Kind: BuildStart, Task: "pg15+pg_cron", Detail: "extension /src/pg_cron", Log: "/i/pg15.ext-pg_cron.log"},
		{Kind: BuildDone, Task: "pg15+pg_cron", Detail: "PGXS, CC=ccache gcc"},
	})
	if got := strings.Split(b.String(), "\n")[1]; got != "build pg15+pg_cron: built in 6s; PGXS, CC=ccache gcc" {
		t.Errorf("got %q", got)
	}
}

// TestEstimated: a build that measured its first compile units says its
// new estimate in a line that stays, and the ETA counts from it, not from
// the reference it started with.
func TestEstimated(t *testing.T) {
	var b strings.Builder
	r := New(&b, Options{Now: clock(0, 10*time.Second)})
	Replay(r, []Event{
		{Kind: BuildStart, Task: "base", Detail: "base 116bfafc", Log: "/i/base.build.log", Estimate: 143 * time.Second, From: "cold: reference, not this machine"},
		{Kind: Phase, Task: "base", Phase: "compile"},
		{Kind: Estimated, Task: "base", Estimate: 292 * time.Second, From: "measured on this machine: 152 of 1212 compile units in 30s"},
		{Kind: Phase, Task: "base", Phase: "install"},
	})
	want := `build base (base 116bfafc): about 2m23s (cold: reference, not this machine); log /i/base.build.log
build base: compile (10s in, ETA 2m13s)
build base: about 4m52s (measured on this machine: 152 of 1212 compile units in 30s), 20s in, ETA 4m32s
build base: install (30s in, ETA 4m22s)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
