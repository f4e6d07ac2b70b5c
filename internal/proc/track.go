package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
)

// A Tracker keeps, in a file, the process groups a Runner has started and
// that have not yet exited: pgbench, make, initdb. An abtest killed with
// SIGKILL cannot end them, and they run on, orphaned: a pgbench loads the
// server of the next cell, a make writes into the build that the next
// run makes again. The next abtest of the same work (a --resume) reads
// the file and ends them first (EndLeftovers).
type Tracker struct {
	path string
	mu   sync.Mutex
	live []Tracked
	err  error
}

// Tracked is a process group a Tracker recorded: its leader (Runner
// starts every command in its own group), when it started (ticks since
// boot, so that a recycled pid is never taken for it) and what it runs.
type Tracked struct {
	PID        int    `json:"pid"`
	StartTicks int64  `json:"start_ticks"`
	Path       string `json:"path"`
}

// NewTracker returns a Tracker that writes to path (in a directory only
// abtest writes to: EndLeftovers signals what the file names).
func NewTracker(path string) *Tracker { return &Tracker{path: path} }

// Err is the first error writing the file met, if any: tracking is a
// safety net, so a failed write does not fail the command it tracks.
func (t *Tracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *Tracker) started(pid int, path string) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return // exited already
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = append(t.live, Tracked{PID: pid, StartTicks: st.StartTicks, Path: path})
	t.save()
}

func (t *Tracker) exited(pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = slices.DeleteFunc(t.live, func(p Tracked) bool { return p.PID == pid })
	t.save()
}

// save writes the live list atomically; t.mu is held.
func (t *Tracker) save() {
	data, err := json.Marshal(t.live)
	if err == nil {
		err = writeAtomic(t.path, append(data, '\n'), 0o644, nil)
	}
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("recording the processes abtest runs in %s: %w", t.path, err)
	}
}

// EndLeftovers ends the process groups the file at path lists that still
// run as they were recorded (same pid, start time and program): SIGTERM
// to the group, then SIGKILL after grace. It returns those it ended and
// removes the file. No file: nothing to do.
func EndLeftovers(path string, grace time.Duration) ([]Tracked, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var listed []Tracked
	if err := json.Unmarshal(data, &listed); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var ended []Tracked
	for _, p := range listed {
		if stillRuns(p) {
			_ = syscall.Kill(-p.PID, syscall.SIGTERM)
			ended = append(ended, p)
		}
	}
	deadline := time.Now().Add(grace)
	for _, p := range ended {
		for groupAlive(p.PID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if groupAlive(p.PID) {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		}
	}
	for _, p := range ended {
		for i := 0; i < 250 && groupAlive(p.PID); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ended, err
	}
	return ended, nil
}

// stillRuns: p's pid is the process recorded, not a recycled one.
func stillRuns(p Tracked) bool {
	if p.PID <= 1 {
		return false
	}
	st, err := procfs.ReadStat(p.PID)
	if err != nil || !st.Alive() || st.StartTicks != p.StartTicks {
		return false
	}
	argv, err := procfs.Cmdline(p.PID)
	return err == nil && len(argv) > 0 && argv[0] == p.Path
}

// groupAlive: a process of group pgid that has not exited runs (a zombie,
// never reaped by an init that does not reap, does not count).
func groupAlive(pgid int) bool {
	for _, s := range procfs.All() {
		if s.Alive() && pgidOf(s.PID) == pgid {
			return true
		}
	}
	return false
}

func pgidOf(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		return -1
	}
	return g
}
