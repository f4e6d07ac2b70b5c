package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
)

// A build stops the clusters that run the binaries it installs over
// (StopUsing) and whoever asked for the build starts them again when it
// is done. A kill -9 in between would leave a user's cluster stopped
// with nothing on disk saying so: the record of who stopped it, and
// why, is written into the cluster's own state before the stop, and
// any later abtest that opens the clusters (RestoreStopped) starts
// again those whose recorder is gone. The state is the place because
// it is the one file every command reads, it is checked for its owner
// (trust.go), and every Start rewrites it: a cluster started again by
// anyone has no record left.

// StopRecord says which abtest process stopped a cluster meaning to
// start it again, and why.
type StopRecord struct {
	PID int `json:"pid"`
	// StartTicks is the process's start time (/proc/PID/stat): pids
	// are reused, (pid, start time) is not.
	StartTicks int64     `json:"start_ticks"`
	Why        string    `json:"why"`
	At         time.Time `json:"at"`
}

// alive reports whether the process that wrote r still runs.
func (r *StopRecord) alive() bool {
	st, err := procfs.ReadStat(r.PID)
	return err == nil && st.Alive() && st.StartTicks == r.StartTicks
}

// thisProcess is the StopRecord of the running abtest.
func thisProcess(why string) (*StopRecord, error) {
	st, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		return nil, err
	}
	return &StopRecord{PID: st.PID, StartTicks: st.StartTicks, Why: why, At: time.Now().UTC()}, nil
}

// StopUsing stops every running cluster of this manager whose server runs
// the binaries of install, and returns their names: a build calls it
// before it installs over install (build.Builder.Servers). Each state
// records first that this process stopped it (StopRecord), so that a
// later abtest starts it again should this one die before it does.
func (m *Manager) StopUsing(ctx context.Context, install string) ([]string, error) {
	return m.StopUsingFor(ctx, install, "a build into "+install)
}

// StopUsingFor is StopUsing recording why (e.g. "a build of f1 for the
// run /results/x").
func (m *Manager) StopUsingFor(ctx context.Context, install, why string) ([]string, error) {
	infos, err := m.List()
	if err != nil {
		return nil, err
	}
	rec, err := thisProcess(why)
	if err != nil {
		return nil, err
	}
	var stopped []string
	for _, i := range infos {
		if !i.Running || !sameDir(i.Install, install) {
			continue
		}
		m.logf("cluster %s: stopping before installing over its binaries", i.Name)
		st := i.State
		st.Stopped = rec
		if err := m.writeState(&st); err != nil {
			return stopped, fmt.Errorf("cluster %s: recording its stop: %w", i.Name, err)
		}
		if _, err := m.Stop(ctx, i.Name); err != nil {
			return stopped, err
		}
		stopped = append(stopped, i.Name)
	}
	return stopped, nil
}

// Restored is a cluster RestoreStopped found stopped by an abtest that
// is gone: started again, or Err says why not.
type Restored struct {
	Name string
	Port int
	By   StopRecord
	// Running: it ran already (someone started it); only the record was
	// cleared.
	Running bool
	Err     error
}

func (r Restored) String() string {
	by := fmt.Sprintf("stopped by abtest pid %d (gone) at %s for %s", r.By.PID, r.By.At.Local().Format("15:04:05"), r.By.Why)
	switch {
	case r.Err != nil:
		return fmt.Sprintf("cluster %s, %s, is still stopped: %v (abtest switch %s starts it)", r.Name, by, r.Err, r.Name)
	case r.Running:
		return fmt.Sprintf("cluster %s, %s, runs again (record cleared)", r.Name, by)
	}
	return fmt.Sprintf("restored cluster %s on port %d, %s", r.Name, r.Port, by)
}

// RestoreStopped starts again, on the options of its state, every
// cluster whose StopRecord names a process that is gone, and clears the
// record; records of live processes are theirs to undo. Only trusted
// states are read (ReadState) and pg_ctl runs only from a trusted
// install (checkPgCtl). Nothing runs in a dry run.
func (m *Manager) RestoreStopped(ctx context.Context) []Restored {
	if m.Run == nil || m.Run.DryRun {
		return nil
	}
	states, _ := filepath.Glob(filepath.Join(m.Root, "*", stateFile))
	var out []Restored
	for _, f := range states {
		st, err := m.ReadState(filepath.Base(filepath.Dir(f)))
		if err != nil || st.Stopped == nil || st.Stopped.alive() {
			continue
		}
		r := Restored{Name: st.Name, Port: st.Port, By: *st.Stopped}
		r.Running, r.Err = m.restore1(ctx, st)
		out = append(out, r)
	}
	return out
}

// restore1 starts st's cluster again as it was, or only clears its
// record when it runs.
func (m *Manager) restore1(ctx context.Context, st *State) (bool, error) {
	if _, running := PID(st.DataDir); running {
		unlock, err := m.lock(st.Name)
		if err != nil {
			return true, err
		}
		defer unlock()
		st.Stopped = nil
		return true, m.writeState(st)
	}
	if err := m.checkPgCtl(st.Install, st.InstallOwner); err != nil {
		return false, err
	}
	_, err := m.Start(ctx, st.Name, OptionsOf(st))
	return false, err
}

// KeepStopped forgets that this process stopped cluster name, so that
// no later abtest starts it again: the run that stopped it decided it
// stays stopped (a matrix's own cluster at the run's end). A record of
// another process, or none, is left as it is.
func (m *Manager) KeepStopped(name string) error {
	st, err := m.ReadState(name)
	if err != nil || st.Stopped == nil || st.Stopped.PID != os.Getpid() {
		return err
	}
	st.Stopped = nil
	return m.writeState(st)
}
