package build

// An extension's install: `make install` runs as the build account into
// a staging directory (DESTDIR), and abtest copies the regular files
// staged there into the install's directories itself. The install is
// never handed to the build account for it: an extension's Makefile
// cannot change a server's binaries (one rewrote another install's
// bin/pg_config, which root then ran), a sealed install stays sealed,
// and an install abtest did not build (Debian's /usr/lib/postgresql/15,
// root's) takes extensions too.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
)

// maxStaged is the largest file an extension's install may stage (a
// shared library, its bitcode): a larger one is refused, not read.
const maxStaged = 512 << 20

// stageDir is where make installs an extension built in work.
func stageDir(work string) string { return filepath.Join(work, ".abtest-install") }

// installStaged copies the regular files make staged in stage (paths
// below it are absolute paths of the install's directories) into
// info.Install's directories, mode without group or other write and
// set-ID bits. A file outside the install and the directories its
// pg_config names, a link or anything else staged is refused (exit 3,
// as a failed install).
func (b *Builder) installStaged(ctx context.Context, info *ExtensionInfo, stage string) error {
	if b.Run.DryRun {
		b.Run.Note("copy the files make installed into %s into %s's directories", stage, info.Install)
		return nil
	}
	dirs, err := b.installDirs(ctx, info.Install)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(stage)
	if err != nil {
		return fmt.Errorf("staged install: %w", err)
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("staged install: %s is not a regular file (%s); an extension installs files only", rel, d.Type())
		}
		dest := filepath.Join("/", rel)
		top := ""
		for _, dir := range dirs {
			if r, err := filepath.Rel(dir, dest); err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") {
				top = dir
				break
			}
		}
		if top == "" {
			return fmt.Errorf("staged install: %s is outside %s and the directories its pg_config names", dest, info.Install)
		}
		return copyStaged(root, rel, top, dest)
	})
}

// installDirs are the directories an extension may install into: the
// prefix and those pg_config names (Debian's share lies outside it),
// with links resolved.
func (b *Builder) installDirs(ctx context.Context, install string) ([]string, error) {
	flags := []string{"--bindir", "--sharedir", "--docdir", "--pkglibdir", "--includedir", "--pkgincludedir", "--includedir-server"}
	out, err := b.Run.Output(ctx, proc.Cmd{Path: filepath.Join(install, "bin", "pg_config"), Args: flags, ReadOnly: true, Dir: "/"})
	if err != nil {
		return nil, fmt.Errorf("pg_config: %w", err)
	}
	var dirs []string
	for _, d := range append([]string{install}, strings.Split(strings.TrimSpace(out), "\n")...) {
		if d = strings.TrimSpace(d); filepath.IsAbs(d) {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				d = real
			}
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs, nil
}

// copyStaged copies the staged file rel of root to dest, beneath top (an
// install directory), making the directories between them (0755). top,
// as root, must be trusted (safefile.Trusted); each directory below it
// must be one (not a link) that passes safefile.InputEntry.
func copyStaged(root *os.Root, rel, top, dest string) error {
	if err := safefile.Trusted(top); err != nil {
		return err
	}
	sub, _ := filepath.Rel(top, filepath.Dir(dest))
	dir := top
	for _, name := range strings.Split(sub, "/") {
		if name == "." || name == "" {
			continue
		}
		dir = filepath.Join(dir, name)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			fi, err = os.Lstat(dir)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: %w: not a directory", dir, safefile.ErrUntrusted)
		}
		if err := safefile.InputEntry(dir, fi); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxStaged {
		return fmt.Errorf("staged install: %s is not a regular file of at most %d MiB", rel, maxStaged>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStaged+1))
	if err != nil {
		return err
	}
	if len(data) > maxStaged {
		return fmt.Errorf("staged install: %s grew past %d MiB", rel, maxStaged>>20)
	}
	return safefile.WriteAtomic(dest, data, fi.Mode().Perm()&0o755, nil)
}

// installError is a failed copy of the staged install: exit 3 naming the
// extension and the log.
func installError(info *ExtensionInfo, err error) error {
	return exitcode.Failure(fmt.Errorf("%w: %s: install: %w (log %s)", ErrFailed, info.Name, err, info.Log))
}
