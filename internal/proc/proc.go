// Package proc is the one way abtest runs an external program (git, meson,
// ninja, initdb, pg_ctl, pgbench, perf) and the one way it changes files.
//
// Every command runs in its own process group, so that cancelling its
// context can stop the whole tree it spawned: SIGINT first (what a user's
// ^C would send, letting pgbench print its summary and make flush its
// output), SIGKILL to the group after KillDelay. Output goes to a log file;
// the last lines of stderr are kept for the error, so that a failure reads
// `meson setup: exit status 1: ERROR: … (log: …/build.log)`.
//
// A Runner in dry-run mode runs nothing that changes anything: it prints
// each command as a line a shell can replay, and each file it would write
// or remove, to its Trace writer. Because the real run and the dry run go
// through the same calls, `-n` cannot drift from what abtest does.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// DefaultKillDelay is how long a cancelled command gets between SIGINT and
// SIGKILL.
const DefaultKillDelay = 10 * time.Second

// tailLines is how many lines of stderr an Error keeps.
const tailLines = 20

// Runner runs commands and changes files, or in dry-run mode prints what it
// would do. The zero value runs commands and traces nothing.
type Runner struct {
	// DryRun prints commands and file changes to Trace instead of doing
	// them. Commands marked ReadOnly still run.
	DryRun bool
	// Trace receives one shell-replayable line per command in dry-run mode.
	Trace io.Writer
	// KillDelay is the time between SIGINT and SIGKILL on cancellation;
	// zero means DefaultKillDelay.
	KillDelay time.Duration
	// Environ is the environment every command starts from (KEY=VALUE
	// entries), with Cmd.Env and Cmd.Unset applied on top; nil means the
	// calling process's. The CLI passes its injected environment here,
	// so a test that runs abtest in-process decides what children see.
	Environ []string
	// Track, when set, records every command started until it exits, so
	// that an abtest killed with SIGKILL leaves a list of what it left
	// running (EndLeftovers).
	Track *Tracker
	// Unprivileged is the account a command runs as when abtest is root
	// and the program is not root's alone (safefile.MayExec): the
	// postgres and pg_config of an install the build or server account
	// can write, asked for a version or a directory. Nil refuses such a
	// command. Root never executes what another account can write.
	Unprivileged *User
}

// User is an unprivileged account to run a command as (used when abtest
// runs as root, because PostgreSQL refuses to).
type User struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32
}

// LookupUser returns the account named name.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	r := &User{Name: name, UID: uint32(uid), GID: uint32(gid)}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				r.Groups = append(r.Groups, uint32(n))
			}
		}
	}
	return r, nil
}

// Cmd describes one command.
type Cmd struct {
	// Path is the program, a name looked up in PATH or a path.
	Path string
	Args []string
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env holds KEY=VALUE entries that are added to, or replace entries
	// of, the caller's environment.
	Env []string
	// Unset names variables removed from the environment.
	Unset []string
	// Log, when set, is a file that receives stdout and stderr (appended,
	// after a header line naming the command).
	Log string
	// Stdout, when set, also receives the command's standard output, e.g.
	// a parser of pgbench's progress lines.
	Stdout io.Writer
	// Stderr, when set, also receives the command's standard error, e.g.
	// a parser of pgbench's -P progress lines.
	Stderr io.Writer
	// User, when set, runs the command with that account's credentials.
	User *User
	// ReadOnly marks a command that changes nothing: it runs in dry-run
	// mode too, since later decisions depend on its output.
	ReadOnly bool
	// CPUs, when set, pins the command to these CPUs from its first
	// instruction on; everything it forks inherits the mask.
	CPUs []int
}

// String returns the command as a shell-replayable line.
func (c *Cmd) String() string {
	var b strings.Builder
	if c.Dir != "" {
		b.WriteString("cd ")
		b.WriteString(Quote(c.Dir))
		b.WriteString(" && ")
	}
	if len(c.CPUs) > 0 {
		b.WriteString("taskset -c ")
		b.WriteString(CPUList(c.CPUs))
		b.WriteString(" ")
	}
	if c.User != nil {
		b.WriteString("runuser -u ")
		b.WriteString(Quote(c.User.Name))
		b.WriteString(" -- ")
		if len(c.Env) > 0 && len(c.Unset) == 0 {
			b.WriteString("env ")
		}
	}
	if len(c.Unset) > 0 {
		b.WriteString("env")
		for _, k := range c.Unset {
			b.WriteString(" -u ")
			b.WriteString(k)
		}
		b.WriteString(" ")
	}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		b.WriteString(k)
		b.WriteString("=")
		b.WriteString(Quote(v))
		b.WriteString(" ")
	}
	b.WriteString(Quote(c.Path))
	for _, a := range c.Args {
		b.WriteString(" ")
		b.WriteString(Quote(a))
	}
	return b.String()
}

// name is the short name used in errors: the program and, for tools with
// subcommands (git worktree, meson setup), the first argument.
func (c *Cmd) name() string {
	n := filepath.Base(c.Path)
	if len(c.Args) > 0 && !strings.HasPrefix(c.Args[0], "-") && !strings.ContainsAny(c.Args[0], "/=") {
		switch n {
		case "git", "meson", "pg_ctl", "perf", "make":
			return n + " " + c.Args[0]
		}
	}
	return n
}

// Quote returns s quoted for a POSIX shell, unchanged when it needs no
// quoting.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Error is a command that failed to start or exited unsuccessfully.
type Error struct {
	// Cmd is the command's short name, e.g. "git worktree".
	Cmd string
	// ExitCode is the exit status, or -1 when it did not exit normally.
	ExitCode int
	// Tail holds the last lines of its standard error.
	Tail []string
	// Log is the log file with its whole output, if any.
	Log string
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Cmd)
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if n := len(e.Tail); n > 0 {
		b.WriteString(": ")
		b.WriteString(e.Tail[n-1])
	}
	if e.Log != "" {
		b.WriteString(" (log: ")
		b.WriteString(e.Log)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs c to completion.
func (r *Runner) Run(ctx context.Context, c Cmd) error {
	_, err := r.run(ctx, c, false)
	return err
}

// Output runs c and returns its standard output. In dry-run mode a command
// that is not ReadOnly is printed and returns "".
func (r *Runner) Output(ctx context.Context, c Cmd) (string, error) {
	out, err := r.run(ctx, c, true)
	return string(out), err
}

func (r *Runner) run(ctx context.Context, c Cmd, capture bool) ([]byte, error) {
	if r.DryRun && !c.ReadOnly {
		r.tracef("%s", c.String())
		return nil, nil
	}
	var out bytes.Buffer
	p, err := r.start(ctx, c, &out, capture)
	if err != nil {
		return nil, err
	}
	err = p.Wait()
	return out.Bytes(), err
}

// Process is a started command.
type Process struct {
	cmd  *exec.Cmd
	c    Cmd
	tail *tailBuffer
	log  *os.File
	ctx  context.Context
	done chan struct{}
	err  error
}

// Start starts c and returns without waiting for it. In dry-run mode it
// prints c and returns a Process whose Wait returns nil at once.
func (r *Runner) Start(ctx context.Context, c Cmd) (*Process, error) {
	if r.DryRun && !c.ReadOnly {
		r.tracef("%s", c.String())
		p := &Process{c: c, done: make(chan struct{})}
		close(p.done)
		return p, nil
	}
	return r.start(ctx, c, nil, false)
}

func (r *Runner) start(ctx context.Context, c Cmd, out *bytes.Buffer, capture bool) (*Process, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	if r.Environ != nil {
		cmd.Env = mergeEnv(r.Environ, c.Env, c.Unset)
	} else if len(c.Env) > 0 || len(c.Unset) > 0 {
		cmd.Env = mergeEnv(os.Environ(), c.Env, c.Unset)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.User != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.User.UID, Gid: c.User.GID, Groups: c.User.Groups}
	}
	delay := r.KillDelay
	if delay <= 0 {
		delay = DefaultKillDelay
	}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		time.AfterFunc(delay, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return nil
	}
	cmd.WaitDelay = delay + time.Second

	if err := r.dropPrivileges(cmd, &c); err != nil {
		return nil, err
	}

	p := &Process{cmd: cmd, c: c, tail: &tailBuffer{max: tailLines}, ctx: ctx, done: make(chan struct{})}
	var stdout, stderr []io.Writer
	stderr = append(stderr, p.tail)
	if c.Log != "" {
		f, err := openLog(c.Log)
		if err != nil {
			return nil, &Error{Cmd: c.name(), ExitCode: -1, Err: err}
		}
		fmt.Fprintf(f, "# %s $ %s\n", time.Now().Format(time.RFC3339), c.String())
		p.log = f
		lw := &lockedWriter{w: f}
		if !capture {
			stdout = append(stdout, lw)
		}
		stderr = append(stderr, lw)
	}
	if capture && out != nil {
		stdout = append(stdout, out)
	}
	if c.Stdout != nil {
		stdout = append(stdout, c.Stdout)
	}
	if c.Stderr != nil {
		stderr = append(stderr, c.Stderr)
	}
	cmd.Stdout = io.MultiWriter(stdout...)
	cmd.Stderr = io.MultiWriter(stderr...)
	if err := startPinned(cmd, c.CPUs); err != nil {
		p.closeLog()
		return nil, &Error{Cmd: c.name(), ExitCode: -1, Err: err, Log: c.Log}
	}
	tr := r.Track
	if tr != nil {
		tr.started(cmd.Process.Pid, cmd.Args[0])
	}
	go func() {
		err := cmd.Wait()
		if tr != nil {
			tr.exited(cmd.Process.Pid)
		}
		p.closeLog()
		p.err = p.wrap(err)
		close(p.done)
	}()
	return p, nil
}

// startPinned starts cmd with the CPU affinity cpus. Linux keeps the mask
// per thread and a forked child inherits its thread's: so the goroutine is
// locked to its thread, the thread's mask narrowed, the child forked, and
// the mask restored. No helper binary (taskset) and no window in which the
// child runs unpinned.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("reading CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning to CPUs %s: %w", CPUList(cpus), err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restoring CPU affinity: %w", rerr)
	}
	return err
}

// CPUList formats CPUs as a list with ranges, as taskset and
// /proc/PID/status write them: "0-3,8".
func CPUList(cpus []int) string {
	s := append([]int(nil), cpus...)
	sort.Ints(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		} else {
			parts = append(parts, strconv.Itoa(s[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func (p *Process) closeLog() {
	if p.log != nil {
		p.log.Close()
	}
}

func (p *Process) wrap(err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Cmd: p.c.name(), ExitCode: -1, Tail: p.tail.lines(), Log: p.c.Log, Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		e.ExitCode = ee.ExitCode()
	}
	if p.ctx.Err() != nil {
		e.Err = fmt.Errorf("interrupted: %w", p.ctx.Err())
	}
	return e
}

// Pid returns the process id, or 0 in dry-run mode.
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Signal sends sig to the process's whole group.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.cmd == nil {
		return nil
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// CPUTime is the exited process's CPU time, user and system, every
// thread included (wait4's rusage: exact to the microsecond); 0 before
// it exited or in dry-run mode.
func (p *Process) CPUTime() time.Duration {
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return 0
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its error.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

func mergeEnv(base, extra, unset []string) []string {
	idx := make(map[string]int, len(base))
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	var env []string
	for _, e := range base {
		k, _, _ := strings.Cut(e, "=")
		if !drop[k] {
			env = append(env, e)
		}
	}
	for i, e := range env {
		k, _, _ := strings.Cut(e, "=")
		idx[k] = i
	}
	for _, e := range extra {
		k, _, _ := strings.Cut(e, "=")
		if i, ok := idx[k]; ok {
			env[i] = e
		} else {
			idx[k] = len(env)
			env = append(env, e)
		}
	}
	return env
}

func (r *Runner) tracef(format string, args ...any) {
	if r.Trace != nil {
		fmt.Fprintf(r.Trace, format+"\n", args...)
	}
}

// Note prints a comment line to the trace in dry-run mode: a decision the
// dry run took that no command shows ("# build lru: fingerprint unchanged").
func (r *Runner) Note(format string, args ...any) {
	if r.DryRun {
		r.tracef("# "+format, args...)
	}
}

// WriteFile writes data to path atomically (a temporary file renamed over
// it), or in dry-run mode prints that it would.
func (r *Runner) WriteFile(path string, data []byte, perm os.FileMode) error {
	return r.WriteFileAs(path, data, perm, nil)
}

// WriteFileAs is WriteFile for a file owned by u (nil: the caller). The
// owner is set on the temporary file's descriptor before the rename, so
// that nothing at path, a symbolic link planted by u included, is ever
// followed by a chown.
func (r *Runner) WriteFileAs(path string, data []byte, perm os.FileMode, u *User) error {
	if r.DryRun {
		r.tracef("# write %s (%d bytes)", Quote(path), len(data))
		return nil
	}
	return writeAtomic(path, data, perm, u)
}

// writeAtomic writes data to a temporary file beside path, with mode
// perm and owner u (nil: the caller), and renames it over path.
func writeAtomic(path string, data []byte, perm os.FileMode, u *User) error {
	var owner *safefile.Owner
	if u != nil {
		owner = &safefile.Owner{UID: int(u.UID), GID: int(u.GID)}
	}
	return safefile.WriteAtomic(path, data, perm, owner)
}

// MkdirAll creates path and its parents, or in dry-run mode prints that it
// would when path does not exist.
func (r *Runner) MkdirAll(path string, perm os.FileMode) error {
	if r.DryRun {
		if _, err := os.Stat(path); err != nil {
			r.tracef("mkdir -p %s", Quote(path))
		}
		return nil
	}
	return safefile.MkdirAll(path, perm)
}

// Rename renames oldpath to newpath, or in dry-run mode prints that it
// would.
func (r *Runner) Rename(oldpath, newpath string) error {
	if r.DryRun {
		r.tracef("mv %s %s", Quote(oldpath), Quote(newpath))
		return nil
	}
	return safefile.Rename(oldpath, newpath)
}

// RemoveAll removes path and everything below it, or in dry-run mode prints
// that it would. Callers check that path is theirs to remove.
func (r *Runner) RemoveAll(path string) error {
	if r.DryRun {
		if _, err := os.Lstat(path); err == nil {
			r.tracef("rm -rf %s", Quote(path))
		}
		return nil
	}
	return os.RemoveAll(path)
}

// tailBuffer keeps the last max lines written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	partial []byte
	ring    []string
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := append(t.partial, b...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		t.push(string(bytes.TrimRight(data[:i], "\r")))
		data = data[i+1:]
	}
	// Bound a line without newline, e.g. a progress bar redrawn with \r.
	if len(data) > 4096 {
		data = data[len(data)-4096:]
	}
	t.partial = append([]byte(nil), data...)
	return len(b), nil
}

func (t *tailBuffer) push(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.ring = append(t.ring, line)
	if len(t.ring) > t.max {
		t.ring = t.ring[len(t.ring)-t.max:]
	}
}

func (t *tailBuffer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.ring...)
	if s := strings.TrimSpace(string(t.partial)); s != "" {
		out = append(out, s)
		if len(out) > t.max {
			out = out[len(out)-t.max:]
		}
	}
	return out
}

// lockedWriter serialises stdout and stderr writes into one log file.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TailFile returns the last n lines of the file at path (a log, typically),
// or nil when it cannot be read.
func TailFile(path string, n int) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// WriteTail prints, when err wraps an *Error with more than one line of
// standard error, those lines under "last lines of CMD:": what a person
// reads first when a tool failed.
func WriteTail(w io.Writer, err error) {
	var pe *Error
	if !errors.As(err, &pe) || len(pe.Tail) < 2 {
		return
	}
	fmt.Fprintf(w, "last lines of %s:\n", pe.Cmd)
	for _, l := range pe.Tail {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// CanEnter reports whether account u can enter dir or, when dir is not
// made yet, its nearest existing ancestor, which it returns: as root,
// builds and servers run as u, and a private parent directory fails them
// late and obscurely ("fork/exec ../configure: permission denied").
func (r *Runner) CanEnter(ctx context.Context, u *User, dir string) (string, bool) {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	c := Cmd{Path: "test", Args: []string{"-x", dir}, User: u, Dir: "/", ReadOnly: true}
	return dir, r.Run(ctx, c) == nil
}

// dropPrivileges applies the rule for what root executes to cmd (c's):
// as root, a program that is not root's alone (safefile.MayExec) runs as
// Unprivileged, or not at all.
func (r *Runner) dropPrivileges(cmd *exec.Cmd, c *Cmd) error {
	if c.User != nil || os.Geteuid() != 0 || cmd.Err != nil {
		return nil
	}
	// A relative program (../configure) is found from the command's
	// directory, as the kernel will.
	path := cmd.Path
	if !filepath.IsAbs(path) {
		var err error
		if path, err = filepath.Abs(filepath.Join(c.Dir, path)); err != nil {
			return err
		}
	}
	err := safefile.MayExec(path)
	if err == nil {
		return nil
	}
	if r.Unprivileged == nil {
		return &Error{Cmd: c.name(), ExitCode: -1, Err: exitcode.BadInput(fmt.Errorf("root does not run it: %w", err))}
	}
	u := r.Unprivileged
	c.User = u
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	return nil
}

// openLog opens a command's log for appending, in a directory made for
// it when missing (safefile.MkdirFor).
func openLog(path string) (*os.File, error) {
	if err := safefile.MkdirFor(path, 0o755); err != nil {
		return nil, err
	}
	return safefile.Append(path, 0o644)
}
