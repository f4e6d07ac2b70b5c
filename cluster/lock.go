package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safefile"
)

// Two locks per cluster, both flocks in the data root, so that the kernel
// drops them when their holder dies:
//
//	.NAME.lock  held while one abtest process starts, stops or removes
//	            NAME (a moment)
//	.NAME.use   held by Acquire while a measurement runs on NAME (minutes),
//	            on its server or on its stopped data directory (Quiesce):
//	            Stop, and a Start that would do anything (start, restart,
//	            recreate), refuse while another process holds it, unless
//	            forced; Remove refuses

// lock takes the per-name lock, so that two abtest processes never work on
// one cluster at once: an flock on .NAME.lock in the data root.
func (m *Manager) lock(name string) (func(), error) {
	if m.Run.DryRun {
		return func() {}, nil
	}
	if err := safefile.MkdirAll(m.Root, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	path := filepath.Join(m.Root, "."+name+".lock")
	release, holder, err := flock.Try(path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, exitcode.BadInputf("%w: another abtest (pid %s) is working on cluster %s; wait for it to finish (lock: %s)", ErrBusy, holder, name, path)
	}
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("locking %s: %w", path, err))
	}
	return release, nil
}

func (m *Manager) usePath(name string) string {
	return filepath.Join(m.Root, "."+name+".use")
}

// Acquire holds cluster name for a measurement until release is called
// (or the process dies): while it is held, Stop by any other process, a
// Start of another process that would start, restart or recreate the
// server, and Remove fail with ErrBusy naming this process (Stop and
// Start unless forced). One holder at a time:
// a second Acquire, from this process or another, is ErrBusy too, so two
// runs never measure one server at once. A lock file left by a process
// that died holding it is taken over with a note.
func (m *Manager) Acquire(ctx context.Context, name string) (release func(), err error) {
	if _, err := m.DataDir(name); err != nil {
		return nil, exitcode.BadInput(err)
	}
	if m.Run.DryRun {
		return func() {}, nil
	}
	if err := safefile.MkdirAll(m.Root, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	path := m.usePath(name)
	prev, _ := os.ReadFile(path)
	release, holder, err := flock.Try(path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, exitcode.BadInputf("%w: cluster %s is held by pid %s for a measurement (lock: %s)", ErrBusy, name, holder, path)
	}
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("locking %s: %w", path, err))
	}
	// A clean release empties the file: a pid left in it is a holder that
	// died, whose flock the kernel dropped.
	if p := strings.TrimSpace(string(prev)); p != "" && p != strconv.Itoa(os.Getpid()) {
		n, _ := strconv.Atoi(p)
		state := "is no longer running"
		if procfs.Alive(n) {
			state = "no longer holds it"
		}
		m.logf("cluster %s: taking over the measurement lock of pid %s, which %s", name, p, state)
	}
	return release, nil
}

// checkUse fails with ErrBusy when another process holds name for a
// measurement (Acquire) and force is not set; what names the refused
// operation ("stop", "restart").
func (m *Manager) checkUse(name, what string, force bool) error {
	holder := m.heldBy(name)
	if holder == "" {
		return nil
	}
	if force {
		m.logf("cluster %s: %s although pid %s holds it for a measurement (forced)", name, what, holder)
		return nil
	}
	// Only a stop can be forced (switch --stop --force): a start or a
	// restart under a measurement has no flag that would force it.
	if what == "stop" {
		return exitcode.BadInputf("%w: cluster %s is busy (held by pid %s for a measurement); use --force to stop it anyway", ErrBusy, name, holder)
	}
	return exitcode.BadInputf("%w: cluster %s is busy (held by pid %s for a measurement); wait for it to finish (only a stop can be forced: switch --stop --force)", ErrBusy, name, holder)
}

// heldBy is the pid of another process that holds name (Acquire), or "".
func (m *Manager) heldBy(name string) string {
	if m.Run.DryRun {
		return ""
	}
	path := m.usePath(name)
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	release, holder, err := flock.Try(path)
	if err == nil {
		release()
		return ""
	}
	if !errors.Is(err, flock.ErrHeld) || holder == strconv.Itoa(os.Getpid()) {
		return ""
	}
	return holder
}
