package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/proc"
)

// TestStalePIDOfAnotherCluster: a stopped cluster whose postmaster.pid
// names the postmaster of another, running cluster is not running; Stop
// leaves the other cluster alone, List does not report it running, and
// Start takes the stale file over.
func TestStalePIDOfAnotherCluster(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	a := start(t, m, "a", Options{Install: install})
	b := start(t, m, "b", Options{Install: install})
	if _, err := m.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	bpid, ok := PID(b.DataDir)
	if !ok {
		t.Fatal("b is not running")
	}
	// b's own lock file, start time and all, left in a's data directory.
	data, err := os.ReadFile(filepath.Join(b.DataDir, pidFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.DataDir, pidFileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if pid, ok := PID(a.DataDir); ok {
		t.Errorf("PID(a) = %d, running; want not running (the pid is b's)", pid)
	}
	stopped, err := m.Stop(ctx, "a")
	if err != nil || stopped {
		t.Errorf("Stop(a) = %v, %v; want not running, no error", stopped, err)
	}
	if p, ok := PID(b.DataDir); !ok || p != bpid || !Alive(bpid) {
		t.Fatalf("Stop(a) stopped b (pid %d -> %d, running %v)", bpid, p, ok)
	}
	infos, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.Name == "a" && (i.Running || i.PID != 0) {
			t.Errorf("List reports a running with pid %d", i.PID)
		}
	}
	st := start(t, m, "a", Options{Install: install})
	if p, ok := PID(st.DataDir); !ok || p == bpid {
		t.Errorf("a after Start: pid %d running %v", p, ok)
	}
	if p, ok := PID(b.DataDir); !ok || p != bpid {
		t.Errorf("starting a disturbed b (pid %d -> %d)", bpid, p)
	}
}

// TestStalePIDOfOtherProgram: a postmaster.pid whose pid belongs to a live
// process of the server's account that is no postgres is taken over as
// stale; postgres alone would refuse ("lock file already exists").
func TestStalePIDOfOtherProgram(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	st := start(t, m, "s", Options{Install: install})
	if _, err := m.Stop(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	r := &proc.Runner{}
	p, err := r.Start(ctx, proc.Cmd{Path: "sleep", Args: []string{"60"}, User: m.User, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Signal(9); p.Wait() })
	content := strconv.Itoa(p.Pid()) + "\n" + st.DataDir + "\n1700000000\n" + strconv.Itoa(st.Port) + "\n"
	path := filepath.Join(st.DataDir, pidFileName)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if m.User != nil {
		os.Chown(path, int(m.User.UID), int(m.User.GID))
	}
	var log strings.Builder
	m.Log = &log
	st = start(t, m, "s", Options{Install: install})
	if _, ok := PID(st.DataDir); !ok {
		t.Fatal("not running after Start over a stale postmaster.pid")
	}
	if !Alive(p.Pid()) {
		t.Error("the unrelated process was killed")
	}
	if !strings.Contains(log.String(), "stale postmaster.pid: pid "+strconv.Itoa(p.Pid())+` is "sleep"`) {
		t.Errorf("no note about the stale file in %q", log.String())
	}
}

// TestPIDFileHostile: a FIFO or a symbolic link planted as
// postmaster.pid (the server's account owns the data directory) is no
// postmaster, and reading it never blocks root on the FIFO or follows
// the link to a file of another cluster.
func TestPIDFileHostile(t *testing.T) {
	t.Parallel()
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, pidFileName), 0o644); err != nil {
		t.Fatal(err)
	}
	link := t.TempDir()
	other := filepath.Join(t.TempDir(), pidFileName)
	if err := os.WriteFile(other, []byte(strconv.Itoa(os.Getpid())+"\n"+link+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(link, pidFileName)); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{fifo: "not a regular file", link: "is a symbolic link"} {
		name := filepath.Base(dir)
		done := make(chan error, 1)
		go func() { _, err := postmaster(dir); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), pidFileName) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want an error naming %s: %s", name, err, pidFileName, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading the planted postmaster.pid blocked", name)
		}
	}
}
