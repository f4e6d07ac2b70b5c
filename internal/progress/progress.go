// Package progress shows long work on the console: the builds of a run
// and its cells, each with its phase, elapsed time, an estimate of what
// is left and where its log is. One renderer serves `switch -b`, `matrix`
// and everything that runs a matrix (demo, nightly, bisect).
//
// What happens is told as Events (Emit), so a run's events can be
// recorded (Recorder) and replayed through another renderer: the golden
// test of the console output replays a real matrix run's events with a
// fixed clock, on a terminal and not.
//
// Not on a terminal every event is one line. On a terminal a status line
// (the current phase, a bar when the phase counts steps, elapsed, ETA,
// log) is redrawn in place, and only what is worth keeping (a build's
// start and outcome, each cell's result, notes) scrolls above it.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Kind is what an Event says.
type Kind string

// The kinds of events.
const (
	// BuildStart: build Task begins; Detail says what it builds (ref,
	// sha, patches), Estimate and From what it is expected to take, Log
	// where its output goes.
	BuildStart Kind = "build"
	// BuildCached: build Task has nothing to do (its fingerprint is
	// installed); Detail names the fingerprint.
	BuildCached Kind = "cached"
	// Phase: build Task entered phase Phase (configure, compile, install).
	Phase Kind = "phase"
	// Step: Done of Total steps of the current phase (ninja's [n/N]).
	Step Kind = "step"
	// Estimated: build Task is now expected to take Estimate in all,
	// for the reason From: what it measured of this machine (its first
	// compile units), replacing an estimate from a reference.
	Estimated Kind = "estimate"
	// BuildDone: build Task succeeded; Detail is its outcome (type,
	// ccache, version).
	BuildDone Kind = "built"
	// CellStart: cell Task, number Done of Total, begins; Estimate is
	// what one cell takes by the plan.
	CellStart Kind = "cell"
	// CellDone: cell Task ended; Detail is its result, Failed whether it
	// failed.
	CellDone Kind = "cell-done"
	// Note: a line of information (Detail), left out with Quiet.
	Note Kind = "note"
	// Warn: a line that is printed even with Quiet (Detail).
	Warn Kind = "warn"
	// End: the work is over; the renderer prints the total and the
	// slowest phase.
	End Kind = "end"
	// Abort: the work failed; the status line goes (the error is
	// printed after it) and the totals start anew.
	Abort Kind = "abort"
)

// Event is one thing that happened.
type Event struct {
	Kind     Kind          `json:"kind"`
	Task     string        `json:"task,omitempty"`
	Phase    string        `json:"phase,omitempty"`
	Done     int           `json:"done,omitempty"`
	Total    int           `json:"total,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	Log      string        `json:"log,omitempty"`
	Estimate time.Duration `json:"estimate,omitempty"`
	// From says where Estimate comes from ("last build of this tree",
	// "the plan", "default for a cold build", …).
	From   string `json:"from,omitempty"`
	Failed bool   `json:"failed,omitempty"`
}

// Sink receives events; Renderer and Recorder are sinks.
type Sink interface {
	Emit(Event)
}

// Options configure a Renderer.
type Options struct {
	// TTY redraws a status line in place; otherwise one line per event.
	TTY bool
	// Quiet prints only Warn events and failed cells.
	Quiet bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Width truncates the status line (a wrapped line cannot be redrawn
	// in place); zero means the terminal's width, or 100.
	Width int
	// Redraw, on a terminal, redraws the status line this often while
	// nothing happens (make says nothing for minutes); zero never does.
	Redraw time.Duration
}

// Renderer writes events to a console.
type Renderer struct {
	mu  sync.Mutex
	w   io.Writer
	o   Options
	now func() time.Time

	began  time.Time // first event since the last End
	status string    // the status line on screen (TTY), "" when none
	// drawnAt is when the status line was drawn.
	drawnAt time.Time
	timer   *time.Timer

	build  *buildState
	cell   *cellState
	cells  cellTotals
	builds time.Duration // wall time of all builds
	phases []span        // finished build phases and the cells
}

type buildState struct {
	name, phase, log string
	start, phaseAt   time.Time
	estimate         time.Duration
	done, total      int
	timings          []span
}

type cellState struct {
	id       string
	n, total int
	start    time.Time
	perCell  time.Duration
}

type cellTotals struct {
	first time.Time
	done  int
	spent time.Duration
}

// span is a named stretch of time.
type span struct {
	name string
	d    time.Duration
}

// New returns a renderer writing to w.
func New(w io.Writer, o Options) *Renderer {
	if w == nil {
		w = io.Discard
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.Width <= 0 {
		o.Width = TerminalWidth(w)
	}
	return &Renderer{w: w, o: o, now: now}
}

// Console is the renderer of a console w: redrawn in place every second
// when w is a terminal, one line per event otherwise.
func Console(w io.Writer, quiet bool, now func() time.Time) *Renderer {
	return New(w, Options{TTY: IsTerminal(w), Quiet: quiet, Now: now, Redraw: time.Second})
}

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// TerminalWidth is w's width in columns when w is a terminal, else 100.
func TerminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 100
}

// Emit renders e.
func (r *Renderer) Emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.now()
	if r.began.IsZero() && e.Kind != End && e.Kind != Abort {
		r.began = t
	}
	switch e.Kind {
	case BuildStart, BuildCached, Phase, Step, Estimated, BuildDone:
		r.buildEvent(e, t)
	case CellStart, CellDone:
		r.cellEvent(e, t)
	case Note:
		r.line(e.Detail, false)
	case Warn:
		r.line(e.Detail, true)
	case End:
		r.end(t)
	case Abort:
		r.clear()
		r.reset()
	}
	if e.Kind == Step && e.Done != e.Total && t.Sub(r.drawnAt) < 200*time.Millisecond {
		return // ninja counts a thousand steps: a redraw per step is noise
	}
	r.draw(t)
	r.arm()
}

func (r *Renderer) buildEvent(e Event, t time.Time) {
	b := r.build
	switch e.Kind {
	case BuildStart:
		r.build = &buildState{name: e.Task, log: e.Log, start: t, estimate: e.Estimate}
		r.line(fmt.Sprintf("build %s (%s): %s; log %s", e.Task, e.Detail, estimate(e.Estimate, e.From), e.Log), false)
	case BuildCached:
		r.build = nil
		r.line(fmt.Sprintf("build %s (%s): up to date (%s), nothing to build (--force rebuilds)", e.Task, e.Detail, e.From), false)
	case Phase:
		if b == nil || b.phase == e.Phase {
			return
		}
		b.endPhase(t)
		b.phase, b.phaseAt, b.done, b.total = e.Phase, t, 0, 0
		if !r.o.TTY {
			r.line(fmt.Sprintf("build %s: %s (%s in%s)", b.name, b.phase, Dur(t.Sub(b.start)), b.left(t, ", ")), false)
		}
	case Step:
		if b == nil {
			return
		}
		b.done, b.total = e.Done, e.Total
	case Estimated:
		if b == nil {
			return
		}
		b.estimate = e.Estimate
		r.line(fmt.Sprintf("build %s: %s, %s in%s", b.name, estimate(e.Estimate, e.From), Dur(t.Sub(b.start)), b.left(t, ", ")), false)
	case BuildDone:
		if b == nil {
			r.line(fmt.Sprintf("build %s: built; %s", e.Task, e.Detail), false)
			break
		}
		b.endPhase(t)
		took := t.Sub(b.start)
		r.builds += took
		var parts []string
		for _, s := range b.timings {
			parts = append(parts, s.name+" "+Dur(s.d))
			r.phases = append(r.phases, span{"build " + b.name + " " + s.name, s.d})
		}
		r.build = nil
		phases := ""
		if len(parts) > 0 {
			phases = " (" + strings.Join(parts, ", ") + ")"
		}
		r.line(fmt.Sprintf("build %s: built in %s%s; %s", e.Task, Dur(took), phases, e.Detail), false)
	}
}

func (b *buildState) endPhase(t time.Time) {
	if b.phase != "" {
		b.timings = append(b.timings, span{b.phase, t.Sub(b.phaseAt)})
	}
}

// left is what remains of the build by its estimate, or by the steps of
// the phase when it counts them (ninja), after sep; "" when unknown.
func (b *buildState) left(t time.Time, sep string) string {
	if b.total > 0 && b.done > 0 {
		d := time.Duration(float64(t.Sub(b.phaseAt)) * float64(b.total-b.done) / float64(b.done))
		return sep + "ETA " + Dur(d) + " by the steps"
	}
	if b.estimate <= 0 {
		return ""
	}
	if d := b.estimate - t.Sub(b.start); d > 0 {
		return sep + "ETA " + Dur(d)
	}
	return sep + "longer than the estimate " + Dur(b.estimate)
}

func (r *Renderer) cellEvent(e Event, t time.Time) {
	switch e.Kind {
	case CellStart:
		if r.cells.first.IsZero() {
			r.cells.first = t
		}
		r.cell = &cellState{id: e.Task, n: e.Done, total: e.Total, start: t, perCell: e.Estimate}
		if !r.o.TTY {
			r.line(fmt.Sprintf("[%d/%d] %s%s", e.Done, e.Total, e.Task, r.cellLeft(", ")), false)
		}
	case CellDone:
		c := r.cell
		r.cell = nil
		took := time.Duration(0)
		if c != nil {
			took = t.Sub(c.start)
			r.cells.done++
			r.cells.spent += took
		}
		detail := e.Detail + " (" + Dur(took) + ")"
		if e.Failed {
			detail = "FAILED: " + e.Detail
		}
		text := "    " + detail
		if r.o.TTY && c != nil {
			text = fmt.Sprintf("[%d/%d] %s: %s", c.n, c.total, c.id, detail)
		}
		r.line(text, e.Failed)
	}
}

// cellLeft is the ETA of the cells left (this one included): by the
// cells done so far, or by the plan before the first is done.
func (r *Renderer) cellLeft(sep string) string {
	c := r.cell
	if c == nil || c.total == 0 {
		return ""
	}
	left := c.total - c.n + 1
	if r.cells.done > 0 {
		return sep + "ETA " + Dur(r.cells.spent/time.Duration(r.cells.done)*time.Duration(left))
	}
	if c.perCell > 0 {
		return sep + "ETA " + Dur(c.perCell*time.Duration(left)) + " by the plan"
	}
	return ""
}

// line prints a line that stays; on a terminal the status line is
// cleared first and drawn again after it.
func (r *Renderer) line(s string, always bool) {
	if r.o.Quiet && !always {
		return
	}
	r.clear()
	fmt.Fprintln(r.w, s)
}

func (r *Renderer) clear() {
	if r.status != "" {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.status = ""
	}
}

// draw redraws the status line on a terminal.
func (r *Renderer) draw(t time.Time) {
	if !r.o.TTY || r.o.Quiet {
		return
	}
	s := r.statusLine(t)
	if s == r.status {
		return
	}
	if len([]rune(s)) > r.o.Width-1 {
		s = string([]rune(s)[:r.o.Width-2]) + "…"
	}
	fmt.Fprint(r.w, "\r\x1b[K"+s)
	r.status, r.drawnAt = s, t
}

func (r *Renderer) statusLine(t time.Time) string {
	if b := r.build; b != nil && b.phase != "" {
		bar := ""
		if b.total > 0 {
			const width = 20
			filled := width * b.done / b.total
			bar = fmt.Sprintf(" [%s%s] %d/%d", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), b.done, b.total)
		}
		return fmt.Sprintf("build %s: %s%s · %s%s · log %s", b.name, b.phase, bar, Dur(t.Sub(b.start)), b.left(t, " · "), b.log)
	}
	if c := r.cell; c != nil {
		return fmt.Sprintf("[%d/%d] %s · %s%s", c.n, c.total, c.id, Dur(t.Sub(c.start)), r.cellLeft(" · "))
	}
	return ""
}

// end prints the total and the slowest phase since the first event or
// the last end, and starts counting anew (bisect and nightly run one
// matrix after another through one renderer).
func (r *Renderer) end(t time.Time) {
	defer r.reset()
	phases := r.phases
	parts := []string{}
	if r.builds > 0 {
		parts = append(parts, "builds "+Dur(r.builds))
	}
	if r.cells.done > 0 {
		cells := "cells"
		if r.cells.done == 1 {
			cells = "cell"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s", r.cells.done, cells, Dur(r.cells.spent)))
		phases = append(phases, span{"cells", r.cells.spent})
	}
	text := "total " + Dur(t.Sub(r.began))
	if len(parts) > 0 {
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	var slow span
	for _, p := range phases {
		if p.d > slow.d {
			slow = p
		}
	}
	if slow.name != "" {
		text += "; slowest phase: " + slow.name + " " + Dur(slow.d)
	}
	r.line(text, false)
}

// reset forgets the work so far: the next event starts it anew.
func (r *Renderer) reset() {
	r.build, r.cell, r.cells, r.builds, r.phases = nil, nil, cellTotals{}, 0, nil
	r.began = time.Time{}
}

// arm keeps a timer that redraws the status line while one is shown.
func (r *Renderer) arm() {
	if r.o.Redraw <= 0 || r.status == "" || r.timer != nil {
		return
	}
	r.timer = time.AfterFunc(r.o.Redraw, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.timer = nil
		r.draw(r.now())
		r.arm()
	})
}

// estimate says what a task is expected to take and why.
func estimate(d time.Duration, from string) string {
	switch {
	case from == "":
		return "no estimate"
	case d <= 0:
		return from
	}
	return "about " + Dur(d) + " (" + from + ")"
}

// Dur is a duration for people: 850ms, 12s, 3m05s, 1h02m.
func Dur(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
