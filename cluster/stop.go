package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safepath"
)

// Stop stops cluster name if it runs (pg_ctl stop -m fast, waiting), and
// removes its socket directory (a stopped server needs none; Start makes
// it again at the same path). It is ErrBusy while another process holds
// the cluster for a measurement (Acquire).
func (m *Manager) Stop(ctx context.Context, name string) (bool, error) {
	return m.stop(ctx, name, false, false)
}

// ForceStop is Stop even while another process holds the cluster (a
// note says so).
func (m *Manager) ForceStop(ctx context.Context, name string) (bool, error) {
	return m.stop(ctx, name, true, false)
}

// stop is Stop; keepSocket keeps the socket directory, for a server
// started on the stopped data directory next (Quiesce).
func (m *Manager) stop(ctx context.Context, name string, force, keepSocket bool) (bool, error) {
	dir, err := m.DataDir(name)
	if err != nil {
		return false, exitcode.BadInput(err)
	}
	if !exists(filepath.Join(dir, "PG_VERSION")) {
		return false, exitcode.BadInputf("%w %q under %s", ErrNotFound, name, m.Root)
	}
	if err := m.checkUser(); err != nil {
		return false, err
	}
	if err := m.checkDataDirOwned(name, dir); err != nil {
		return false, err
	}
	unlock, err := m.lock(name)
	if err != nil {
		return false, err
	}
	defer unlock()
	// pg_ctl stop signals whatever pid postmaster.pid names: it runs only
	// once that pid is known to be this cluster's postmaster.
	pid, err := postmaster(dir)
	if err != nil {
		var stale *staleError
		if errors.As(err, &stale) {
			m.logf("cluster %s: not running (%v)", name, stale)
		}
		// Not while another process holds it: a server may be about to
		// start on its data directory (Quiesce).
		if !keepSocket && m.heldBy(name) == "" {
			m.dropSocketDir(name, dir)
		}
		return false, nil
	}
	if err := m.checkUse(name, "stop", force); err != nil {
		return false, err
	}
	if err := m.pgctlStop(ctx, dir, "", "fast"); err != nil {
		return true, err
	}
	// pg_ctl returns once postmaster.pid is gone; the postmaster unlinks
	// its socket lock files just after it, and a socket directory with
	// the lock of a live process is not removed.
	waitExited(ctx, pid, 5*time.Second)
	if !keepSocket {
		m.dropSocketDir(name, dir)
	}
	return true, nil
}

// waitExited waits up to limit for process pid to exit.
func waitExited(ctx context.Context, pid int, limit time.Duration) {
	for deadline := time.Now().Add(limit); Alive(pid) && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(10 * time.Millisecond)
	}
}

// Remove stops cluster name and removes its data directory and env.sh;
// it is ErrBusy while another process holds the cluster (Acquire).
func (m *Manager) Remove(ctx context.Context, name string) error {
	dir, err := m.DataDir(name)
	if err != nil {
		return exitcode.BadInput(err)
	}
	if err := safepath.CheckRemovable(m.Root, dir); err != nil {
		return exitcode.BadInput(fmt.Errorf("removing cluster %s: %w", name, err))
	}
	if err := m.checkDataDirOwned(name, dir); err != nil {
		return err
	}
	// Stopped, it may be in a quiet period (Quiesce): a measurement runs
	// on its data directory.
	if holder := m.heldBy(name); holder != "" {
		return exitcode.BadInputf("%w: cluster %s is held by pid %s for a measurement; remove it once that has finished", ErrBusy, name, holder)
	}
	if _, running := PID(dir); running {
		if _, err := m.Stop(ctx, name); err != nil {
			return err
		}
	}
	st, _ := m.ReadState(name)
	for _, p := range []string{dir, m.EnvFile(name)} {
		if err := m.Run.RemoveAll(p); err != nil {
			return exitcode.Failure(err)
		}
	}
	if st != nil {
		if err := m.removeSocketDir(st.SocketDir, dir); err != nil {
			return exitcode.Failure(err)
		}
	}
	return nil
}

// pgctlStop stops the server of dir with pg_ctl of the install its state
// records, or of install when there is no state yet (a new cluster).
// Callers have checked that postmaster.pid names this cluster's
// postmaster: pg_ctl signals whatever pid the file holds.
func (m *Manager) pgctlStop(ctx context.Context, dir, install, mode string) error {
	owner := 0
	if st, _ := m.ReadState(filepath.Base(dir)); st != nil && st.Install != "" {
		install, owner = st.Install, st.InstallOwner
	}
	if install == "" {
		return exitcode.Failure(fmt.Errorf("stopping %s: no recorded installation to run pg_ctl from", dir))
	}
	if err := m.checkPgCtl(install, owner); err != nil {
		return err
	}
	if err := m.Run.Run(ctx, m.cmd(install, "pg_ctl", "stop", "-D", dir, "-m", mode, "-w", "-t", "60", "-s")); err != nil {
		return exitcode.Failure(fmt.Errorf("stopping %s: %w", dir, err))
	}
	return nil
}
