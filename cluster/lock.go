package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// lock takes the per-name lock, so that two abtest processes never work on
// one cluster at once. The lock is an flock on .NAME.lock in the data root:
// the kernel drops it when its holder dies, so a killed abtest leaves no
// stale lock behind. The file records the holder's pid for the message.
func (m *Manager) lock(name string) (func(), error) {
	if m.Run.DryRun {
		return func() {}, nil
	}
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	path := filepath.Join(m.Root, "."+name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(data))
			if holder == "" {
				holder = "?"
			}
			return nil, exitcode.BadInputf("%w: another abtest (pid %s) is working on cluster %s; wait for it to finish (lock: %s)", ErrBusy, holder, name, path)
		}
		return nil, exitcode.Failure(fmt.Errorf("locking %s: %w", path, err))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
