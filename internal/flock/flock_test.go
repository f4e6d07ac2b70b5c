package flock

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
