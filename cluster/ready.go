package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/procfs"
)

// A server is waited for by what it is doing, never by a fixed delay: a
// postgres that needs seconds before it writes postmaster.pid (a slow
// disk, a loaded host, a wrapper such as perf or valgrind) was taken for
// dead after 500 ms, reported as failed and left running unrecorded.
// pg_ctl -w watches its own child (the postmaster: pg_ctl execs it) and
// the status line of postmaster.pid until "ready"; abtest records the
// cluster's state before pg_ctl runs, so whatever happens after, status
// lists the server and stop finds the install to stop it with.

// The status line (the 8th) of postmaster.pid.
const (
	pmStarting = "starting"
	pmReady    = "ready"
	pmStandby  = "standby"
	pmStopping = "stopping"
)

// startTimeout is StartTimeout, or DefaultStartTimeout scaled by the
// host's load: on a host running L tasks on N CPUs a start takes up to
// about L/N times as long, so the default grows with it (LoadScale).
func (m *Manager) startTimeout() time.Duration {
	if m.StartTimeout > 0 {
		return m.StartTimeout
	}
	return time.Duration(float64(DefaultStartTimeout) * LoadScale(host.Runnable("/", 1, 0), runtime.NumCPU()))
}

// LoadScale is how much longer than on an idle host a wait should be
// when runnable tasks compete for cpus: runnable/cpus, at least 1 and
// at most 5 (beyond that a start is not slow but stuck).
func LoadScale(runnable float64, cpus int) float64 {
	return min(5, max(1, runnable/float64(max(1, cpus))))
}

// start launches the postmaster and waits until it is ready and a real
// connection succeeds. On a failure or interruption the server, if it
// runs or is still starting, is stopped; the state is put back as it was
// only once nothing runs, so no server is ever left unrecorded.
func (m *Manager) start(ctx context.Context, st *State) error {
	log := filepath.Join(st.DataDir, logFile)
	timeout := m.startTimeout()
	secs := strconv.Itoa(int(math.Ceil(timeout.Seconds())))
	c := m.cmd(st.Install, "pg_ctl", "start", "-D", st.DataDir, "-l", log, "-w", "-t", secs, "-s")
	c.CPUs = st.CPUs
	if m.Run.DryRun {
		return m.Run.Run(ctx, c)
	}
	st.StartedAt = time.Now().UTC()
	undo, err := m.recordStarting(st)
	if err != nil {
		return exitcode.Failure(fmt.Errorf("%w: %s: recording its state: %v", ErrStart, st.Name, err))
	}
	err = m.Run.Run(ctx, c)
	if err != nil {
		err = m.whyNotStarted(ctx, st, timeout, err)
	} else {
		err = m.waitReady(ctx, st, st.StartedAt.Add(timeout))
	}
	if err == nil && !st.Initialized {
		err = m.initialize(ctx, st)
	}
	if err == nil {
		err = m.inspect(ctx, st)
	}
	if err == nil {
		pid, _ := PID(st.DataDir)
		m.logf("cluster %s: running (pid %d, port %d, socket %s)", st.Name, pid, st.Port, st.SocketDir)
		return nil
	}
	return m.failedStart(ctx, st, err, undo)
}

// recordStarting writes st as the cluster's state before its server
// starts, and returns what puts the previous state back.
func (m *Manager) recordStarting(st *State) (func(), error) {
	path := filepath.Join(st.DataDir, stateFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := m.writeState(st); err != nil {
		return nil, err
	}
	return func() {
		if old == nil {
			_ = m.Run.RemoveAll(path)
		} else {
			_ = m.writeOwned(path, old, 0o600)
		}
	}, nil
}

// whyNotStarted says what a failed pg_ctl start means: the server exited
// (in the log's words) or did not become ready in time.
func (m *Manager) whyNotStarted(ctx context.Context, st *State, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, running := PID(st.DataDir); running || startingProcess(st.DataDir) != 0 {
		return fmt.Errorf("not ready after %s (%v)", timeout, err)
	}
	return fmt.Errorf("the server exited: %s", lastLogLine(filepath.Join(st.DataDir, logFile)))
}

// failedStart stops what runs of a start that failed and returns the
// error to report. The previous state comes back only when nothing runs.
func (m *Manager) failedStart(ctx context.Context, st *State, err error, undo func()) error {
	mode := "immediate"
	if errors.Is(err, ErrSetting) {
		mode = "fast"
	}
	// Even when ctx is cancelled: no half-started server.
	stopCtx, cancel := context.WithTimeout(context.Background(), max(30*time.Second, m.startTimeout()))
	defer cancel()
	if serr := m.stopHalfStarted(stopCtx, st, mode); serr != nil {
		m.logf("cluster %s: %v; it stays recorded: abtest switch %s --stop", st.Name, serr, st.Name)
	} else {
		undo()
	}
	if errors.Is(err, ErrSetting) {
		return exitcode.BadInput(err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return exitcode.Failure(fmt.Errorf("%w: %s: %v (log: %s)", ErrStart, st.Name, err, filepath.Join(st.DataDir, logFile)))
}

// stopHalfStarted stops the server of st, waiting for one still starting
// (no postmaster.pid yet: pg_ctl stop needs the file) to write its pid
// file; nil once nothing of it runs.
func (m *Manager) stopHalfStarted(ctx context.Context, st *State, mode string) error {
	for {
		if _, err := postmaster(st.DataDir); err == nil {
			if err := m.pgctlStop(ctx, st.DataDir, st.Install, mode); err != nil {
				return err
			}
			continue
		}
		pid := startingProcess(st.DataDir)
		if pid == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server process %d is still starting", pid)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startingProcess returns the pid of a server process of dir that has
// not (yet) written postmaster.pid: one named postgres whose command line
// is a server's on dir (-D dir, no -C), or 0.
func startingProcess(dir string) int {
	for _, s := range procfs.All() {
		if s.Comm != "postgres" && s.Comm != "postmaster" || !s.Alive() {
			continue
		}
		args, err := procfs.Cmdline(s.PID)
		if err != nil || slices.Contains(args, "-C") || slices.Contains(args, "--single") {
			continue
		}
		for i, a := range args {
			if a == "-D" && i+1 < len(args) && sameDir(args[i+1], dir) {
				return s.PID
			}
		}
	}
	return 0
}

// pidStatus is the status line of dir's postmaster.pid, "" when it has
// none (before PostgreSQL 10, or not written yet).
func pidStatus(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 8 {
		return ""
	}
	return strings.TrimSpace(lines[7])
}

// waitReady polls until the postmaster says it is ready and a real
// connection succeeds, the postmaster exits or stops, or deadline
// passes (never sooner than a few seconds from now).
func (m *Manager) waitReady(ctx context.Context, st *State, deadline time.Time) error {
	deadline = later(deadline, time.Now().Add(5*time.Second))
	var last error
	for {
		if _, err := postmaster(st.DataDir); err != nil {
			return fmt.Errorf("the server exited: %s", lastLogLine(filepath.Join(st.DataDir, logFile)))
		}
		switch status := pidStatus(st.DataDir); status {
		case pmStopping:
			return fmt.Errorf("the server is shutting down: %s", lastLogLine(filepath.Join(st.DataDir, logFile)))
		case pmStarting:
			last = errors.New("the server is still starting")
		case pmReady, pmStandby, "":
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := pgx.Connect(cctx, st.ConnString("postgres"))
			cancel()
			if err == nil {
				conn.Close(context.Background())
				return nil
			}
			last = err
		default:
			last = fmt.Errorf("postmaster.pid says %q", status)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready by %s: %v", deadline.Format(time.TimeOnly), last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
