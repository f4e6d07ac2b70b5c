package progress

import (
	"sync"
	"time"
)

// Recorder keeps every event and passes it on to Next (when set): a
// run's events, to replay through another renderer.
type Recorder struct {
	Next   Sink
	mu     sync.Mutex
	events []Event
}

// Emit records e and passes it on.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.Next != nil {
		r.Next.Emit(e)
	}
}

// Events returns the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Replay emits events to s in order.
func Replay(s Sink, events []Event) {
	for _, e := range events {
		s.Emit(e)
	}
}

// Build is a build's progress as build.Builder takes it (Phase, Step):
// the events of build Task to Sink.
type Build struct {
	Sink Sink
	Task string
}

// Phase tells that the build entered phase name.
func (b Build) Phase(name string) {
	b.Sink.Emit(Event{Kind: Phase, Task: b.Task, Phase: name})
}

// Step tells that done of total steps of the phase are done.
func (b Build) Step(done, total int) {
	b.Sink.Emit(Event{Kind: Step, Task: b.Task, Done: done, Total: total})
}

// Estimate tells that the build is now expected to take d in all, by
// what it measured (from).
func (b Build) Estimate(d time.Duration, from string) {
	b.Sink.Emit(Event{Kind: Estimated, Task: b.Task, Estimate: d, From: from})
}
