// Package flock is an exclusive, non-blocking lock on a file that records
// its holder's pid. The kernel drops an flock when its holder dies, so a
// killed abtest leaves no stale lock.
package flock

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgabtest/abtest/internal/safefile"
)

// ErrHeld: another process holds the lock.
var ErrHeld = errors.New("flock: held by another process")

// Try takes the lock on path. When another process holds it, the error
// is ErrHeld and holder is that process's pid as it recorded it.
func Try(path string) (release func(), holder string, err error) {
	// The lock is truncated and written: a planted link must not make
	// that someone else's file (safefile).
	f, err := safefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := strings.TrimSpace(string(data))
			if h == "" {
				h = "?"
			}
			return nil, h, ErrHeld
		}
		return nil, "", err
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, "", nil
}

// Holder reports the pid another process holding the lock on path
// recorded; held is false when nobody holds it or path does not exist.
// Unlike Try it creates nothing: it only looks.
func Holder(path string) (holder string, held bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return "", false
		}
		data, _ := os.ReadFile(path)
		if holder = strings.TrimSpace(string(data)); holder == "" {
			holder = "?"
		}
		return holder, true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return "", false
}

// Wait takes the lock on path, waiting while another process holds it:
// waiting is called once, with the holder's pid, when it has to. It
// gives up when ctx ends.
func Wait(ctx context.Context, path string, waiting func(holder string)) (release func(), err error) {
	for told := false; ; told = true {
		release, holder, err := Try(path)
		if !errors.Is(err, ErrHeld) {
			return release, err
		}
		if !told && waiting != nil {
			waiting(holder)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
