package build

// A build whose estimate came from a reference (no record of its kind on
// this machine) learns the machine as it runs: it times its first
// compile units and scales them to the whole build.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pgabtest/abtest/internal/progress"
)

// measureAt are the shares of the compile units at which the estimate
// is made again: the first after an eighth (about 150 of PostgreSQL
// 15's 1212, a minute or so into a cold build of a slow machine), then
// twice more as the pace of the bigger units shows. Measured: a cold
// PostgreSQL 15 build (ccache off) on a shared 2-core machine at load
// 7-14 took 29 m 45 s; the reference said 8 m 51 s (-70 %), the
// measured estimate 26 m 03 s after 156 units (-12 %), 29 m 24 s after
// 304 (-1 %), 30 m 43 s after 606 (+3 %).
var measureAt = []float64{1.0 / 8, 1.0 / 4, 1.0 / 2}

// measure is a build timing its compile units against a reference.
type measure struct {
	ref   *Reference
	p     Progress
	start time.Time // the build's
	mu    sync.Mutex
	// compileAt is when the first compile step started.
	compileAt time.Time
	next      int // of measureAt
}

// compiling tells that the compile phase starts at t (once per build).
func (m *measure) compiling(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.compileAt.IsZero() {
		m.compileAt = t
	}
}

// units tells that done of total compile units are compiled at t; at
// each share of measureAt the build's estimate is said again.
func (m *measure) units(done, total int, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.compileAt.IsZero() || total <= 0 || done <= 0 {
		return
	}
	due := false
	for m.next < len(measureAt) && float64(done) >= measureAt[m.next]*float64(total) {
		m.next++
		due = true
	}
	if !due || done >= total {
		return
	}
	d, pace := projected(t.Sub(m.start), t.Sub(m.compileAt), done, total, m.ref)
	m.p.Estimate(d, fmt.Sprintf("measured on this machine: %d of %d compile units in %s, ×%.1f the reference's compile time",
		done, total, progress.Dur(t.Sub(m.compileAt)), pace))
}

// projected is the whole build's duration from its first part: elapsed
// since the build started, of which compile in the compile phase, where
// done of total units are compiled. The units left take what the done
// ones took each; the install takes the reference's, at the pace
// measured: this compile phase, so projected, against the reference's
// (ninja's steps are not make's units, but both phases compile a tree).
func projected(elapsed, compile time.Duration, done, total int, ref *Reference) (time.Duration, float64) {
	per := compile.Seconds() / float64(done)
	pace := 1.0
	if ref.Seconds.Compile > 0 {
		pace = per * float64(total) / ref.Seconds.Compile
	}
	left := per*float64(total-done) + ref.Seconds.Install*pace
	return elapsed + seconds(left), pace
}

// countUnits counts the object files under dir written since start:
// the compile units of an autotools build, whose make runs silent
// (-s) and so says nothing of them.
func countUnits(dir string, start time.Time) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".o") {
			return nil
		}
		if fi, err := d.Info(); err == nil && !fi.ModTime().Before(start) {
			n++
		}
		return nil
	})
	return n
}

// pollUnits feeds m the object files of an autotools build directory
// every interval until ctx ends; total is the reference's units.
func (m *measure) pollUnits(ctx context.Context, dir string, total int, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.units(countUnits(dir, m.start), total, now)
		}
	}
}

// stepsMeasured passes ninja's steps on to p and to m.
type stepsMeasured struct {
	Progress
	m *measure
}

func (s stepsMeasured) Step(done, total int) {
	s.Progress.Step(done, total)
	s.m.units(done, total, time.Now())
}
