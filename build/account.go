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
// directory, ccache's directory (mode 0700: what is cached there is
// compiled into installs) and the ccache stats log. Trees made by an
// earlier build as root are handed over whole (Lchown: a symbolic link
// inside is changed itself, never its target). The install prefix is
// handed over later, once its servers are stopped (unseal).
func (b *Builder) handOver(wt, statsLog string, ccache bool) error {
	if b.User == nil || b.Run.DryRun {
		return nil
	}
	uid, gid := int(b.User.UID), int(b.User.GID)
	for _, dir := range []string{filepath.Join(wt, worktree.BuildDir)} {
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
		if err := b.adoptCCache(); err != nil {
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

// adoptCCache hands ccache's directory (made by the caller) to User, mode
// 0700: a directory another account made there, or one left writable
// by others, would let that account plant objects the next build links
// into an install.
func (b *Builder) adoptCCache() error {
	if err := chownTree(b.ccacheDir(), int(b.User.UID), int(b.User.GID)); err != nil {
		return err
	}
	return os.Chmod(b.ccacheDir(), 0o700)
}

// chownTree gives dir and everything below it to uid:gid, without
// following symbolic links, and steps past what goes away under it. It
// walks the whole tree every time: a tree handed over once can still get
// files of another owner (a build run as root by an older abtest into an
// install the server account owns made `make install` fail on its
// chmod), and a walk of an install and a build directory (about 11 000
// entries) costs milliseconds beside a build.
//
// Only root's entries and uid's own are handed over; another account's
// is refused (exit 2, ErrForeign). A root file with a name outside the
// tree (a hard link: chowning it would give uid the file of that other
// name, /etc/shadow say) loses its name in the tree instead. dir's group and other write bits are cleared:
// one made 0777 by someone's umask is adopted 0755.
func chownTree(dir string, uid, gid int) error {
	return handTree(dir, uid, gid, nil)
}

// handTree is chownTree, root files of more than one name allowed when
// inside has them (linksInside: every name in the tree).
func handTree(dir string, uid, gid int, inside map[fileID]bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory abtest made", dir)
	}
	if err := handable(dir, fi, uid, nil); err != nil {
		return err
	}
	// The top only: it lies in a directory of root's, where nobody can
	// swap it for a link between the check and chmod, which follows
	// one. (An install is sealed, every entry, once built.)
	if m := fi.Mode(); m.Perm()&0o022 != 0 {
		if err := os.Chmod(dir, m.Perm()&^0o022|m&os.ModeSticky); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			var info fs.FileInfo
			if info, err = d.Info(); err == nil {
				if err := handable(path, info, uid, inside); errors.Is(err, errOtherName) {
					// The name is dropped, its file left as it is:
					// perf's build-id cache (~/.debug) links every
					// binary it profiled, and a planted second name of
					// /etc/shadow must not be handed over. The
					// install this hand-over precedes writes its own
					// files anew.
					return os.Remove(path)
				} else if err != nil {
					return err
				}
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

// handable refuses to hand fi (of path, from Lstat) to uid when it
// belongs to another account than root and uid, or is a root file with
// more than one name, unless inside has it.
func handable(path string, fi fs.FileInfo, uid int, inside map[fileID]bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return exitcode.BadInputf("%w: %s has no owner to check", ErrForeign, path)
	case st.Uid != 0 && int(st.Uid) != uid:
		return exitcode.BadInputf("%w: %s belongs to uid %d, not to root or the build account (uid %d); abtest neither builds into nor runs what another account put there: remove it", ErrForeign, path, st.Uid, uid)
	case int(st.Uid) != uid && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 && st.Nlink > 1 && !inside[fileID{st.Dev, st.Ino}]:
		return fmt.Errorf("%w: %s has %d hard links, not all in its tree", errOtherName, path, st.Nlink)
	}
	return nil
}

// errOtherName: a root file in a tree being handed over has a name
// outside it too (handable); handTree drops the name in the tree.
var errOtherName = errors.New("build: a file of another name")

// fileID identifies a file by its device and inode.
type fileID struct{ dev, ino uint64 }

// linksInside returns the files under dir, not uid's, that have more
// than one name and all of them under dir: an install's own hard links
// (zic links each time zone alias to its zone, Africa/Abidjan has 14
// names), which unseal may hand over with the tree. Run on a sealed
// install, whose directories nobody else can change meanwhile.
func linksInside(dir string, uid int) (map[fileID]bool, error) {
	seen := map[fileID]uint64{}
	nlink := map[fileID]uint64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && int(st.Uid) != uid {
			id := fileID{st.Dev, st.Ino}
			seen[id]++
			nlink[id] = uint64(st.Nlink)
		}
		return nil
	})
	inside := map[fileID]bool{}
	for id, n := range seen {
		inside[id] = n == nlink[id]
	}
	return inside, err
}
