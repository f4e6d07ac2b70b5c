package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
)

// The data root may be one others can write to (a shared benchmark
// host's /var/tmp): a local user can plant NAME.env.sh, NAME/ with an
// abtest.state.json naming an install of theirs, and so on. abtest reads,
// prints or runs such state only when its own accounts made it: env.sh,
// the state and the configuration include must belong to the invoking
// user or the server's account and be writable by nobody else; an env.sh
// is printed only when its checksum is the one the state recorded when
// abtest wrote it; pg_ctl is run only from an install abtest recorded
// whose bin/pg_ctl belongs to root, the caller or the server's account.

// ErrUntrusted: a file abtest would read, print or run is not its own.
var ErrUntrusted = errors.New("cluster: not abtest's own")

// trustedUIDs are abtest's own accounts: the caller and the server's. A
// manager made without its User as root (one that only reads states)
// trusts the default server account, postgres.
func (m *Manager) trustedUIDs() []int {
	uids := []int{os.Geteuid()}
	if m.User != nil {
		uids = append(uids, int(m.User.UID))
	} else if os.Geteuid() == 0 {
		if u, err := proc.LookupUser(defaultServerAccount); err == nil {
			uids = append(uids, int(u.UID))
		}
	}
	return uids
}

// defaultServerAccount runs the servers when abtest is root and no
// --run-as says otherwise (DESIGN: Running as root).
const defaultServerAccount = "postgres"

// untrusted is the ErrUntrusted of path, a usage error (exit 2).
func untrusted(path, why string) error {
	return exitcode.BadInputf("%w: %s %s; remove it, or recreate the cluster with abtest", ErrUntrusted, path, why)
}

// checkTrusted says why fi (of path) is not abtest's own: not a regular
// file (or directory, dir), another account's, writable by group or
// others.
func checkTrusted(path string, fi os.FileInfo, uids []int, dir bool) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return untrusted(path, "is a symbolic link")
	case dir && !fi.IsDir():
		return untrusted(path, "is not a directory")
	case !dir && !fi.Mode().IsRegular():
		return untrusted(path, "is not a regular file")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return untrusted(path, "has no owner to check")
	}
	if !slices.Contains(uids, int(st.Uid)) {
		return untrusted(path, fmt.Sprintf("belongs to uid %d, not to abtest's accounts (uid %s)", st.Uid, joinInts(uids)))
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return untrusted(path, fmt.Sprintf("is writable by others (mode %04o)", fi.Mode().Perm()))
	}
	return nil
}

func joinInts(v []int) string {
	s := ""
	for i, n := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(n)
	}
	return s
}

// readTrusted reads path, without following a link, when abtest's own
// accounts wrote it (checkTrusted on the opened file). A missing file is
// os.ErrNotExist.
func (m *Manager) readTrusted(path string) ([]byte, error) {
	return readChecked(path, math.MaxInt64, func(fi os.FileInfo) error { return checkTrusted(path, fi, m.trustedUIDs(), false) })
}

// readChecked reads at most limit bytes of path when check passes on
// the opened file: opened without following a link (an untrusted
// error) and without blocking on a FIFO, so root never reads through
// what another account planted. A missing file is os.ErrNotExist.
func readChecked(path string, limit int64, check func(os.FileInfo) error) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, untrusted(path, "is a symbolic link")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(fi); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// checkDataDirOwned refuses to act (stop, remove) on a data directory
// that is not the server account's own: one a local user planted.
func (m *Manager) checkDataDirOwned(name, dir string) error {
	if err := m.checkDataDirOwner(name, dir); err != nil {
		return exitcode.BadInputf("%w: %v", ErrUntrusted, err)
	}
	return nil
}

// checkPgCtl refuses an install whose pg_ctl (or bin directory) another
// account could have put there: abtest runs it as the server's account.
// Root, the caller, the user who invoked sudo and the server's account
// are trusted: every install Start accepts (build.CheckTrusted: root's
// or the sudo user's), so a cluster abtest started is one it can stop,
// and installs older abtests left the server account's.
//
// owner, when not 0, is the owner the state recorded at start
// (State.InstallOwner): trusted too.
func (m *Manager) checkPgCtl(install string, owner int) error {
	uids := append(append(m.trustedUIDs(), 0), safefile.InputOwners()...)
	if owner > 0 {
		uids = append(uids, owner)
	}
	bin := filepath.Join(install, "bin")
	for _, p := range []struct {
		path string
		dir  bool
	}{{bin, true}, {filepath.Join(bin, "pg_ctl"), false}} {
		fi, err := os.Lstat(p.path)
		if err != nil {
			return exitcode.BadInputf("%w: %v", ErrNoInstall, err)
		}
		if err := checkTrusted(p.path, fi, uids, p.dir); err != nil {
			return err
		}
	}
	return nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ownerOf is the owner of path (0 when it cannot be read).
func ownerOf(path string) int {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return 0
}
