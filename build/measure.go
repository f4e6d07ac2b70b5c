package build

// A build whose estimate came from a reference (another machine's build,
// or a record of this machine's) learns the machine as it runs: it times
// its first compile units and compares them with the time the reference
// took to the same share of its units. Every build records the curve of
// its own units (Info.Curve), so that later builds of this machine
// compare with this machine's curve.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pgabtest/abtest/internal/progress"
)

// measureAt are the shares of the compile units at which the estimate
// is made again: the first after an eighth (about 150 of PostgreSQL
// 15's 1212, a minute or so into a cold build of a slow machine), then
// twice more as the pace of the bigger units shows.
var measureAt = []float64{1.0 / 8, 1.0 / 4, 1.0 / 2}

// Point is a build's progress through its compile phase: Units compile
// units done Seconds after the phase began.
type Point struct {
	Units   int     `json:"units"`
	Seconds float64 `json:"seconds"`
}

// curvePoints is the most points a record keeps of its curve: one per
// 1/curvePoints of the units is finer than any estimate needs.
const curvePoints = 128

// measure is a build timing its compile units: it keeps their curve
// and, against a reference, says the estimate they give.
type measure struct {
	// ref and p, when set, make the build say its estimate at each
	// share of measureAt.
	ref   *Reference
	p     Progress
	start time.Time // the build's
	mu    sync.Mutex
	// compileAt is when the first compile step started.
	compileAt time.Time
	next      int // of measureAt
	// said is where the estimate was last said: the next one goes at
	// the pace of the units since.
	said  Point
	curve []Point
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
	if m.compileAt.IsZero() || done <= 0 {
		return
	}
	if n := len(m.curve); n == 0 || done > m.curve[n-1].Units {
		m.curve = append(m.curve, Point{Units: done, Seconds: t.Sub(m.compileAt).Seconds()})
	}
	if m.ref == nil || m.p == nil || total <= 0 {
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
	now := Point{Units: done, Seconds: t.Sub(m.compileAt).Seconds()}
	d, pace := projected(t.Sub(m.start), m.said, now, total, m.ref)
	from := fmt.Sprintf("measured on this machine: %d of %d compile units in %s, ×%.1f the time %s took to that share",
		done, total, progress.Dur(t.Sub(m.compileAt)), pace, m.ref.name())
	if m.said.Units > 0 {
		from = fmt.Sprintf("measured on this machine: %d of %d compile units in %s; the last %d went at ×%.1f the time %s took for them",
			done, total, progress.Dur(t.Sub(m.compileAt)), done-m.said.Units, pace, m.ref.name())
	}
	m.said = now
	m.p.Estimate(d, from)
}

// measured is the curve of the build's units, at most curvePoints of
// it: the last point of each 1/curvePoints share, and the last.
func (m *measure) measured() []Point {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.curve)
	if n <= curvePoints {
		return append([]Point(nil), m.curve...)
	}
	total := m.curve[n-1].Units
	var out []Point
	for i, p := range m.curve {
		if i == n-1 || (p.Units-1)*curvePoints/total < (m.curve[i+1].Units-1)*curvePoints/total {
			out = append(out, p)
		}
	}
	return out
}

// projected is the whole build's duration from its first part: elapsed
// since the build started, where the compile phase has reached to (its
// units done, of total, and seconds) from the point from, where the
// estimate was last said (zero at first). The build goes on at the pace
// it went from there against the reference over the same share of its
// units (compileTo): the early units (src/port, src/common) compile
// faster than the backend's later ones, so a pace per unit on average
// says too little. Measured: a cold PostgreSQL 15 build of 6 m 07 s was
// projected at 3 m 18 s after 168 units by the average (-46 %). The
// install takes the reference's at that pace (ninja's steps are not
// make's units, but both phases compile a tree).
//
// A pace holds only while the load does, so each estimate goes by the
// units since the last: a cold build of 17 m 16 s whose machine's load
// fell from 15.7 to 3 during it was projected at 36 m 32 s after 152
// units (+112 %), then at the pace from its start 29 m 56 s after 303
// (+73 %) and 21 m 30 s after 606 (+25 %).
func projected(elapsed time.Duration, from, to Point, total int, ref *Reference) (time.Duration, float64) {
	share := func(p Point) float64 { return float64(p.Units) / float64(total) }
	pace := 1.0
	refTo := ref.compileTo(share(to))
	if took := refTo - ref.compileTo(share(from)); took > 0 {
		pace = (to.Seconds - from.Seconds) / took
	} else if refTo > 0 {
		pace = to.Seconds / refTo
	}
	left := (max(ref.Seconds.Compile-refTo, 0) + ref.Seconds.Install) * pace
	return elapsed + seconds(left), pace
}

// compileTo is the seconds r's compile phase took to the given share of
// its units: along its curve, else (no curve) at its average pace.
func (r *Reference) compileTo(share float64) float64 {
	c := r.Curve
	if len(c) == 0 {
		return share * r.Seconds.Compile
	}
	u := share * float64(c[len(c)-1].Units)
	i := sort.Search(len(c), func(i int) bool { return float64(c[i].Units) >= u })
	if i == len(c) {
		return c[len(c)-1].Seconds
	}
	prev := Point{}
	if i > 0 {
		prev = c[i-1]
	}
	return prev.Seconds + (c[i].Seconds-prev.Seconds)*(u-float64(prev.Units))/float64(c[i].Units-prev.Units)
}

// countUnits counts the object files under dir written since start:
// the compile units of an autotools build, whose make runs silent
// (-s) and so says nothing of them. Links are neither followed nor
// counted: a compiler writes files. last is when the newest was
// written: the count was n then.
func countUnits(dir string, start time.Time) (n int, last time.Time) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".o") {
			return nil
		}
		if fi, err := d.Info(); err == nil && !fi.ModTime().Before(start) {
			n++
			if fi.ModTime().After(last) {
				last = fi.ModTime()
			}
		}
		return nil
	})
	return n, last
}

// unitsEvery is how often an autotools build's object files are
// counted: the resolution of its curve and of the estimates said along
// it (a cold PostgreSQL 15 build of minutes gives some hundred points, a
// warm ccache one of a minute some thirty). A count walks the build
// tree (about 1 200 objects among some thousand files) and stats each
// object.
var unitsEvery = 2 * time.Second

// pollUnits counts the object files under dir (an autotools build's
// compile units, of total in the reference) every unitsEvery into m
// until stop: one count for every compile step, make's and contrib's
// alike. stop counts once more, so that m's curve has every unit written
// before it, and returns when the counting has ended. It ends with ctx
// too.
func (m *measure) pollUnits(ctx context.Context, dir string, total int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.poll(ctx, dir, total, unitsEvery)
	}()
	return func() {
		cancel()
		<-done
	}
}

// poll feeds m the object files of an autotools build directory every
// interval, and once more when ctx ends; total is the reference's units.
// Each count is told at the time its newest unit was written (no later
// than now): the last count, taken once the last compile step ended, is
// then within the compile phase, as its units are.
func (m *measure) poll(ctx context.Context, dir string, total int, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	count := func(now time.Time) {
		n, last := countUnits(dir, m.start)
		if last.After(now) {
			last = now
		}
		m.units(n, total, last)
	}
	for {
		select {
		case <-ctx.Done():
			count(time.Now())
			return
		case now := <-t.C:
			count(now)
		}
	}
}

// stepsMeasured passes ninja's steps on to p (when set) and to m.
type stepsMeasured struct {
	p Progress
	m *measure
}

func (s stepsMeasured) Step(done, total int) {
	if s.p != nil {
		s.p.Step(done, total)
	}
	s.m.units(done, total, time.Now())
}
