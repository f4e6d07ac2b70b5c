package build

// Sealing: as root, the build account writes an install only while a
// build installs into it. Before, the install is handed over (unseal:
// chown -R to the build account, once the servers running it are
// stopped); after, and on every way out of the build, it is sealed:
// chown -R root:root, never through a link, without group or other
// write bits, set-user-ID or set-group-ID. Root then runs its postgres
// and pg_config (a version, a directory), the servers run it as the
// server account, and neither that account nor an extension's Makefile
// (run as the build account) can change it; a server runs only from a
// sealed install (cluster refuses one another account owns).
//
// Sealing changes owners and modes only: the fingerprint, the record
// and reuse (Options.ReuseFrom) read none of them, so an install built
// before sealing existed is sealed where a build finds it, not rebuilt.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
)

// ErrForeign: a tree abtest would build into, hand over or seal holds
// an entry of an account other than root and the build account.
var ErrForeign = errors.New("build: another account's file")

// sealedBits are the mode bits a sealed install never has.
const sealedBits = 0o022 | fs.ModeSetuid | fs.ModeSetgid

// buildUID is the account builds run as: User, or the caller.
func (b *Builder) buildUID() int {
	if b.User != nil {
		return int(b.User.UID)
	}
	return os.Geteuid()
}

// checkOwners refuses (exit 2) a tree under the install root that holds
// an entry of another account than root and the build account: a local
// user who made $PG_INSTALL_DIR/NAME/bin/postgres before abtest built
// NAME would have it run as the server account, or chowned to it. A
// missing tree passes.
func (b *Builder) checkOwners(dir string) error {
	if b.Run.DryRun {
		return nil
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return b.ownEntry(path, fi)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ownEntry refuses fi (of path, from Lstat) when it belongs to another
// account than root and the build account.
func (b *Builder) ownEntry(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && (st.Uid == 0 || int(st.Uid) == b.buildUID()) {
		return nil
	}
	uid := -1
	if ok {
		uid = int(st.Uid)
	}
	return exitcode.BadInputf("%w: %s belongs to uid %d, not to root or the build account (uid %d); abtest neither builds into nor runs what another account put there: remove it", ErrForeign, path, uid, b.buildUID())
}

// sealing says whether installs are sealed: as root, where builds run as
// another account.
func (b *Builder) sealing() bool {
	return b.User != nil && !b.Run.DryRun && os.Geteuid() == 0
}

// unseal hands install (made when missing) to the build account for the
// install steps: the servers running it are stopped first (runSteps).
// A file with a name outside the install is refused (linksInside).
func (b *Builder) unseal(install string) error {
	if !b.sealing() {
		return nil
	}
	if err := os.Mkdir(install, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return exitcode.Failure(err)
	}
	inside, err := linksInside(install, int(b.User.UID))
	if err != nil {
		return exitcode.Failure(err)
	}
	return handTree(install, int(b.User.UID), int(b.User.GID), inside)
}

// seal makes install root's and writable by root alone (see the top of
// this file). A directory is sealed before its entries are read: from
// then on the build account can neither add an entry nor swap one for
// a link, so each entry is changed as it was checked.
func (b *Builder) seal(install string) error {
	if !b.sealing() {
		return nil
	}
	fi, err := os.Lstat(install)
	if err != nil {
		return exitcode.Failure(err)
	}
	if !fi.IsDir() {
		return exitcode.BadInputf("%w: %s is not a directory abtest made; remove it", ErrForeign, install)
	}
	return filepath.WalkDir(install, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return exitcode.Failure(err)
		}
		fi, err := d.Info()
		if err != nil {
			return exitcode.Failure(err)
		}
		if err := b.ownEntry(path, fi); err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			if err := os.Lchown(path, 0, 0); err != nil {
				return exitcode.Failure(fmt.Errorf("sealing %s: %w", install, err))
			}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		// chown cleared the set-ID bits of a file; a directory keeps
		// them, and every mode is set from what Lstat saw.
		if fi.Mode()&sealedBits != 0 {
			if err := os.Chmod(path, fi.Mode().Perm()&^0o022|fi.Mode()&fs.ModeSticky); err != nil {
				return exitcode.Failure(fmt.Errorf("sealing %s: %w", install, err))
			}
		}
		return nil
	})
}

// reclaim gives root back dirs, each inside the one before it (the first
// in the install root), when the build account owns one: an older
// abtest handed the extensions' whole root to that account, and root
// makes no entry in a directory another account can change (safefile).
// Each is changed only once the one above it is root's, so none can be
// swapped for a link meanwhile.
func (b *Builder) reclaim(dirs ...string) error {
	if !b.sealing() {
		return nil
	}
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return exitcode.BadInputf("%w: %s is not a directory abtest made; remove it", ErrForeign, d)
		}
		if err := b.ownEntry(d, fi); err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			if err := os.Lchown(d, 0, 0); err != nil {
				return err
			}
		}
		if fi.Mode()&sealedBits != 0 {
			if err := os.Chmod(d, fi.Mode().Perm()&^0o022|fi.Mode()&fs.ModeSticky); err != nil {
				return err
			}
		}
	}
	return nil
}

// SealLeftovers seals the installs under InstallRoot a build killed
// between handing one over and sealing it (kill -9: no deferred seal
// ran) left the build account's, and returns their names; one whose
// build lock another process holds (a build under way) is left alone.
// Commands that open the clusters call it before they start again the
// clusters such a build had stopped: none then runs from an install the
// build account can write. The install's top and bin directories tell:
// unseal hands over, and seal takes back, the top first.
func (b *Builder) SealLeftovers() []string {
	if !b.sealing() {
		return nil
	}
	entries, err := os.ReadDir(b.InstallRoot)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || safepath.CheckName(name) != nil || strings.HasPrefix(name, ".") {
			continue
		}
		install := filepath.Join(b.InstallRoot, name)
		if !b.handedOver(install) && !b.handedOver(filepath.Join(install, "bin")) {
			continue
		}
		release, _, err := flock.Try(filepath.Join(b.InstallRoot, "."+name+".build.lock"))
		if err != nil {
			continue
		}
		if b.seal(install) == nil {
			out = append(out, name)
		}
		release()
	}
	return out
}

// handedOver says whether dir is the build account's.
func (b *Builder) handedOver(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == int(b.User.UID)
}

// sealed reports whether install is sealed already: every entry root's
// and without sealedBits. Not sealing (not root): true.
func (b *Builder) sealed(install string) bool {
	if !b.sealing() {
		return true
	}
	err := filepath.WalkDir(install, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode()&fs.ModeSymlink == 0 && fi.Mode()&sealedBits != 0 {
			return fs.ErrPermission
		}
		return nil
	})
	return err == nil
}

// CheckTrusted refuses (exit 2), as root, an install whose programs
// abtest would run (bin/postgres, pg_ctl, initdb, pg_config) or whose
// library directory another account than root and the user who invoked
// sudo owns or can write, the directories above them included: an
// install of another local user's (-k X=install:DIR, --install DIR) is
// refused before anything of it runs. Debian's /usr/lib/postgresql/N is
// root's; an install abtest built is sealed, root's. Not root: nil.
func CheckTrusted(install string) error {
	if err := untrusted(install); err != nil {
		return exitcode.BadInputf("install %s: %v; %s", install, err, trustHint)
	}
	return nil
}

// trustHint says what to do about an install CheckTrusted refuses.
const trustHint = "as root abtest runs only installs of root (or of the user who ran sudo) that nobody else can write: give another, or chown -R root: and chmod -R go-w it (abtest switch NAME -b TYPE seals one it built)"

// untrusted says why install is not trusted (CheckTrusted), or nil.
func untrusted(install string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, p := range []string{"postgres", "pg_ctl", "initdb", "pg_config"} {
		path := filepath.Join(install, "bin", p)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && p != "postgres" {
			continue
		}
		if err := safefile.Trusted(path); err != nil {
			return err
		}
	}
	if err := safefile.Trusted(LibDir(install)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
