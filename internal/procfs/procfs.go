// Package procfs reads what abtest needs from Linux's /proc, in one place:
// a process's stat line (command name, state, parent, CPU times, start
// time), its children, working directory, executable and command line.
//
// /proc/PID/stat is "pid (comm) state ppid …": comm may hold spaces and
// parentheses, so fields are counted from the last ')'.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ClockTicks is USER_HZ, the unit of the CPU and start times in
// /proc/PID/stat. The kernel fixes it at 100 for user space on every
// architecture Go supports on Linux (sysconf(_SC_CLK_TCK) returns it), so
// it is a constant rather than a cgo call.
const ClockTicks = 100

// Root is where proc is mounted; tests of parsing do not need to change
// it.
const Root = "/proc"

// ErrFormat: a /proc file did not have the expected shape.
var ErrFormat = errors.New("procfs: unexpected format")

// Stat is the part of /proc/PID/stat abtest reads. Times are in clock
// ticks (ClockTicks per second).
type Stat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	// UTime and STime are the process's own user and system time;
	// CUTime and CSTime are those of its reaped children (an exited
	// backend's time lands in the postmaster's).
	UTime, STime, CUTime, CSTime int64
	// StartTicks is the start time in ticks after boot.
	StartTicks int64
}

// Alive reports whether the process runs: a zombie (exited, not yet
// reaped, as under a container init that does not reap) does not.
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' }

// CPUTicks is utime+stime, plus cutime+cstime with children.
func (s Stat) CPUTicks(children bool) int64 {
	n := s.UTime + s.STime
	if children {
		n += s.CUTime + s.CSTime
	}
	return n
}

// ParseStat parses the contents of /proc/PID/stat.
func ParseStat(data []byte) (Stat, error) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 1 || end < open {
		return Stat{}, fmt.Errorf("%w: stat %q", ErrFormat, truncate(data))
	}
	var s Stat
	var err error
	if s.PID, err = strconv.Atoi(strings.TrimSpace(string(data[:open]))); err != nil {
		return Stat{}, fmt.Errorf("%w: stat pid: %v", ErrFormat, err)
	}
	s.Comm = string(data[open+1 : end])
	// After ")": state(0) ppid(1) pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime(11) stime(12) cutime(13) cstime(14)
	// priority nice threads itrealvalue starttime(19) …
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: stat of %d has %d fields", ErrFormat, s.PID, len(f))
	}
	s.State = f[0][0]
	ints := []struct {
		i   int
		dst *int64
	}{{11, &s.UTime}, {12, &s.STime}, {13, &s.CUTime}, {14, &s.CSTime}, {19, &s.StartTicks}}
	for _, x := range ints {
		if *x.dst, err = strconv.ParseInt(f[x.i], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("%w: stat of %d field %d: %v", ErrFormat, s.PID, x.i, err)
		}
	}
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("%w: stat of %d ppid: %v", ErrFormat, s.PID, err)
	}
	return s, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func pidPath(pid int, name string) string {
	return filepath.Join(Root, strconv.Itoa(pid), name)
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile(pidPath(pid, "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(data)
}

// Alive reports whether process pid exists and is not a zombie.
func Alive(pid int) bool {
	s, err := ReadStat(pid)
	return err == nil && s.Alive()
}

// Children returns the live processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	for _, s := range childStats(pid) {
		if s.Alive() {
			out = append(out, s.PID)
		}
	}
	return out
}

// childStats is the stat of each child of pid, zombies included. The
// kernel lists a process's children per thread (/proc/PID/task/TID/
// children), so they are read without the stat of every process on
// the host: a walk of /proc cost abtest 5–10 ms a reading with about a
// hundred processes, twice a cell (issue 27). Where the kernel lacks
// those files (CONFIG_PROC_CHILDREN) it walks /proc. Either way it is a
// snapshot: a child forked or reaped while it reads may be missed.
func childStats(pid int) []Stat {
	tasks, err := os.ReadDir(pidPath(pid, "task"))
	if err != nil {
		return nil
	}
	var out []Stat
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(Root, strconv.Itoa(pid), "task", t.Name(), "children"))
		if errors.Is(err, fs.ErrNotExist) && len(out) == 0 {
			return walkChildren(pid)
		}
		for _, f := range strings.Fields(string(data)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if s, err := ReadStat(child); err == nil && s.PPID == pid {
				out = append(out, s)
			}
		}
	}
	return out
}

// walkChildren is childStats by reading every process's stat.
func walkChildren(pid int) []Stat {
	var out []Stat
	for _, s := range All() {
		if s.PPID == pid {
			out = append(out, s)
		}
	}
	return out
}

// All returns the stat of every process visible now. Processes that exit
// while it reads are left out.
func All() []Stat {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil
	}
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// TreeTicks is the CPU time of pid and of its children, each with its own
// reaped children: for a postmaster, every backend that lives or lived.
func TreeTicks(pid int) (int64, bool) {
	own, err := ReadStat(pid)
	if err != nil {
		return 0, false
	}
	total := own.CPUTicks(true)
	for _, s := range childStats(pid) {
		total += s.CPUTicks(true)
	}
	return total, true
}

var bootOnce struct {
	sync.Once
	t   time.Time
	err error
}

// BootTime is the btime line of /proc/stat, read once.
func BootTime() (time.Time, error) {
	bootOnce.Do(func() {
		data, err := os.ReadFile(filepath.Join(Root, "stat"))
		if err != nil {
			bootOnce.err = err
			return
		}
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "btime "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					bootOnce.err = fmt.Errorf("%w: btime %q", ErrFormat, v)
					return
				}
				bootOnce.t = time.Unix(n, 0)
				return
			}
		}
		bootOnce.err = fmt.Errorf("%w: no btime in %s/stat", ErrFormat, Root)
	})
	return bootOnce.t, bootOnce.err
}

// StartTime is when pid started, to within a second (btime is in whole
// seconds).
func StartTime(pid int) (time.Time, error) {
	s, err := ReadStat(pid)
	if err != nil {
		return time.Time{}, err
	}
	boot, err := BootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(s.StartTicks) * time.Second / ClockTicks), nil
}

// Cwd is pid's working directory. Reading another user's needs the right
// to ptrace it (root, or the same user).
func Cwd(pid int) (string, error) {
	return os.Readlink(pidPath(pid, "cwd"))
}

// Exe is the path of pid's executable; it ends in " (deleted)" when the
// file was removed or replaced since the process started it.
func Exe(pid int) (string, error) {
	return os.Readlink(pidPath(pid, "exe"))
}

// Cmdline is pid's argument vector (empty for a kernel thread).
func Cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(pidPath(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\x00")
	if len(data) == 0 {
		return nil, nil
	}
	return strings.Split(string(data), "\x00"), nil
}

// RunTime is the CPU time pid's main thread has run, from the first
// field of /proc/PID/schedstat: nanoseconds the scheduler counted, exact,
// where utime and stime are sampled in ticks of 10 ms. A single-threaded
// process (a PostgreSQL backend) is its main thread.
func RunTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(pidPath(pid, "schedstat"))
	if err != nil {
		return 0, err
	}
	return ParseSchedstat(data)
}

// ParseSchedstat parses the contents of /proc/PID/schedstat: "run_ns
// wait_ns timeslices".
func ParseSchedstat(data []byte) (time.Duration, error) {
	f := strings.Fields(string(data))
	if len(f) < 1 {
		return 0, fmt.Errorf("%w: schedstat %q", ErrFormat, truncate(data))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: schedstat %q: %v", ErrFormat, truncate(data), err)
	}
	return time.Duration(ns), nil
}

// SelfCPU is the CPU time of this process, every thread included (user
// and system, getrusage RUSAGE_SELF; the kernel splits the exact run time
// between the two, so their sum is exact to the microsecond).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
