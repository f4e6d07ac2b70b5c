package cluster

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
)

// TestHelperHold is not a test: run by TestAcquire as another process, it
// holds cluster $ABTEST_HOLD_NAME under $ABTEST_HOLD_ROOT until its stdin
// closes (or it is killed).
func TestHelperHold(t *testing.T) {
	t.Parallel()
	root, name := os.Getenv("ABTEST_HOLD_ROOT"), os.Getenv("ABTEST_HOLD_NAME")
	if root == "" {
		t.Skip("helper process of TestAcquire")
	}
	m := &Manager{Root: root, Run: &proc.Runner{}}
	release, err := m.Acquire(context.Background(), name)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		return
	}
	defer release()
	os.Stdout.WriteString("held\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// holder runs TestHelperHold in another process and waits until it holds
// name.
func holder(t *testing.T, m *Manager, name string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$")
	cmd.Env = append(os.Environ(), "ABTEST_HOLD_ROOT="+m.Root, "ABTEST_HOLD_NAME="+name)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("helper: %q", line)
	}
	return cmd
}

// TestAcquire: while another process holds a cluster for a measurement,
// Stop fails naming it, a second Acquire fails, a restarting Start fails
// and leaves the server alone; ForceStop stops it, and then a Start
// and a Remove fail (a quiet period); a holder that dies
// leaves a lock that is taken over with a note.
func TestAcquire(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	st := start(t, m, "h", Options{Install: install})
	pid, _ := PID(st.DataDir)
	h := holder(t, m, "h")
	hp := strconv.Itoa(h.Process.Pid)

	stopped, err := m.Stop(ctx, "h")
	if !errors.Is(err, ErrBusy) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "busy (held by pid "+hp) || !strings.Contains(err.Error(), "--force") || stopped {
		t.Errorf("Stop while held = %v, %v; want busy naming pid %s and --force", stopped, err, hp)
	}
	if _, err := m.Acquire(ctx, "h"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid "+hp) {
		t.Errorf("second Acquire = %v", err)
	}
	if _, err := m.Start(ctx, "h", Options{Install: install, Settings: []Setting{{"work_mem", "9MB"}}}); !errors.Is(err, ErrBusy) {
		t.Errorf("restarting Start while held = %v, want ErrBusy", err)
	}
	if p, ok := PID(st.DataDir); !ok || p != pid {
		t.Fatalf("the held server changed: pid %d -> %d (running %v)", pid, p, ok)
	}
	// A Start that changes nothing does not disturb the holder.
	if again, err := m.Start(ctx, "h", Options{Install: install}); err != nil || again.Action != Unchanged {
		t.Errorf("unchanged Start while held = %v", err)
	}
	if stopped, err := m.ForceStop(ctx, "h"); err != nil || !stopped {
		t.Errorf("ForceStop = %v, %v", stopped, err)
	}
	// Held and stopped is a quiet period (Quiesce): no start.
	if _, err := m.Start(ctx, "h", Options{Install: install}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "wait for it to finish") || strings.Contains(err.Error(), "use --force") {
		t.Errorf("Start of a held, stopped cluster = %v, want ErrBusy", err)
	}
	if _, running := PID(st.DataDir); running {
		t.Error("a held, stopped cluster was started")
	}
	if err := m.Remove(ctx, "h"); !errors.Is(err, ErrBusy) || !m.Exists("h") {
		t.Errorf("Remove of a held cluster = %v (data directory kept: %v), want ErrBusy", err, m.Exists("h"))
	}

	// The holder dies without releasing.
	h.Process.Kill()
	h.Wait()
	var log strings.Builder
	m.Log = &log
	release, err := m.Acquire(ctx, "h")
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	if !strings.Contains(log.String(), "taking over the measurement lock of pid "+hp) {
		t.Errorf("no note about the dead holder in %q", log.String())
	}
	// Our own hold does not stop our own Stop.
	start(t, m, "h", Options{Install: install})
	if stopped, err := m.Stop(ctx, "h"); err != nil || !stopped {
		t.Errorf("Stop by the holder itself = %v, %v", stopped, err)
	}
	release()
}
