package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/safefile"
)

// ErrLocked: another run holds the results directory.
var ErrLocked = errors.New("results: directory in use")

// Lock takes dir's lock for a run that writes it. A second run on the
// same directory is refused (exit 2) with the holder's pid; the kernel
// drops the lock of a process that dies, so a killed run leaves none.
// The lock is an flock: taken twice in one process, the second is
// refused too, so a caller that holds it passes it on (Held).
func Lock(dir string) (release func(), err error) {
	release, holder, err := flock.Try(filepath.Join(dir, LockFile))
	if errors.Is(err, flock.ErrHeld) {
		return nil, exitcode.BadInputf("%s: %w: another abtest (pid %s) is writing it; wait for it or use another -o", dir, ErrLocked, holder)
	}
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("locking %s: %w", dir, err))
	}
	return release, nil
}

// Holder is the pid of the run writing dir, if one is (held); it
// changes nothing in dir.
func Holder(dir string) (pid string, held bool) {
	return flock.Holder(filepath.Join(dir, LockFile))
}

// Held is a results directory locked (Lock) for a whole run: its cells
// and everything that writes the directory after them (the analysis,
// report.md, report.json, plots), so that no second abtest starts
// writing it between the matrix and the report.
type Held struct {
	// Dir is the locked directory.
	Dir     string
	made    bool
	release func()
}

// LockRun makes dir when it is missing and takes its lock for a run;
// the caller releases it (Release) once the run's last file is written.
// Only dir's last component is made by LockRun itself (mkdir, not
// MkdirAll); a directory already there (-o DIR, --resume) is adopted
// only when CheckDir accepts it, so a directory someone else made in a
// results root others can write to is refused, never written through,
// as is a directory in a parent others could swap it in
// (safefile.Parent).
func LockRun(dir string) (*Held, error) {
	if err := safefile.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		if safefile.Refused(err) {
			return nil, exitcode.BadInputf("results directory %s: %v", dir, err)
		}
		return nil, exitcode.Failure(err)
	}
	if err := safefile.Parent(filepath.Dir(dir)); err != nil {
		return nil, exitcode.BadInputf("results directory %s: %v", dir, err)
	}
	made := true
	if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
		made = false
		if err := CheckDir(dir); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, exitcode.Failure(err)
	}
	release, err := Lock(dir)
	if err != nil {
		return nil, err
	}
	return &Held{Dir: dir, made: made, release: release}, nil
}

// CheckDir refuses (exit 2) an existing results directory abtest would
// write into that is not the effective user's own or that group or
// others can write to: anyone who can write it can plant a link there
// that a run would write through.
func CheckDir(dir string) error {
	err := safefile.Dir(dir)
	if errors.Is(err, safefile.ErrUnsafe) {
		return exitcode.BadInputf("results directory %v", err)
	}
	if err != nil {
		return exitcode.BadInput(err)
	}
	return nil
}

// Release releases the lock; once released, it does nothing.
func (h *Held) Release() {
	if h.release != nil {
		h.release()
		h.release = nil
	}
}

// Discard removes the directory when LockRun made it, releasing the
// lock first: a run refused for bad input (settings the server rejects)
// leaves nothing behind, and nothing else may write it then. A
// directory that was there before stays, locked until Release.
func (h *Held) Discard() {
	if h.made {
		h.Release()
		os.RemoveAll(h.Dir)
	}
}
