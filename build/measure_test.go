package build

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
// machine (configure 20 s, then the units at the pace that made its 4 m
// 52 s): after an eighth of the 1212 units the estimate is the time so
// far, the units left at the pace so far and the reference's install at
// that pace; later shares say it again, and nothing between them.
func TestMeasureAutotools(t *testing.T) {
	var p estimates
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	m := &measure{ref: &ReferenceCold, p: &p, start: t0}
	m.units(10, 1212, t0.Add(5*time.Second)) // before the compile phase: nothing
	m.compiling(t0.Add(20 * time.Second))
	// 0.2 s a unit, 242.4 s for 1212 against the reference's 107.1 s: ×2.26.
	for _, k := range []int{50, 100, 151, 152, 200, 303, 500, 606, 1212} {
		m.units(k, 1212, t0.Add(20*time.Second+time.Duration(k)*200*time.Millisecond))
	}
	want := []string{
		// 20 + 30.4 (152 units) + 212 (1060 left) + 2.9 × 2.26 = 269 s.
		"4m29s: measured on this machine: 152 of 1212 compile units in 30s, ×2.3 the reference's compile time",
		"4m29s: measured on this machine: 303 of 1212 compile units in 1m01s, ×2.3 the reference's compile time",
		"4m29s: measured on this machine: 606 of 1212 compile units in 2m01s, ×2.3 the reference's compile time",
	}
	if strings.Join(p.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("estimates:\n%s\nwant\n%s", strings.Join(p.got, "\n"), strings.Join(want, "\n"))
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
	np := &ninjaProgress{p: stepsMeasured{Progress: &p, m: m}}
	for k := 300; k <= 310; k++ {
		fmt.Fprintf(np, "[%d/2455] Compiling C object src/backend/postgres_lib.a.p/x%d.c.o\n", k, k)
	}
	if len(p.steps) != 11 || len(p.got) != 1 || !strings.Contains(p.got[0], "measured on this machine: 307 of 2455 compile units in ") {
		t.Errorf("steps %v, estimates %q", p.steps, p.got)
	}
}

// TestCountUnits: the object files written since the build started are
// its units; older ones (a rebuild in place) and other files are not.
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
	if n := countUnits(dir, start.Add(-time.Second)); n != 3 {
		t.Errorf("countUnits = %d, want 3", n)
	}
}
