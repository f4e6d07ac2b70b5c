package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/procfs"
)

// pidFileName is the postmaster's lock file in the data directory. Its
// lines are: pid, data directory, start time (Unix seconds), port, socket
// directory, listen address, shared memory key, status.
const pidFileName = "postmaster.pid"

// startSlack is how far the postmaster's own record of its start time
// (taken early in PostmasterMain) may lie from the kernel's (the fork by
// pg_ctl). On an idle machine both are a second apart at most; but a
// loaded host, or a wrapper that runs before it execs postgres (perf,
// valgrind, a script), puts seconds between them, and a server taken
// for stale would be neither waited for nor stopped. A reused pid would
// also have to be a postgres working in this data directory to pass.
const startSlack = 2 * time.Minute

// errNoPIDFile: the data directory has no postmaster.pid (not running).
var errNoPIDFile = errors.New("no " + pidFileName)

// staleError says why a postmaster.pid does not name this cluster's
// postmaster.
type staleError struct {
	pid    int
	reason string
}

func (e *staleError) Error() string {
	return fmt.Sprintf("stale %s: pid %d %s", pidFileName, e.pid, e.reason)
}

// postmaster returns the pid of the postmaster running the data directory
// dir. A pid is trusted only when the process is alive, is a postgres,
// works in dir (its cwd, or the -D of its command line when the cwd
// cannot be read) and started when postmaster.pid says it did: a stale
// file's pid may since belong to any process, another cluster's
// postmaster included. The error is errNoPIDFile, a *staleError, or the
// failure to read the file.
func postmaster(dir string) (int, error) {
	data, err := readPIDFile(filepath.Join(dir, pidFileName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, errNoPIDFile
	}
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0, &staleError{pid: pid, reason: fmt.Sprintf("is not a process id (%q)", lines[0])}
	}
	st, err := procfs.ReadStat(pid)
	if err != nil || !st.Alive() {
		return 0, &staleError{pid: pid, reason: "is not running"}
	}
	if st.Comm != "postgres" && st.Comm != "postmaster" {
		return 0, &staleError{pid: pid, reason: fmt.Sprintf("is %q, not a postgres", st.Comm)}
	}
	if pd, ok := processDataDir(pid); !ok {
		return 0, &staleError{pid: pid, reason: "is a postgres whose data directory cannot be read"}
	} else if !sameDir(pd, dir) {
		return 0, &staleError{pid: pid, reason: "is the postmaster of " + pd}
	}
	if len(lines) > 2 {
		rec, err := strconv.ParseInt(strings.TrimSpace(lines[2]), 10, 64)
		started, serr := procfs.StartTime(pid)
		if err == nil && serr == nil {
			if d := started.Sub(time.Unix(rec, 0)); d > startSlack || d < -startSlack {
				return 0, &staleError{pid: pid, reason: fmt.Sprintf("started at %s, not at %s", started.Format(time.RFC3339), time.Unix(rec, 0).Format(time.RFC3339))}
			}
		}
	}
	return pid, nil
}

// processDataDir is where postgres pid works: its cwd (the postmaster
// changes into its data directory), or the -D of its command line when
// the cwd is not readable (another user's process, without root).
func processDataDir(pid int) (string, bool) {
	if cwd, err := procfs.Cwd(pid); err == nil {
		return cwd, true
	}
	args, err := procfs.Cmdline(pid)
	if err != nil {
		return "", false
	}
	for i, a := range args {
		if a == "-D" && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "-D"); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// sameDir reports whether a and b are one directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// PID returns the postmaster's pid when the cluster in dir is running;
// see postmaster for when a pid counts as this cluster's.
func PID(dir string) (int, bool) {
	pid, err := postmaster(dir)
	return pid, err == nil
}

// Alive reports whether process pid runs (a zombie does not).
func Alive(pid int) bool { return procfs.Alive(pid) }

// Processes returns the postmaster's pid and its children's: every process
// of a running cluster.
func Processes(dir string) []int {
	pid, ok := PID(dir)
	if !ok {
		return nil
	}
	return append([]int{pid}, procfs.Children(pid)...)
}

// ClientBackends counts the cluster's client backends: those whose
// process title names a connection ("postgres: postgres benchmark
// [local] SELECT"; abtest's clusters listen on a socket only). Counting
// processes against a count taken "before the clients" was wrong when
// the clients had connected first: the wait then ran its 30 s out and
// the window opened after pgbench had ended (0 samples, on a busy host).
func ClientBackends(dataDir string) int {
	n := 0
	for _, p := range Processes(dataDir) {
		if args, err := procfs.Cmdline(p); err == nil && strings.Contains(strings.Join(args, " "), "[local]") {
			n++
		}
	}
	return n
}

// readPIDFile reads a postmaster.pid, which the server's account writes,
// as root may (readChecked): a link or a FIFO planted in its place is
// refused, a regular file read to 4 KiB; its pid is checked against
// /proc after.
func readPIDFile(path string) ([]byte, error) {
	return readChecked(path, 4096, func(fi os.FileInfo) error {
		if !fi.Mode().IsRegular() {
			return untrusted(path, "is not a regular file")
		}
		return nil
	})
}
