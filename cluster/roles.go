package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/safefile"
)

// Roles. A cluster is the user's (NAME, which `abtest switch NAME`
// manages and a user may have started with their own settings) or a
// matrix's own (ForBuild: m-BUILD), which a matrix configures cell by
// cell and stops at the end of its run. A matrix never starts, stops or
// reconfigures the user's cluster of the same name.

// MatrixPrefix names the matrix's own clusters: a matrix measures build
// NAME on cluster m-NAME, never on the cluster NAME a user started with
// `switch`. The name depends only on the build, so a resume and the
// arms of an A/A run (one build) use the same cluster, and a later run
// reuses its data directory.
const MatrixPrefix = "m-"

// ForBuild is the matrix's cluster of build name.
func ForBuild(build string) string {
	name := MatrixPrefix + build
	if len(name) <= 64 {
		return name
	}
	// Names are at most 64 characters: keep a readable head and make the
	// rest unique.
	sum := sha256.Sum256([]byte(build))
	return name[:64-13] + "-" + hex.EncodeToString(sum[:])[:12]
}

// LogFile is the server log of cluster name (pg_ctl -l).
func (m *Manager) LogFile(name string) string {
	return filepath.Join(m.Root, name, logFile)
}

// CopyLogSince copies the lines of server log src written since start
// (log_line_prefix begins with %m, the time) to dst, when src is
// readable (a local abtest cluster's server.log): what a measurement
// keeps beside its results.
func CopyLogSince(src, dst string, start time.Time) bool {
	data, err := os.ReadFile(src)
	if err != nil {
		return false
	}
	stamp := start.Add(-time.Second).Format("2006-01-02 15:04:05")
	lines := strings.Split(string(data), "\n")
	from := len(lines)
	for i, l := range lines {
		if len(l) >= 19 && l[:19] >= stamp {
			from = i
			break
		}
	}
	return safefile.WriteFile(dst, []byte(strings.Join(lines[from:], "\n")), 0o644) == nil
}

// Quiesce runs fn in a quiet period of cluster name: on its data
// directory, configured by opts and stopped, while nobody else can
// start, stop or recreate it. Instruction counts (valgrind) start their
// own servers on the stopped data directory this way.
//
// In order: the cluster is held (Acquire) first, so that no other
// process starts or reconfigures it in between; it is started with opts
// (Start: initdb on first use, opts' settings written into its
// configuration, the benchmark database made), so that the data
// directory is what a timed cell with opts would measure; stopped; fn
// runs with the state of that start; the hold is released.
//
// The cluster is left stopped, whether or not it ran before: the next
// Start brings it back (a matrix's next timed cell, `abtest switch`).
// stopped reports whether a server that ran when Quiesce began is
// stopped now, for the caller to say so. In a dry run the commands are
// printed and fn runs with the state Start would write.
func (m *Manager) Quiesce(ctx context.Context, name string, opts Options, fn func(st *State) error) (stopped bool, err error) {
	release, err := m.Acquire(ctx, name)
	if err != nil {
		return false, err
	}
	defer release()
	dir, _ := m.DataDir(name) // Acquire checked the name
	_, ran := PID(dir)
	err = m.quiesce(ctx, name, dir, opts, fn)
	_, runs := PID(dir)
	return ran && (m.Run.DryRun || !runs), err
}

// quiesce is Quiesce once the cluster is held.
func (m *Manager) quiesce(ctx context.Context, name, dir string, opts Options, fn func(st *State) error) error {
	st, err := m.Start(ctx, name, opts)
	if err != nil {
		return err
	}
	if m.Run.DryRun && !m.Exists(name) {
		// Start only printed the initdb: there is nothing Stop could find.
		m.Run.Note("stop cluster %s (pg_ctl stop -D %s -m fast)", name, dir)
	} else if _, err := m.stop(ctx, name, false, true); err != nil {
		return fmt.Errorf("stopping cluster %s for a quiet period: %w", name, err)
	}
	// fn's server uses the socket directory; once it is gone, the
	// cluster is stopped and needs none.
	defer m.dropSocketDir(name, dir)
	return fn(st)
}
