// Package safefile is abtest's one door for files: every file it creates,
// appends to, truncates or renames, and every directory it makes, goes
// through here (a lint in internal/lint forbids os.WriteFile, os.Create,
// os.OpenFile, os.MkdirAll and os.Rename elsewhere). The roots abtest
// writes into may be directories others can write to (a results or
// data root of mode 1777 on a shared benchmark host, where
// fs.protected_symlinks may be off), so:
//
//   - a file is opened beneath its directory's descriptor, reached from /
//     one component at a time with O_NOFOLLOW (beneath.go): no link of
//     another account's on the way is followed, nor swapped in later;
//   - a new file is created with O_EXCL|O_NOFOLLOW|O_CLOEXEC: a link or
//     a file planted at its name is refused, never followed;
//   - an existing file is opened with O_NOFOLLOW and kept only when it is
//     a regular file of the effective user's, with one link (a hard link
//     to /etc/shadow is root's file too) and writable by nobody else;
//   - a directory is made one component at a time, never through a link
//     another account owns, and one that exists is adopted only when it
//     is the effective user's (its group and other write bits cleared)
//     or root's and not writable by others, or sticky.
//
// The rules for what abtest reads and runs as root are in trust.go.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// ErrUnsafe: a path is a link, not a regular file or directory, or owned
// by another user, or a directory others can write to.
var ErrUnsafe = errors.New("safefile: unsafe path")

const noFollow = syscall.O_NOFOLLOW | syscall.O_CLOEXEC

// Create creates path, which must not exist (O_EXCL): a link or a file
// already there is refused.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	f, err := openBeneath(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, linkErr(path)
	}
	return f, err
}

// OpenFile opens path with flag and O_NOFOLLOW and checks that what it
// opened is a regular file owned by the effective user, with one link and
// not writable by group or others (Reused).
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return OpenOwned(path, flag, perm, os.Geteuid())
}

// OpenOwned is OpenFile for a file that exists and belongs to uid (a file
// the server account wrote, appended to by root): the same checks with
// uid for the owner.
func OpenOwned(path string, flag int, perm fs.FileMode, uid int) (*os.File, error) {
	// O_TRUNC would cut a planted hard link's target before the check:
	// the file is truncated after it passed.
	trunc := flag&os.O_TRUNC != 0
	f, err := openBeneath(path, flag&^os.O_TRUNC, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, linkErr(path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = reused(path, fi, uid)
	}
	if err == nil && trunc {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Append opens path for appending, creating it with perm when missing: the
// logs of external tools (initdb, meson, pgbench) and the results' JSON
// lines.
func Append(path string, perm fs.FileMode) (*os.File, error) {
	return OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, perm)
}

// WriteFile writes data to path, replacing the contents of a regular file
// of the effective user's but never following a link (os.WriteFile
// would).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Owner is the account a file is handed to (WriteAtomic); nil keeps the
// effective user's.
type Owner struct{ UID, GID int }

// WriteAtomic writes data to a new temporary file beside path, with mode
// perm and owner (nil: the effective user), and renames it over path. The
// owner is set on the descriptor before the rename, so nothing at path,
// a link planted there included, is ever followed: rename replaces the
// entry itself.
func WriteAtomic(path string, data []byte, perm fs.FileMode, owner *Owner) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(perm)
	if err == nil && owner != nil {
		err = tmp.Chown(owner.UID, owner.GID)
	}
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Rename renames oldpath to newpath: rename(2) never follows a link at
// either name, it replaces the entry; the directory of newpath must be
// one nobody else can swap (Parent).
func Rename(oldpath, newpath string) error {
	if err := Parent(filepath.Dir(newpath)); err != nil {
		return err
	}
	return os.Rename(oldpath, newpath)
}

// reused checks fi (of path, from an open file's Stat or Lstat) before
// abtest writes to a file that was already there: a regular file of
// uid's, with one link and writable by nobody else.
func reused(path string, fi fs.FileInfo, uid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return linkErr(path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrUnsafe, fi.Mode().Type())
	case !ok || int(st.Uid) != uid:
		return fmt.Errorf("%s: %w: owned by uid %d, not uid %d; remove it or use another path", path, ErrUnsafe, uidOf(st), uid)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s: %w: has %d hard links (one may be another file's name); remove it", path, ErrUnsafe, st.Nlink)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s: %w: writable by group or others (mode %04o); remove it", path, ErrUnsafe, fi.Mode().Perm())
	}
	return nil
}

// Owned checks fi (of path, from Lstat or an open file's Stat): a regular
// file, or a directory when dir, owned by the effective user; a directory
// must not be writable by group or others either.
func Owned(path string, fi fs.FileInfo, dir bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return linkErr(path)
	case dir && !fi.IsDir():
		return fmt.Errorf("%s: %w: not a directory", path, ErrUnsafe)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrUnsafe, fi.Mode().Type())
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: %w: owned by uid %d, not by this user (uid %d); remove it or use another path", path, ErrUnsafe, uidOf(st), os.Geteuid())
	case dir && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s: %w: writable by group or others (mode %04o); chmod go-w %s, or use another directory", path, ErrUnsafe, fi.Mode().Perm(), path)
	}
	return nil
}

func linkErr(path string) error {
	return fmt.Errorf("%s: %w: a symbolic link; remove it", path, ErrUnsafe)
}

// Dir checks an existing directory abtest is about to write into: owned
// by the effective user and not writable by group or others, so nobody
// else can plant a link in it. A link to such a directory is followed
// only when the link itself is the effective user's.
func Dir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s: %w: a symbolic link owned by uid %d; remove it or use another path", path, ErrUnsafe, uidOf(st))
		}
		if fi, err = os.Stat(path); err != nil {
			return err
		}
	}
	return Owned(path, fi, true)
}

// Parent checks the directory a directory abtest makes or adopts is in:
// anyone who can rename entries in it can swap that directory for a link
// after it was checked. It must be the effective user's or root's, and
// writable by group or others only when sticky (a shared root of mode
// 1777: there only an entry's owner can rename it).
func Parent(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok || int(st.Uid) != os.Geteuid() && st.Uid != 0:
		return fmt.Errorf("%s: %w: owned by uid %d, who can replace what abtest makes in it; use a directory of your own", path, ErrUnsafe, uidOf(st))
	case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("%s: %w: writable by group or others and not sticky (mode %04o); chmod go-w %s (or +t), or use another directory", path, ErrUnsafe, fi.Mode().Perm(), path)
	}
	return nil
}

func uidOf(st *syscall.Stat_t) int {
	if st == nil {
		return -1
	}
	return int(st.Uid)
}

// Mkdir makes the directory path with perm; one already there is adopted
// (Adopt), a link or a file there is refused.
func Mkdir(path string, perm fs.FileMode) error {
	err := os.Mkdir(path, perm)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return Adopt(path, perm)
	}
	return err
}

// MkdirAll makes path and the parents it lacks, each with perm, one
// component at a time. Every directory and link of the part of path that
// exists must be root's or the effective user's and writable by nobody
// else, or sticky (a link there is the system's or the user's, e.g.
// /var/run: nobody else could have planted it); path itself, and every
// component made below that, is adopted (Adopt): a link, a file or
// another account's directory planted there is refused.
func MkdirAll(path string, perm fs.FileMode) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	var missing []string
	top := abs
	for {
		if _, err := os.Lstat(top); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, top)
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if len(missing) == 0 {
		if err := chain(filepath.Dir(abs), writers()); err != nil {
			return err
		}
		return Adopt(abs, perm)
	}
	if err := chain(top, writers()); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := Mkdir(missing[i], perm); err != nil {
			return err
		}
	}
	return nil
}

// MkdirFor makes the directory a file is about to be created in, when it
// is missing (MkdirAll). One that exists as a directory, not a link, is
// used as it is, whoever owns it: a cell's directory is handed to the
// server account, whose pgbench writes there, and what abtest then
// creates in it goes through the door (never through a link, nor into
// another's file).
func MkdirFor(file string, perm fs.FileMode) error {
	dir := filepath.Dir(file)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		return nil
	}
	return MkdirAll(dir, perm)
}

// Adopt checks a directory abtest makes or reuses: not a link; the
// effective user's (write bits beyond perm's are cleared: a directory of
// mode 0777 a careless umask or an older abtest left would let others
// swap what abtest keeps in it), or root's and writable by nobody else
// or sticky (a shared root such as /var/tmp). Any other owner is refused.
func Adopt(path string, perm fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return linkErr(path)
	case !fi.IsDir():
		return fmt.Errorf("%s: %w: not a directory; remove it or use another path", path, ErrUnsafe)
	case !ok:
		return fmt.Errorf("%s: %w: no owner to check", path, ErrUnsafe)
	case int(st.Uid) == os.Geteuid() && fi.Mode()&fs.ModeSticky != 0:
		// A shared root of the user's own, such as /var/tmp for root.
		return nil
	case int(st.Uid) == os.Geteuid():
		if extra := fi.Mode().Perm() &^ perm & 0o022; extra != 0 {
			return os.Chmod(path, fi.Mode().Perm()&^extra)
		}
		return nil
	case slices.Contains(writers(), int(st.Uid)) && (fi.Mode().Perm()&0o022 == 0 || fi.Mode()&fs.ModeSticky != 0):
		// Root's, or abtest's other account's (TrustAccount).
		return nil
	}
	return fmt.Errorf("%s: %w: a directory of uid %d (mode %04o), not this user's (uid %d); remove it or use another path", path, ErrUnsafe, st.Uid, fi.Mode().Perm(), os.Geteuid())
}

// MkdirTemp makes a new directory in dir, mode 0700, named prefix and
// ten random digits, and returns its path. Like os.MkdirTemp it never
// takes a path that exists (mkdir fails on one: a link planted there is
// not followed), but its names have one length, where os.MkdirTemp's
// have 1 to 10 digits: a path a server is given lies in its memory,
// and where it ends shifts the alignment, so the instruction count, of
// string functions run in every transaction. Two A/A measurements whose
// directories' names differed by a digit counted __strncpy_avx2 at +8
// instructions/tx (0.02 %).
func MkdirTemp(dir, prefix string) (string, error) {
	for {
		path := filepath.Join(dir, fmt.Sprintf("%s%010d", prefix, rand.Uint32()))
		err := os.Mkdir(path, 0o700)
		if !errors.Is(err, fs.ErrExist) {
			return path, err
		}
	}
}
