package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// estimates records what a build tells of its estimate.
type estimates struct {
	recorder
	got []string
}

func (e *estimates) Estimate(d time.Duration, from string) {
	e.got = append(e.got, fmt.Sprintf("%s: %s", d.Round(time.Second), from))
}

// TestMeasureAutotools: the cold PostgreSQL 15 build of issue 27's
// machine (configure 20 s, then its units along the reference's curve
// at 2.5 times its pace): after an eighth of the 1212 units the estimate
// is the time so far and the rest of the reference's compile and
// install at that pace, 20 + 2.5 × (107.1 + 2.9) = 295 s; later shares
// say the same again, and nothing between them. The average pace of the
// first eighth (its units are src/port's and src/common's, the smallest)
// said 3 m 18 s for a build of 6 m 07 s.
func TestMeasureAutotools(t *testing.T) {
	var p estimates
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	ref := &ReferenceCold
	m := &measure{ref: ref, p: &p, start: t0}
	m.units(10, 1212, t0.Add(5*time.Second)) // before the compile phase: nothing
	compileAt := t0.Add(20 * time.Second)
	m.compiling(compileAt)
	at := func(k int) time.Time {
		return compileAt.Add(seconds(2.5 * ref.compileTo(float64(k)/1212)))
	}
	for _, k := range []int{50, 100, 151, 152, 200, 303, 500, 606, 1212} {
		m.units(k, 1212, at(k))
	}
	want := []string{fmt.Sprintf("4m55s: measured on this machine: 152 of 1212 compile units in %s, ×2.5 the time the reference took to that share", progress.Dur(at(152).Sub(compileAt)))}
	for _, k := range [][2]int{{152, 303}, {303, 606}} {
		want = append(want, fmt.Sprintf("4m55s: measured on this machine: %d of 1212 compile units in %s; the last %d went at ×2.5 the time the reference took for them", k[1], progress.Dur(at(k[1]).Sub(compileAt)), k[1]-k[0]))
	}
	if strings.Join(p.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("estimates:\n%s\nwant\n%s", strings.Join(p.got, "\n"), strings.Join(want, "\n"))
	}
	// The reference's first units are its cheapest.
	if f := ref.compileTo(1.0/8) / ref.Seconds.Compile; f > 0.08 {
		t.Errorf("the reference's first eighth of units took %.0f %% of its compile phase", 100*f)
	}
	if c := m.measured(); len(c) != 9 || c[0] != (Point{Units: 50, Seconds: at(50).Sub(compileAt).Seconds()}) || c[8].Units != 1212 {
		t.Errorf("curve %v", c)
	}
}

// TestProjectedAlongTheCurve: a reference whose first half of units took
// a fifth of its compile phase, and a build going at twice its pace:
// after a quarter of the units (20 s, twice the reference's 10 s) the
// build has 2 × (90 + 10) s to go, not the 68 s that the average pace
// of its first units (0.8 s a unit) gives, as it does without a curve.
func TestProjectedAlongTheCurve(t *testing.T) {
	ref := &Reference{Seconds: Timings{Compile: 100, Install: 10}, Units: 100,
		Curve: []Point{{Units: 50, Seconds: 20}, {Units: 100, Seconds: 95}}}
	for _, tc := range []struct {
		ref              *Reference
		elapsed, compile float64
		done, total      int
		want             time.Duration
		wantPace         float64
	}{
		{ref, 30, 20, 25, 100, 230 * time.Second, 2},
		// The curve's share, not its count: 200 units of 400 are the
		// reference's 50 of 100.
		{ref, 50, 40, 200, 400, 230 * time.Second, 2},
		// Past the curve's last unit: the rest of the compile phase
		// (linking) and the install.
		{ref, 200, 190, 100, 100, 230 * time.Second, 2},
		{&Reference{Seconds: Timings{Compile: 100, Install: 10}, Units: 100}, 30, 20, 25, 100, 98 * time.Second, 0.8},
	} {
		d, pace := projected(seconds(tc.elapsed), Point{}, Point{Units: tc.done, Seconds: tc.compile}, tc.total, tc.ref)
		if d != tc.want || pace != tc.wantPace {
			t.Errorf("%d of %d in %.0f s (compile %.0f s), curve %v: %s ×%.2f, want %s ×%.2f", tc.done, tc.total, tc.elapsed, tc.compile, tc.ref.Curve, d, pace, tc.want, tc.wantPace)
		}
	}
}

// TestMeasureLoadFalls: a build that goes at 4 times the reference's
// pace for its first quarter of units (a loaded machine) and at 1.5
// times after (the load fell) is projected at the pace of the units
// since the last estimate: after half its units, at 20 + 1.5 × the
// reference's rest (3 m 42 s in all). The pace from its start (2.26)
// said 4 m 29 s (+21 %).
func TestMeasureLoadFalls(t *testing.T) {
	var p estimates
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	ref := &ReferenceCold
	compileAt := t0.Add(20 * time.Second)
	m := &measure{ref: ref, p: &p, start: t0}
	m.compiling(compileAt)
	quarter := ref.compileTo(303.0 / 1212)
	at := func(k int) time.Time {
		to := ref.compileTo(float64(k) / 1212)
		if to <= quarter {
			return compileAt.Add(seconds(4 * to))
		}
		return compileAt.Add(seconds(4*quarter + 1.5*(to-quarter)))
	}
	for _, k := range []int{152, 303, 606} {
		m.units(k, 1212, at(k))
	}
	if len(p.got) != 3 {
		t.Fatalf("estimates %q", p.got)
	}
	rest := ref.Seconds.Compile - ref.compileTo(606.0/1212) + ref.Seconds.Install
	want := (at(606).Sub(t0) + seconds(1.5*rest)).Round(time.Second)
	if !strings.HasPrefix(p.got[2], want.String()+": ") || !strings.Contains(p.got[2], "the last 303 went at ×1.5 ") {
		t.Errorf("after half the units: %q, want %s at ×1.5", p.got[2], want)
	}
}

// TestMeasuredCurveThinned: a record keeps at most curvePoints points of
// a build's units, the last of each share and the last one.
func TestMeasuredCurveThinned(t *testing.T) {
	t0 := time.Now()
	m := &measure{start: t0}
	m.compiling(t0)
	for k := 1; k <= 2455; k++ {
		m.units(k, 2455, t0.Add(time.Duration(k)*time.Second))
	}
	m.units(2000, 2455, t0.Add(3000*time.Second)) // no count goes back
	c := m.measured()
	if len(c) > curvePoints || len(c) < curvePoints-1 || c[len(c)-1] != (Point{Units: 2455, Seconds: 2455}) {
		t.Fatalf("%d points, last %v", len(c), c[len(c)-1])
	}
	for i := 1; i < len(c); i++ {
		if c[i].Units <= c[i-1].Units || c[i].Seconds != float64(c[i].Units) {
			t.Fatalf("point %d: %v after %v", i, c[i], c[i-1])
		}
	}
}

// TestMeasureNinja: ninja's [k/N] lines (from a real PostgreSQL 18.3
// build log: 2455 steps) give the units and their total; the eighth is
// step 307.
func TestMeasureNinja(t *testing.T) {
	var p estimates
	t0 := time.Now()
	m := &measure{ref: &ReferenceCold, p: &p, start: t0.Add(-39 * time.Second)}
	m.compiling(t0)
	np := &ninjaProgress{p: stepsMeasured{p: &p, m: m}}
	for k := 300; k <= 310; k++ {
		fmt.Fprintf(np, "[%d/2455] Compiling C object src/backend/postgres_lib.a.p/x%d.c.o\n", k, k)
	}
	if len(p.steps) != 11 || len(p.got) != 1 || !strings.Contains(p.got[0], "measured on this machine: 307 of 2455 compile units in ") {
		t.Errorf("steps %v, estimates %q", p.steps, p.got)
	}
}

// TestCountUnits: the object files written since the build started are
// its units; older ones (a rebuild in place) and other files are not.
// The count is as of the newest one's write.
func TestCountUnits(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	old := start.Add(-time.Hour)
	for _, f := range []string{"src/port/a.o", "src/port/b.o", "src/backend/c.o", "src/backend/c.c", "src/backend/old.o"} {
		path := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "old.o") {
			os.Chtimes(path, old, old)
		}
	}
	newest := start.Add(time.Minute).Truncate(time.Second)
	os.Chtimes(filepath.Join(dir, "src/port/b.o"), newest, newest)
	if n, last := countUnits(dir, start.Add(-time.Second)); n != 3 || !last.Equal(newest) {
		t.Errorf("countUnits = %d as of %s, want 3 as of %s (b.o's write)", n, last, newest)
	}
}

// TestPollUnits: the count tells of the object files written in a build
// tree since the build started, in a directory made after the count
// began too; not of other files, of those written before, nor of those
// behind a link planted in the tree. stop returns once the units written
// before it are counted; the count ends with its context too.
func TestPollUnits(t *testing.T) {
	defer func(d time.Duration) { unitsEvery = d }(unitsEvery)
	unitsEvery = 20 * time.Millisecond
	dir, outside := t.TempDir(), t.TempDir()
	write := func(dir, f string) {
		t.Helper()
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(dir, "src/port/old.o")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "src/port/old.o"), old, old)
	m := &measure{start: time.Now()}
	m.compiling(m.start)
	stop := m.pollUnits(context.Background(), dir, 0)
	write(dir, "src/port/a.o")
	write(dir, "src/port/a.c")
	write(dir, "src/backend/.deps/c.Po")
	write(dir, "src/backend/tmp.XXXX")
	if err := os.Rename(filepath.Join(dir, "src/backend/tmp.XXXX"), filepath.Join(dir, "src/backend/b.o")); err != nil {
		t.Fatal(err)
	}
	write(dir, "src/port/a.o") // once more: still one unit
	write(dir, "contrib/new/d.o")
	for i := range 5 {
		write(outside, fmt.Sprintf("u%d.o", i))
	}
	if err := os.Symlink(outside, filepath.Join(dir, "src/planted")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "u0.o"), filepath.Join(dir, "src/planted.o")); err != nil {
		t.Fatal(err)
	}
	// Seen while the build runs, not only at stop.
	deadline := time.Now().Add(10 * time.Second)
	for c := m.measured(); len(c) == 0 || c[len(c)-1].Units < 3; c = m.measured() {
		if time.Now().After(deadline) {
			t.Fatalf("curve %v, want 3 units while the count runs", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 200 {
		write(dir, fmt.Sprintf("src/late/u%d.o", i))
	}
	stop()
	c := m.measured()
	if len(c) < 2 || c[len(c)-1].Units != 203 {
		t.Errorf("after stop: curve %v, want 3 units, then 203 at its end (the link planted in the tree not followed)", c)
	}
	// The count ends with its context too.
	ctx, cancel := context.WithCancel(context.Background())
	stop = m.pollUnits(ctx, dir, 0)
	cancel()
	ended := make(chan bool)
	go func() { stop(); ended <- true }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("pollUnits still runs after its context ended")
	}
}

// unitsConfigure writes the makefiles of a tree whose make writes 3
// object files and whose contrib/pg_stat_statements writes 2 more, with
// a pause between each (make -s says nothing of them).
const unitsConfigure = `#!/bin/sh
for a; do case $a in --prefix=*) prefix=${a#--prefix=};; esac; done
mkdir -p contrib/pg_stat_statements
printf 'all:\n\tmkdir -p src/port src/backend\n\tfor f in src/port/a src/port/b src/backend/c; do sleep 0.1; echo x > $$f.o; done\ninstall:\n\tmkdir -p %s/bin\n' "$prefix" > GNUmakefile
printf 'all:\n\tsleep 0.1; echo x > d.o\n\tsleep 0.1; echo x > e.o\ninstall:\n\ttrue\n' > contrib/pg_stat_statements/Makefile
touch config.status
`

// TestUnitsOfEveryCompileStep: an autotools build's curve counts the
// units of all its compile steps, make's and contrib's (one count from
// the first to the last, not one per step counting from 0 again), along
// the build and all of them once Build returns. A second build in place
// (its make writes every object again) counts them from 0 again, not on
// top of the first build's.
func TestUnitsOfEveryCompileStep(t *testing.T) {
	testenv.RequireTools(t, "make", "cc")
	// The units are written 0.1 s apart: counted every 20 ms, the curve
	// has points along the build, not only the count at its end.
	defer func(d time.Duration) { unitsEvery = d }(unitsEvery)
	unitsEvery = 20 * time.Millisecond
	b, prov, dir, _ := fakeTreeWith(t, false, map[string]string{"configure": unitsConfigure})
	b.Run = &proc.Runner{}
	for _, want := range []int{5, 5} {
		res, err := b.Build(context.Background(), prov, dir, Options{NoCCache: true, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Info.Curve
		if len(c) < 2 || c[len(c)-1].Units != want {
			t.Fatalf("curve %v, want points along the build and %d units at its end", c, want)
		}
		for i := 1; i < len(c); i++ {
			if c[i].Units <= c[i-1].Units || c[i].Seconds < c[i-1].Seconds {
				t.Errorf("curve %v does not grow", c)
			}
		}
	}
}
