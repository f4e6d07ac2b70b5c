package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// slowInstall copies the test install and puts a script in front of its
// postgres that sleeps delay before a server start (-D without -C), as
// a slow disk or a wrapper would; postgres -C and --version stay quick.
func slowInstall(t *testing.T, delay time.Duration) string {
	t.Helper()
	install := testpg.CopyInstall(t, testenv.PGInstall(t), "")
	// The real binary keeps its name (the process is "postgres") and its
	// depth under the install (Debian's finds share/ and lib/ from it).
	bin := filepath.Join(install, "bin", "postgres")
	real := filepath.Join(install, "realbin", "postgres")
	if err := os.Mkdir(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin, real); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
start=0
for a in "$@"; do
	case "$a" in
	-D) start=1 ;;
	-C|--version|-V|--describe-config|--single) start=0; break ;;
	esac
done
[ $start = 1 ] && sleep %.1f
exec %s "$@"
`, delay.Seconds(), real)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return install
}

// serverProcesses lists the live processes that run an install's
// postgres (the wrapper or the real binary): what a test must leave none
// of.
func serverProcesses(install string) []int {
	var pids []int
	for _, s := range procfs.All() {
		if !s.Alive() {
			continue
		}
		args, err := procfs.Cmdline(s.PID)
		if err == nil && strings.Contains(strings.Join(args, " "), install) {
			pids = append(pids, s.PID)
		}
	}
	return pids
}

func checkNoneLeft(t *testing.T, install string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(serverProcesses(install)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if pids := serverProcesses(install); len(pids) > 0 {
		t.Errorf("processes of %s left running: %v", install, pids)
	}
}

// TestSlowStart: a postgres that needs 1.5 s or 10 s before it writes
// postmaster.pid is waited for, not reported dead: the start succeeds,
// the state records it, List shows it running and Stop stops it.
func TestSlowStart(t *testing.T) {
	t.Parallel()
	for _, delay := range []time.Duration{1500 * time.Millisecond, 10 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			install := slowInstall(t, delay)
			m := testpg.Manager(t)
			t.Cleanup(func() { checkNoneLeft(t, install) })
			ctx := context.Background()
			st, err := m.Start(ctx, "slow", cluster.Options{Install: install})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if _, ok := cluster.PID(st.DataDir); !ok {
				t.Fatal("Start returned, the server does not run")
			}
			infos, err := m.List()
			if err != nil || len(infos) != 1 || !infos[0].Running {
				t.Fatalf("List = %+v, %v; want slow running", infos, err)
			}
			if stopped, err := m.Stop(ctx, "slow"); err != nil || !stopped {
				t.Fatalf("Stop = %v, %v", stopped, err)
			}
			checkNoneLeft(t, install)
		})
	}
}

// TestSlowStartTimeout: a server that is not ready when the start
// timeout passes is stopped (once it can be), not left running.
func TestSlowStartTimeout(t *testing.T) {
	t.Parallel()
	install := slowInstall(t, 5*time.Second)
	m := testpg.Manager(t)
	t.Cleanup(func() { checkNoneLeft(t, install) })
	m.StartTimeout = 2 * time.Second
	_, err := m.Start(context.Background(), "slow", cluster.Options{Install: install})
	if !errors.Is(err, cluster.ErrStart) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("Start = %v, want %v: not ready", err, cluster.ErrStart)
	}
	checkNoneLeft(t, install)
	if infos, _ := m.List(); len(infos) > 0 && infos[0].Running {
		t.Errorf("List after a failed start: %+v", infos)
	}
}

// TestStartExited: a server that truly exits is reported so, in the
// log's words.
func TestStartExited(t *testing.T) {
	t.Parallel()
	install := slowInstall(t, 1500*time.Millisecond)
	m := testpg.Manager(t)
	t.Cleanup(func() { checkNoneLeft(t, install) })
	_, err := m.Start(context.Background(), "x", cluster.Options{Install: install, Settings: []cluster.Setting{{Name: "shared_preload_libraries", Value: "pg_stat_statements,no_such_library"}}})
	if !errors.Is(err, cluster.ErrStart) || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "no_such_library") {
		t.Fatalf("Start = %v, want the server exited: no_such_library", err)
	}
}

// TestSlowStartUnderLoad: a slow postgres (1.5 s before postmaster.pid)
// on a host whose CPUs are all busy twice over still starts, is listed
// and stops; the default start timeout grows with the load.
func TestSlowStartUnderLoad(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		runnable float64
		cpus     int
		want     float64
	}{{0, 2, 1}, {1, 2, 1}, {8, 2, 4}, {100, 2, 5}, {3, 0, 3}} {
		if got := cluster.LoadScale(c.runnable, c.cpus); got != c.want {
			t.Errorf("LoadScale(%v, %d) = %v, want %v", c.runnable, c.cpus, got, c.want)
		}
	}
	install := slowInstall(t, 1500*time.Millisecond)
	m := testpg.Manager(t)
	t.Cleanup(func() { checkNoneLeft(t, install) })
	for range 2 * runtime.NumCPU() {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
	ctx := context.Background()
	if _, err := m.Start(ctx, "slow", cluster.Options{Install: install}); err != nil {
		t.Fatalf("Start under load: %v", err)
	}
	if infos, err := m.List(); err != nil || len(infos) != 1 || !infos[0].Running {
		t.Fatalf("List = %+v, %v; want slow running", infos, err)
	}
	if stopped, err := m.Stop(ctx, "slow"); err != nil || !stopped {
		t.Fatalf("Stop = %v, %v", stopped, err)
	}
}
