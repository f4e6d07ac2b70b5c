package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safefile"
)

// Socket directories. A Unix socket path is limited to 107 bytes and data
// roots (a test's temporary directory) can be long, so each cluster's
// sockets live in a private directory with a short, unpredictable name
// under /tmp (safefile.MkdirTemp: abtest- and ten digits, a name of one
// length for every cluster), which its state records.
//
// A stopped server needs none, and a data root deleted with its clusters
// stopped (every test's) would leave it behind forever: Stop removes it,
// and Start makes it again at the recorded path (an atomic mkdir, then
// the privateDir checks), so that the PGHOST of an env.sh a user sourced
// stays valid; a path someone else took meanwhile is never adopted: the
// cluster gets a new directory and a new env.sh.
//
// Each directory holds a marker (socketMarker) naming the data directory
// of its cluster, so that any abtest, whatever its data root, can tell
// whether the cluster is gone: Orphans lists those whose data directory
// no longer records them, and Prune removes them.

// socketParent holds the clusters' socket directories.
const socketParent = "/tmp"

const (
	socketPrefix = "abtest-"
	// socketMarker, in a socket directory, names the data directory of
	// the cluster it belongs to.
	socketMarker = ".abtest-data-dir"
	// orphanGrace: a socket directory changed this recently is never an
	// orphan: Start makes it a moment before it records it in the state.
	orphanGrace = 5 * time.Minute
)

// sockParent is where m makes socket directories: socketParent, or the
// directory a test of this package sets.
func (m *Manager) sockParent() string {
	if m.socketParent != "" {
		return m.socketParent
	}
	return socketParent
}

// isSocketDir reports whether dir is a path abtest gives socket
// directories: directly under the parent, named abtest-DIGITS (ten now;
// os.MkdirTemp's of older versions have fewer; not the tests' abtest-test-* directories).
func (m *Manager) isSocketDir(dir string) bool {
	digits, ok := strings.CutPrefix(filepath.Base(dir), socketPrefix)
	if !ok || digits == "" || filepath.Dir(dir) != m.sockParent() {
		return false
	}
	_, err := strconv.ParseUint(digits, 10, 64)
	return err == nil
}

// socketDir returns the cluster's private socket directory for data
// directory dataDir: the one its state records, made again when absent,
// when that is still a private directory of the server's account and no
// other cluster's; else a new one with an unpredictable name (mkdtemp),
// so that no local user can plant anything at it in advance.
func (m *Manager) socketDir(name, dataDir string, prev *State) (string, error) {
	if prev != nil && prev.SocketDir != "" {
		err := m.reuseSocketDir(prev.SocketDir, dataDir)
		if err == nil {
			return prev.SocketDir, nil
		}
		m.logf("cluster %s: socket directory %v; making a new one", name, err)
	}
	if m.Run.DryRun {
		dir := filepath.Join(m.sockParent(), "abtest-XXXXXXXX")
		m.Run.Note("mkdir -m 700 %s (a new, unpredictable name)", dir)
		return dir, nil
	}
	dir, err := safefile.MkdirTemp(m.sockParent(), socketPrefix)
	if err != nil {
		return "", err
	}
	err = m.privateDir(dir)
	if err == nil {
		err = m.markSocketDir(dir, dataDir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// reuseSocketDir makes the recorded socket directory dir again, or takes
// the one there when it is the server account's and no other cluster's.
func (m *Manager) reuseSocketDir(dir, dataDir string) error {
	if !m.isSocketDir(dir) {
		return fmt.Errorf("%w: %s is not where abtest makes socket directories", errNotPrivate, dir)
	}
	if err := m.privateDir(dir); err != nil {
		return err
	}
	return m.markSocketDir(dir, dataDir)
}

// markSocketDir writes the marker naming dataDir into dir, unless it
// names it already; a marker naming another data directory is refused.
func (m *Manager) markSocketDir(dir, dataDir string) error {
	if m.Run.DryRun {
		return nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	owner, err := m.readMarker(dir)
	switch {
	case err == nil && owner == abs:
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s is the socket directory of %s", errNotPrivate, dir, owner)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	return m.writeOwned(filepath.Join(dir, socketMarker), []byte(abs+"\n"), 0o600)
}

// readMarker returns the data directory dir's marker names; a missing
// marker is os.ErrNotExist. The marker is read without following a link,
// and only when the server's account (or root) wrote it.
func (m *Manager) readMarker(dir string) (string, error) {
	path := filepath.Join(dir, socketMarker)
	data, err := readChecked(path, 4096, func(fi os.FileInfo) error { return checkTrusted(path, fi, append(m.trustedUIDs(), 0), false) })
	if err != nil {
		return "", err
	}
	owner := string(bytes.TrimSuffix(data, []byte("\n")))
	if !filepath.IsAbs(owner) || filepath.Clean(owner) != owner {
		return "", untrusted(path, "does not name a data directory")
	}
	return owner, nil
}

// ownsSocketDir reports whether fi (Lstat) is a directory abtest may
// remove as a socket directory: not a link, the server account's, or
// root's while abtest is root.
func (m *Manager) ownsSocketDir(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return false
	}
	uid, _ := m.owner()
	return int(st.Uid) == uid || st.Uid == 0 && os.Geteuid() == 0
}

// liveSocketLock reports whether a running process holds a socket of dir:
// the pid of a socket lock file (.s.PGSQL.PORT.lock) is alive.
func liveSocketLock(dir string) bool {
	locks, _ := filepath.Glob(filepath.Join(dir, ".s.PGSQL.*.lock"))
	for _, lock := range locks {
		data, err := os.ReadFile(lock)
		if err != nil {
			return true // unreadable: cannot tell, so in use
		}
		first, _, _ := strings.Cut(string(data), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil {
			return true
		}
		if st, err := procfs.ReadStat(pid); err == nil && st.Alive() {
			return true
		}
	}
	return false
}

// removeSocketDir removes dir, the socket directory of the cluster of
// dataDir, once nothing uses it: only a path abtest gives socket
// directories, still a directory of the server's account (never a link
// or what someone else put at its path since), whose marker, if any,
// names dataDir, holding no socket of a live process.
func (m *Manager) removeSocketDir(dir, dataDir string) error {
	if dir == "" || !m.isSocketDir(dir) {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil || !m.ownsSocketDir(fi) {
		return nil
	}
	abs, _ := filepath.Abs(dataDir)
	if owner, err := m.readMarker(dir); err == nil && owner != abs || err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if liveSocketLock(dir) {
		return nil
	}
	return m.Run.RemoveAll(dir)
}

// dropSocketDir removes the socket directory of cluster name (data
// directory dir) when its server is stopped: a stopped server needs none.
// A failure is logged: the cluster is stopped all the same, and Prune
// finds the directory later.
func (m *Manager) dropSocketDir(name, dir string) {
	if st, err := m.ReadState(name); err == nil {
		m.socketDone(name, st.SocketDir, dir)
	}
}

// socketDone removes sock, the socket directory of cluster name (data
// directory dir), unless a server runs or starts on dir.
func (m *Manager) socketDone(name, sock, dir string) {
	if _, running := PID(dir); running || sock == "" || startingProcess(dir) != 0 {
		return
	}
	if err := m.removeSocketDir(sock, dir); err != nil {
		m.logf("cluster %s: removing its socket directory: %v", name, err)
	}
}

// Orphan is a socket directory whose cluster is gone.
type Orphan struct {
	Dir string `json:"dir"`
	// DataDir is the data directory its marker names; "" for a directory
	// an older abtest made (no marker).
	DataDir string `json:"data_dir,omitempty"`
	// Reason says how abtest knows the cluster is gone.
	Reason string `json:"reason"`
}

// Orphans returns the socket directories whose cluster is gone, of every
// data root. Candidates are directories directly under the parent (/tmp)
// with the names abtest gives them, of the server's account (or root),
// never a link, holding no socket of a live process, and whose marker
// names a data directory that is gone or records another socket
// directory. A directory without marker (an older abtest's) is an orphan
// when it is empty and recorded by no cluster of m's root. A directory
// changed in the last orphanGrace is never one: a starting cluster's.
func (m *Manager) Orphans() ([]Orphan, error) {
	ents, err := os.ReadDir(m.sockParent())
	if err != nil {
		return nil, fmt.Errorf("listing socket directories: %w", err)
	}
	recorded := map[string]bool{}
	infos, _ := m.List()
	for _, i := range infos {
		recorded[i.SocketDir] = true
	}
	out := []Orphan{}
	for _, e := range ents {
		dir := filepath.Join(m.sockParent(), e.Name())
		if !m.isSocketDir(dir) || recorded[dir] {
			continue
		}
		if o, ok := m.orphan(dir, time.Now()); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// onlyDeadSockets: a directory's entries are none, or only a server's
// socket files (.s.PGSQL.PORT and its .lock), whose process liveSocketLock
// found gone: what a server killed -9 leaves.
func onlyDeadSockets(ents []os.DirEntry) bool {
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".s.PGSQL.") {
			return false
		}
	}
	return true
}

// orphan says whether the candidate dir is an orphan, and why.
func (m *Manager) orphan(dir string, now time.Time) (Orphan, bool) {
	fi, err := os.Lstat(dir)
	if err != nil || !m.ownsSocketDir(fi) || liveSocketLock(dir) {
		return Orphan{}, false
	}
	young := now.Sub(fi.ModTime()) < orphanGrace
	owner, err := m.readMarker(dir)
	if errors.Is(err, os.ErrNotExist) {
		ents, rerr := os.ReadDir(dir)
		if young || rerr != nil || !onlyDeadSockets(ents) || fi.Mode().Perm() != 0o700 {
			return Orphan{}, false
		}
		what := "empty"
		if len(ents) > 0 {
			what = "holding only the socket of a server that is gone"
		}
		return Orphan{Dir: dir, Reason: what + ", made by an older abtest, and no cluster of " + m.Root + " records it"}, true
	}
	if err != nil {
		return Orphan{}, false
	}
	why := m.goneReason(dir, owner, young)
	return Orphan{Dir: dir, DataDir: owner, Reason: why}, why != ""
}

// goneReason says why the cluster of data directory dataDir no longer
// has socket directory dir, or "" when it has (or abtest cannot tell).
func (m *Manager) goneReason(dir, dataDir string, young bool) string {
	if _, err := os.Lstat(dataDir); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "its data directory " + dataDir + " is gone"
	} else if err != nil {
		return ""
	}
	data, err := m.readTrusted(filepath.Join(dataDir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		if young {
			return ""
		}
		return "no cluster state in " + dataDir
	}
	var st State
	if err != nil || json.Unmarshal(data, &st) != nil || st.SocketDir == dir || young {
		return ""
	}
	return "the cluster of " + dataDir + " uses " + st.SocketDir
}

// Prune removes the socket directories whose cluster is gone (Orphans)
// and returns them; a dry run prints the commands instead. Each is
// judged again right before its removal.
func (m *Manager) Prune() ([]Orphan, error) {
	orphans, err := m.Orphans()
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	done := []Orphan{}
	for _, o := range orphans {
		if _, still := m.orphan(o.Dir, time.Now()); !still {
			continue
		}
		m.Run.Note("%s: %s", o.Dir, o.Reason)
		if err := m.Run.RemoveAll(o.Dir); err != nil {
			return done, exitcode.Failure(fmt.Errorf("removing socket directory %s: %w", o.Dir, err))
		}
		done = append(done, o)
	}
	return done, nil
}
