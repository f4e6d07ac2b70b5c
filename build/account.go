package build

// The build account: when abtest runs as root, builds run as User, which
// must reach and own the build directory, the install prefix and its
// ccache.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/worktree"
)

// handOver gives the build user (User) what its build writes: the build
// directory, the install prefix and the ccache stats log. Trees made by
// an earlier build as root are handed over whole (Lchown: a symbolic link
// inside is changed itself, never its target).
func (b *Builder) handOver(wt, install, statsLog string, ccache bool) error {
	if b.User == nil || b.Run.DryRun {
		return nil
	}
	uid, gid := int(b.User.UID), int(b.User.GID)
	for _, dir := range []string{filepath.Join(wt, worktree.BuildDir), install} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := chownTree(dir, uid, gid); err != nil {
			return err
		}
	}
	if ccache {
		if err := os.Mkdir(b.ccacheDir(), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := chownTree(b.ccacheDir(), uid, gid); err != nil {
			return err
		}
		f, err := safefile.Create(statsLog, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Chown(uid, gid)
	}
	return nil
}

// reachable checks that the build account can enter each of dirs (or,
// for one not made yet, its nearest existing ancestor): as root, a
// private parent directory otherwise fails the build with "fork/exec
// ../configure: permission denied".
func (b *Builder) reachable(ctx context.Context, dirs ...string) error {
	if b.User == nil {
		return nil
	}
	for _, dir := range dirs {
		if dir, ok := b.Run.CanEnter(ctx, b.User, dir); !ok {
			return exitcode.BadInputf("user %s (builds run as it when abtest is root) cannot enter %s (a parent directory is private): put worktrees and installs (PG_WORKTREES_DIR, PG_INSTALL_DIR) under a directory it can reach, e.g. /var/tmp/abtest", b.User.Name, dir)
		}
	}
	return nil
}

func (b *Builder) ccacheDir() string {
	return filepath.Join(b.InstallRoot, ".ccache")
}

// chownTree gives dir and everything below it to uid:gid, without
// following symbolic links, and steps past what goes away under it. It
// walks the whole tree every time: a tree handed over once can still get
// files of another owner (a build run as root by an older abtest into an
// install the server account owns made `make install` fail on its
// chmod), and a walk of an install and a build directory (about 11 000
// entries) costs milliseconds beside a build.
func chownTree(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory abtest made", dir)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			var info fs.FileInfo
			if info, err = d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
					return nil
				}
				err = os.Lchown(path, uid, gid)
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			// Gone under the walk: ccache's directory is shared by
			// concurrent builds, which write temporary files there and
			// rename or remove them.
			return nil
		}
		return err
	})
}
