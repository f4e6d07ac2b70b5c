package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestHolder: Holder sees a held lock and its holder's pid, sees nothing
// once it is released or where there is no file, and creates nothing.
func TestHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if h, held := Holder(path); held || h != "" {
		t.Errorf("no file: %q %v", h, held)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("Holder created the file")
	}
	release, _, err := Try(path)
	if err != nil {
		t.Fatal(err)
	}
	if h, held := Holder(path); !held || h != strconv.Itoa(os.Getpid()) {
		t.Errorf("held: %q %v, want pid %d", h, held, os.Getpid())
	}
	// Looking does not take it: the holder still holds it.
	if _, h, err := Try(path); err != ErrHeld || h != strconv.Itoa(os.Getpid()) {
		t.Errorf("Try after Holder: %q %v", h, err)
	}
	release()
	if h, held := Holder(path); held {
		t.Errorf("released: %q %v", h, held)
	}
	if release, _, err := Try(path); err != nil {
		t.Errorf("Try after release: %v", err)
	} else {
		release()
	}
}

// TestWait: Wait takes a free lock at once; on a held one it says the
// holder once, waits, and takes it when it is released, or gives up
// when its context ends.
func TestWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release, _, err := Try(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Wait(ctx, path, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on a held lock until the context ended: %v", err)
	}
	var told []string
	time.AfterFunc(500*time.Millisecond, release)
	start := time.Now()
	release2, err := Wait(context.Background(), path, func(h string) { told = append(told, h) })
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("Wait took a held lock after %s", time.Since(start))
	}
	if len(told) != 1 || told[0] != strconv.Itoa(os.Getpid()) {
		t.Errorf("waiting told %q, want this pid once", told)
	}
}
