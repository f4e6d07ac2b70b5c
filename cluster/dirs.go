package cluster

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errNotPrivate: a directory is not one abtest may use as the server's
// private directory (a link, not a directory, someone else's).
var errNotPrivate = errors.New("not a private directory of the server's account")

// owner is the account that owns the data and socket directories: the
// server's account, or the caller when no account is set.
func (m *Manager) owner() (uid, gid int) {
	if m.User != nil {
		return int(m.User.UID), int(m.User.GID)
	}
	return os.Geteuid(), os.Getegid()
}

// privateDir makes dir a directory of the server's account with mode 0700
// without following a symbolic link: Mkdir (which never follows one), then
// an open with O_NOFOLLOW|O_DIRECTORY, and the owner and mode set through
// that descriptor. (Root following a link a local user planted at a
// predictable path would hand the link's target to the server's account.)
// An existing directory is accepted when the server's account owns it, or
// root does while abtest is root (nobody else can make one); anything
// else is errNotPrivate.
func (m *Manager) privateDir(dir string) error {
	if m.Run.DryRun {
		return m.Run.MkdirAll(dir, 0o700)
	}
	if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		what := "is not a directory"
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(dir)
			what = fmt.Sprintf("is a symbolic link (to %s)", target)
		}
		return fmt.Errorf("%w: %s %s", errNotPrivate, dir, what)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	uid, gid := m.owner()
	switch {
	case int(st.Uid) == uid:
	case st.Uid == 0 && os.Geteuid() == 0:
	default:
		return fmt.Errorf("%w: %s belongs to uid %d, not to %s", errNotPrivate, dir, st.Uid, m.ownerName())
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	if st.Mode&0o7777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

func (m *Manager) ownerName() string {
	if m.User != nil {
		return m.User.Name
	}
	uid, _ := m.owner()
	return fmt.Sprintf("uid %d (abtest)", uid)
}

// checkDataDirOwner refuses a data directory owned by another account
// than the server's: postgres could not read it, and abtest would leave
// files of the wrong owner in it. Nothing is changed.
func (m *Manager) checkDataDirOwner(name, dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("cluster %s: data directory %s is a symbolic link; abtest only uses directories it made", name, dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	uid, _ := m.owner()
	if !ok || int(st.Uid) == uid {
		return nil
	}
	return fmt.Errorf("cluster %s: data directory %s belongs to uid %d, and the server runs as %s: run abtest as that account (or --run-as it), or --recreate-cluster", name, dir, st.Uid, m.ownerName())
}

// writeOwned writes a file of the server's account.
func (m *Manager) writeOwned(path string, data []byte, perm os.FileMode) error {
	return m.Run.WriteFileAs(path, data, perm, m.User)
}
