package safefile

// openBeneath opens files the way openat(2) does beneath descriptors:
// the directory a file is in is reached from / one component at a time,
// each opened with O_NOFOLLOW|O_DIRECTORY relative to the one before, so
// that no component can be a link another account made or swapped in
// between a check and the open. A link is followed only when root or the
// effective user owns it (the system's /var/run, the user's own
// ~/results link): nobody else could have put it there.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks bounds the links a walk follows, as the kernel's 40.
const maxLinks = 40

// openDirBeneath opens the directory path (absolute or relative to the
// working directory) and returns its descriptor.
func openDirBeneath(path string) (int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return -1, err
	}
	todo := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	cur := "/"
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// cur is always a real path: its parent is lexical.
			unix.Close(fd)
			cur = filepath.Dir(cur)
			if fd, err = unix.Open(cur, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				return -1, err
			}
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			fd, cur = next, filepath.Join(cur, name)
			continue
		}
		if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "open", Path: filepath.Join(cur, name), Err: err}
		}
		target, err := trustedLink(fd, filepath.Join(cur, name), name)
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		if links++; links > maxLinks {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: %w: too many links", path, ErrUnsafe)
		}
		if filepath.IsAbs(target) {
			unix.Close(fd)
			cur = "/"
			if fd, err = unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				return -1, err
			}
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return fd, nil
}

// trustedLink returns the target of the link name in directory dirfd
// (whose path is path) when root or the effective user owns it.
func trustedLink(dirfd int, path, name string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", &fs.PathError{Op: "open", Path: path, Err: unix.ENOTDIR}
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s: %w: a symbolic link of uid %d on the way; abtest follows only root's and its own: remove it or use another path", path, ErrUnsafe, st.Uid)
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// openBeneath opens the file path with flag (O_NOFOLLOW and O_CLOEXEC
// added) in its directory reached by openDirBeneath.
func openBeneath(path string, flag int, perm fs.FileMode) (*os.File, error) {
	dirfd, err := openDirBeneath(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, filepath.Base(path), flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
