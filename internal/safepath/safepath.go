// Package safepath guards the paths abtest creates and removes. Names given
// with -w become path components under abtest's roots (worktrees, installs,
// data), so they are validated once here, and nothing is ever removed that
// does not resolve to a directory inside one of those roots.
package safepath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrBadName is returned for a name that cannot be a path component.
var ErrBadName = errors.New("safepath: bad name")

// ErrOutside is returned for a path that is not inside its root.
var ErrOutside = errors.New("safepath: outside abtest's roots")

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckName reports whether name may be used as a worktree, build or
// cluster name: 1 to 64 of [A-Za-z0-9._-], not "." or "..", not starting
// with '-' (git and every other tool would read it as an option) and not
// ".git" (a worktree of that name would sit where git keeps its own).
func CheckName(name string) error {
	if !nameRE.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%w %q: use 1 to 64 letters, digits, '.', '_' or '-' (not . or ..)", ErrBadName, name)
	}
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("%w %q: a name may not start with '-'", ErrBadName, name)
	}
	if strings.EqualFold(name, ".git") {
		return fmt.Errorf("%w %q: reserved for git", ErrBadName, name)
	}
	return nil
}

// Under returns root/name after checking name.
func Under(root, name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// CheckRemovable reports whether path may be removed as something abtest
// made under root: it must be root/NAME for a valid NAME, must not be a
// symbolic link, and must resolve to a place inside root. A missing path is
// fine (there is nothing to remove).
func CheckRemovable(root, path string) error {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if filepath.Dir(abs) != filepath.Clean(absRoot) || CheckName(filepath.Base(abs)) != nil {
		return fmt.Errorf("%w: %s is not an entry of %s", ErrOutside, abs, absRoot)
	}
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return fmt.Errorf("%w: %s is a symbolic link (to %s), not a directory abtest made; remove it yourself if you mean to", ErrOutside, abs, target)
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return fmt.Errorf("%w: %s resolves to %s, outside %s", ErrOutside, abs, real, realRoot)
	}
	return nil
}
