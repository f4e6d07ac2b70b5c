package proc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
)

// A command a Tracker recorded and that outlives its abtest (killed with
// SIGKILL, it could not end it) is ended by the next EndLeftovers of the
// file, its whole process group; one that exited is forgotten; a pid the
// file names that now belongs to another process is left alone.
func TestEndLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "processes.json")
	r := &Runner{Track: NewTracker(path)}
	ctx := context.Background()
	// A shell that ignores SIGTERM, with a child in its group.
	stubborn, err := r.Start(ctx, Cmd{Path: "/bin/sh", Args: []string{"-c", "trap '' TERM; sleep 60 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stubborn.cmd.Process.Kill() })
	if err := r.Run(ctx, Cmd{Path: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	pid := stubborn.cmd.Process.Pid
	var listed []Tracked
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &listed); err != nil || len(listed) != 1 || listed[0].PID != pid || listed[0].Path != "/bin/sh" {
		t.Fatalf("%s lists %+v (%v), want only the running sh, pid %d", path, listed, err, pid)
	}
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c := procfs.Children(pid); len(c) > 0 {
			child = c[0]
		}
	}
	if child == 0 {
		t.Fatal("the shell started no child")
	}
	// The same file with a recycled pid: this test's own, with another
	// start time.
	// The list as a killed abtest leaves it (this test's tracker still
	// writes its own file as its commands end).
	self := Tracked{PID: os.Getpid(), StartTicks: 1, Path: os.Args[0]}
	data, _ = json.Marshal(append(listed, self))
	path = filepath.Join(dir, "left.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	ended, err := EndLeftovers(path, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) != 1 || ended[0].PID != pid {
		t.Errorf("ended %+v, want the shell pid %d only", ended, pid)
	}
	stubborn.Wait()
	if procfs.Alive(child) {
		t.Errorf("its child %d in the same group survived", child)
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("ended in %v: SIGTERM, which it ignores, cannot have ended it", el)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s left after it was acted on: %v", path, err)
	}
	if ended, err := EndLeftovers(path, time.Second); err != nil || len(ended) != 0 {
		t.Errorf("no file: ended %v, %v", ended, err)
	}
}
