package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
)

// lock takes the per-name lock, so that two abtest processes never work on
// one cluster at once: an flock on .NAME.lock in the data root.
func (m *Manager) lock(name string) (func(), error) {
	if m.Run.DryRun {
		return func() {}, nil
	}
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
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
