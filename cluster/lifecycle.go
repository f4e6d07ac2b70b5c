package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/text"
)

// Action is what Start did.
type Action string

// The actions of Start.
const (
	// Unchanged: the server ran already as asked.
	Unchanged Action = "unchanged"
	// Started: the server was not running.
	Started Action = "started"
	// Restarted: the server ran otherwise than asked (install, build
	// fingerprint, a replaced binary, configuration, CPUs).
	Restarted Action = "restarted"
	// Created: initdb made the data directory, then the server started.
	Created Action = "created"
)

// Binary identifies a file as it was: a rebuild or reinstall replaces
// bin/postgres (new inode, new mtime) even when nothing else tells.
type Binary struct {
	Dev   uint64    `json:"dev,omitempty"`
	Inode uint64    `json:"inode,omitempty"`
	Size  int64     `json:"size,omitempty"`
	MTime time.Time `json:"mtime,omitempty"`
}

func binaryOf(path string) Binary {
	fi, err := os.Stat(path)
	if err != nil {
		return Binary{}
	}
	b := Binary{Size: fi.Size(), MTime: fi.ModTime().UTC()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		b.Dev, b.Inode = st.Dev, st.Ino
	}
	return b
}

// installID is what an install is now: its build record (nil when abtest
// did not build it) and its postgres binary.
type installID struct {
	info        *build.Info
	fingerprint string
	binary      Binary
	postgres    string
}

func (m *Manager) identify(install string) installID {
	id := installID{postgres: filepath.Join(install, "bin", "postgres")}
	if info, err := build.ReadInfo(install); err == nil {
		id.info, id.fingerprint = info, info.Fingerprint
	}
	id.binary = binaryOf(id.postgres)
	return id
}

// needsInitdb reports whether name's data directory must be made (anew):
// there is none, Recreate asks for it, or the install was built from a
// tree of another catalog version, which could not start it.
func (m *Manager) needsInitdb(ctx context.Context, name, dir string, opts Options, id installID) (bool, error) {
	if opts.Recreate || !exists(filepath.Join(dir, "PG_VERSION")) {
		return true, nil
	}
	if id.info == nil || id.info.CatalogVersion == "" {
		return false, nil
	}
	cv, err := m.CatalogVersion(ctx, name, opts.Install)
	if err != nil || cv == id.info.CatalogVersion {
		return false, nil
	}
	m.logf("cluster %s: data directory has catalog version %s, the build in %s %s: it is made anew", name, cv, opts.Install, id.info.CatalogVersion)
	return true, nil
}

// restartReason says why a running server (postmaster pid) is not what
// opts ask for, or "" when it is.
func (m *Manager) restartReason(prev *State, pid int, opts Options, id installID, confChange string) string {
	if prev == nil {
		return "no state recorded for the running server"
	}
	if prev.Install != opts.Install {
		return fmt.Sprintf("install changed (%s -> %s)", prev.Install, opts.Install)
	}
	if prev.Fingerprint != id.fingerprint {
		return fmt.Sprintf("build fingerprint changed (%s -> %s)", fpOrNone(prev.Fingerprint), fpOrNone(id.fingerprint))
	}
	if exe, err := procfs.Exe(pid); err == nil {
		if strings.HasSuffix(exe, " (deleted)") {
			return fmt.Sprintf("its binary was replaced since it started (%s)", exe)
		}
		if want, err := filepath.EvalSymlinks(id.postgres); err == nil && exe != want {
			return fmt.Sprintf("it runs %s, not %s", exe, want)
		}
	}
	if prev.Binary != (Binary{}) && prev.Binary != id.binary {
		return fmt.Sprintf("%s changed since it started", id.postgres)
	}
	if confChange != "" {
		return "configuration changed: " + confChange
	}
	if proc.CPUList(prev.CPUs) != proc.CPUList(opts.CPUs) {
		return fmt.Sprintf("CPUs changed (%s -> %s)", proc.CPUList(prev.CPUs), proc.CPUList(opts.CPUs))
	}
	return ""
}

func fpOrNone(fp string) string {
	if fp == "" {
		return "none"
	}
	return text.Short(fp)
}

// inspect records what the started server really runs (its executable
// and version()) and checks that every line of abtest.conf was applied:
// postgres -C cannot judge the settings of a library (pg_stat_statements.*)
// before the library is loaded, and at load time the server takes the
// default for a bad value, with only a WARNING in its log.
func (m *Manager) inspect(ctx context.Context, st *State) error {
	if pid, ok := PID(st.DataDir); ok {
		st.Exe, _ = procfs.Exe(pid)
	}
	conn, err := pgx.Connect(ctx, st.ConnString("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&st.ServerVersion); err != nil {
		return err
	}
	var name, value, msg string
	err = conn.QueryRow(ctx, "SELECT name, coalesce(setting, ''), error FROM pg_file_settings WHERE error IS NOT NULL AND sourcefile = $1 ORDER BY seqno LIMIT 1",
		filepath.Join(st.DataDir, ConfFile)).Scan(&name, &value, &msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ErrSetting, settingWarning(filepath.Join(st.DataDir, logFile), name, value, msg))
}

// settingWarning is the server log's own words about parameter name, or
// pg_file_settings' error when the log has none.
func settingWarning(log, name, value, msg string) string {
	lines := proc.TailFile(log, 200)
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"`+name+`"`) && (strings.Contains(lines[i], "WARNING") || strings.Contains(lines[i], "LOG") || strings.Contains(lines[i], "ERROR")) {
			return stripLogPrefix(lines[i])
		}
	}
	return fmt.Sprintf("%s = %q: %s", name, value, msg)
}

// Identity is what the running server of a cluster executes, read now:
// for a measurement to record beside its results.
type Identity struct {
	PID int `json:"pid"`
	// Exe is /proc/PID/exe; Replaced is set when it reads "(deleted)":
	// the binary was installed over while the server ran.
	Exe      string `json:"exe"`
	Replaced bool   `json:"replaced"`
	// Fingerprint is the build fingerprint the server was started from.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Version is SELECT version() as it answered at start.
	Version string `json:"version"`
}

// ErrNotRunning: the cluster has no running server.
var ErrNotRunning = errors.New("cluster: not running")

// Identify returns what the running server of name executes now.
func (m *Manager) Identify(name string) (*Identity, error) {
	st, err := m.ReadState(name)
	if err != nil {
		return nil, err
	}
	pid, ok := PID(st.DataDir)
	if !ok {
		return nil, exitcode.Failure(fmt.Errorf("%w: %s", ErrNotRunning, name))
	}
	exe, err := procfs.Exe(pid)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("cluster %s: reading the executable of pid %d: %w", name, pid, err))
	}
	return &Identity{PID: pid, Exe: exe, Replaced: strings.HasSuffix(exe, " (deleted)"), Fingerprint: st.Fingerprint, Version: st.ServerVersion}, nil
}

// confDiff is the first line of abtest.conf that differs between old and
// new ("shared_buffers = '6026MB' -> '6020MB'"), "" when they are equal:
// why a server restarts, in its own words.
func confDiff(old, new string) string {
	if old == new {
		return ""
	}
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	for i := range max(len(o), len(n)) {
		var a, b string
		if i < len(o) {
			a = o[i]
		}
		if i < len(n) {
			b = n[i]
		}
		if a != b {
			return fmt.Sprintf("%q -> %q", a, b)
		}
	}
	return ""
}
