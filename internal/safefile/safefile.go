// Package safefile opens the files abtest writes in directories others may
// write to (a results root of mode 1777 on a shared benchmark host) without
// following a link planted there: a new file is created with O_EXCL and
// O_NOFOLLOW, an existing one is opened with O_NOFOLLOW and must be a
// regular file owned by abtest's own effective user.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUnsafe: a path is a link, not a regular file or directory, or owned
// by another user, or a directory others can write to.
var ErrUnsafe = errors.New("safefile: unsafe path")

// Create creates path, which must not exist (O_EXCL): a link or a file
// already there is refused.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
}

// OpenFile opens path with flag and O_NOFOLLOW and checks that what it
// opened is a regular file owned by the effective user.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: %w: a symbolic link; remove it", path, ErrUnsafe)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = Owned(path, fi, false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile writes data to path, replacing a regular file of the
// effective user's but never following a link (os.WriteFile would).
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

// Owned checks fi (of path, from Lstat or an open file's Stat): a regular
// file, or a directory when dir, owned by the effective user; a directory
// must not be writable by group or others either.
func Owned(path string, fi fs.FileInfo, dir bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %w: a symbolic link; remove it", path, ErrUnsafe)
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
