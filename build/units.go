package build

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// watchUnits feeds m the object files an autotools build writes under
// dir from now on, as the kernel tells of them (inotify): each unit at
// the time it is written, for one walk of the tree (to watch its
// directories) instead of a walk and a stat of every object every 2 s.
// The walk is done when it returns, so one watch from the first compile
// step to the last sees the units of every step (make, then make -C
// contrib/…). Where inotify is not to be had (its limits are per user,
// shared with every other program) or its queue overflows, it polls.
// stop ends the watch once the units written before it are counted
// (events queued, or a last poll), and returns when the watch has
// ended: m's curve is then complete. It ends with ctx too.
func (m *measure) watchUnits(ctx context.Context, dir string, total int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w, err := newUnitWatch(dir)
	go func() {
		defer close(done)
		if err == nil {
			// A deadline ends a read under way; read then takes in
			// what is queued.
			end := context.AfterFunc(ctx, func() { w.f.SetReadDeadline(time.Now()) })
			err = w.read(func(n int, t time.Time) { m.units(n, total, t) })
			end()
			w.f.Close()
		}
		if err != nil {
			m.pollUnits(ctx, dir, total, 2*time.Second)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// unitWatch is an inotify instance on the directories of a build tree.
type unitWatch struct {
	f *os.File
	// fd is f's: f.Fd() would make it blocking, out of the poller.
	fd   int
	dirs map[int32]string // by watch descriptor
	// seen are the object files written since the watch began.
	seen map[string]bool
}

// unitEvents: an object file written in place (compilers) or renamed
// into place (ccache's copy from its cache), a directory made.
const unitEvents = syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO | syscall.IN_CREATE | syscall.IN_ONLYDIR

// errOverflow is the kernel saying it dropped events.
var errOverflow = errors.New("inotify queue overflow")

func newUnitWatch(dir string) (*unitWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// A non-blocking descriptor goes through the runtime's poller, so
	// a read deadline ends a Read under way.
	w := &unitWatch{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, dirs: map[int32]string{}, seen: map[string]bool{}}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return w.add(path)
	})
	if err != nil {
		w.f.Close()
		return nil, err
	}
	return w, nil
}

func (w *unitWatch) add(dir string) error {
	wd, err := syscall.InotifyAddWatch(w.fd, dir, unitEvents)
	if errors.Is(err, syscall.ENOENT) {
		return nil // made and removed again (a build's temporary directory)
	}
	if err != nil {
		return fmt.Errorf("inotify: watching %s: %w", dir, err)
	}
	w.dirs[int32(wd)] = dir
	return nil
}

// read tells each count of object files and when, until a read
// deadline passes (it then takes in the events queued and returns nil)
// or the watch fails.
func (w *unitWatch) read(units func(n int, t time.Time)) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return w.drain(buf, units)
		}
		if err != nil {
			return err
		}
		if err := w.take(buf[:n], units); err != nil {
			return err
		}
	}
}

// drain takes in the events queued, without waiting for more: the
// descriptor does not block.
func (w *unitWatch) drain(buf []byte, units func(n int, t time.Time)) error {
	for {
		n, err := syscall.Read(w.fd, buf)
		if errors.Is(err, syscall.EAGAIN) || (err == nil && n <= 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("inotify: %w", err)
		}
		if err := w.take(buf[:n], units); err != nil {
			return err
		}
	}
}

// take takes in a buffer of events and tells the count when it grew.
func (w *unitWatch) take(buf []byte, units func(n int, t time.Time)) error {
	before := len(w.seen)
	if err := w.events(buf); err != nil {
		return err
	}
	if len(w.seen) > before {
		units(len(w.seen), time.Now())
	}
	return nil
}

// events takes in a buffer of inotify events (struct inotify_event:
// wd, mask, cookie, len, then the name, NUL-padded to len).
func (w *unitWatch) events(buf []byte) error {
	for len(buf) >= syscall.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		size := syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:]))
		if size > len(buf) {
			return fmt.Errorf("inotify: short event")
		}
		name := strings.TrimRight(string(buf[syscall.SizeofInotifyEvent:size]), "\x00")
		buf = buf[size:]
		path := filepath.Join(w.dirs[wd], name)
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			return errOverflow
		case mask&syscall.IN_ISDIR != 0 && mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0:
			// Made after the walk: watched from now, and what it
			// already holds (directories too) counted.
			err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
				switch {
				case err != nil:
					return nil // gone again
				case d.IsDir():
					return w.add(p)
				case strings.HasSuffix(p, ".o"):
					w.seen[p] = true
				}
				return nil
			})
			if err != nil {
				return err
			}
		case mask&(syscall.IN_CLOSE_WRITE|syscall.IN_MOVED_TO) != 0 && strings.HasSuffix(name, ".o"):
			w.seen[path] = true
		}
	}
	return nil
}
