package safefile

// What root reads and runs. abtest as root runs its servers, builds and
// extension builds as unprivileged accounts; anything one of them (or any
// other local user) can write is code or SQL that account could make root
// run. So root executes a program only when the program and every
// directory above it are root's and writable by nobody else (MayExec),
// and reads an input that becomes code or SQL (a workload file, setup
// SQL, a condition script, a patch, an extension's source) only when it
// and every directory above it belong to root or to the user who invoked
// it through sudo, and nobody else can write them (Input). Sticky
// directories such as /tmp count as unwritable: there only an entry's
// owner can replace it.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrUntrusted: root would execute or read something another account can
// write.
var ErrUntrusted = errors.New("safefile: writable by another account")

// Refused says whether err is a refusal of this package's (ErrUnsafe,
// ErrUntrusted): the user's roots or inputs are to be fixed (exit 2),
// where other errors of a write are the host's (exit 3).
func Refused(err error) bool {
	return errors.Is(err, ErrUnsafe) || errors.Is(err, ErrUntrusted)
}

// MaxInput is the largest input file Input reads (a workload script, setup
// SQL, a patch): larger ones are refused, not read until memory runs out
// (-w file:/dev/zero once read 23 GB before the OOM killer stopped abtest).
const MaxInput = 64 << 20

// MayExec reports why root may not execute path (nil: it may). When the
// effective user is not root nothing is checked: an account runs what it
// can read. Otherwise path and every directory above it, and every link
// met on the way, must belong to root and be writable by nobody else (a
// directory may be sticky).
func MayExec(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: %w: not an absolute path", path, ErrUntrusted)
	}
	return chain(path, []int{0})
}

// accounts are abtest's other accounts (TrustAccount).
var accounts struct {
	sync.Mutex
	uids []int
}

// TrustAccount adds uid to abtest's own accounts: the server's account,
// which owns the cells' directories its pgbench writes into (a resumed
// cell's warm-up directory is made in one). Its directories are walked
// and adopted as abtest's; root still never runs what it can write
// (MayExec) nor reads its files as input.
func TrustAccount(uid int) {
	accounts.Lock()
	defer accounts.Unlock()
	if !slices.Contains(accounts.uids, uid) {
		accounts.uids = append(accounts.uids, uid)
	}
}

// writers are the accounts whose directories abtest writes beneath:
// root's, its own and its other accounts'.
func writers() []int {
	accounts.Lock()
	defer accounts.Unlock()
	return append([]int{0, os.Geteuid()}, accounts.uids...)
}

// InputOwners are the accounts whose files root reads as input: root, and
// the user who ran abtest through sudo (SUDO_UID), whose files are the
// user's own request.
func InputOwners() []int {
	uids := []int{0}
	if os.Geteuid() != 0 {
		return []int{os.Geteuid()}
	}
	if n, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && n > 0 {
		uids = append(uids, n)
	}
	return uids
}

// CheckInput reports why path may not be read as an input: not a regular
// file (a FIFO or /dev/zero), larger than MaxInput, or, as root, writable
// by an account other than InputOwners (the file, a directory above it,
// or a link on the way).
func CheckInput(path string) error {
	_, err := input(path, false)
	return err
}

// Input reads path after CheckInput's checks, through a descriptor opened
// without following a link at the checked name, and refuses a file that
// grew past MaxInput while it was read.
func Input(path string) ([]byte, error) {
	return input(path, true)
}

func input(path string, read bool) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file (%s); give a file", path, ErrUnsafe, fi.Mode().Type())
	}
	if fi.Size() > MaxInput {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d MiB an input may have", path, ErrUnsafe, fi.Size(), MaxInput>>20)
	}
	if os.Geteuid() == 0 {
		if err := chain(abs, InputOwners()); err != nil {
			return nil, err
		}
		if err := owned(real, fi, InputOwners()); err != nil {
			return nil, err
		}
	}
	if !read {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInput+1))
	if err == nil && len(data) > MaxInput {
		err = fmt.Errorf("%s: %w: grew past %d MiB while read", path, ErrUnsafe, MaxInput>>20)
	}
	return data, err
}

// chain checks path as the kernel resolves it: every directory from / to
// the last component, every link met (whose target is then walked the
// same way) and the file itself must belong to one of uids and be
// writable by no one else; a directory may instead be sticky.
func chain(path string, uids []int) error {
	const maxLinks = 40
	links := 0
	todo := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := "/"
	if err := checkDir(cur, uids); err != nil {
		return err
	}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := ownedBy(next, fi, uids); err != nil {
				return err
			}
			if links++; links > maxLinks {
				return fmt.Errorf("%s: %w: too many links", path, ErrUntrusted)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if len(todo) > 0 || fi.IsDir() {
			if err := checkDir(next, uids); err != nil {
				return err
			}
		} else if err := owned(next, fi, uids); err != nil {
			return err
		}
		cur = next
	}
	return nil
}

// checkDir: a directory of one of uids, writable by nobody else unless
// sticky.
func checkDir(path string, uids []int) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", path, ErrUntrusted)
	}
	if err := ownedBy(path, fi, uids); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s: %w: a directory writable by group or others (mode %04o); chmod go-w it or move the file", path, ErrUntrusted, fi.Mode().Perm())
	}
	return nil
}

// owned: a file of one of uids, writable by nobody else.
func owned(path string, fi fs.FileInfo, uids []int) error {
	if err := ownedBy(path, fi, uids); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s: %w: writable by group or others (mode %04o); chmod go-w it", path, ErrUntrusted, fi.Mode().Perm())
	}
	return nil
}

func ownedBy(path string, fi fs.FileInfo, uids []int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !slices.Contains(uids, int(st.Uid)) {
		return fmt.Errorf("%s: %w: owned by uid %d, not by %s; as root abtest runs and reads only what nobody else can change", path, ErrUntrusted, uidOf(st), ownerWords(uids))
	}
	return nil
}

func ownerWords(uids []int) string {
	if len(uids) == 1 && uids[0] == 0 {
		return "root"
	}
	s := make([]string, len(uids))
	for i, u := range uids {
		s[i] = strconv.Itoa(u)
	}
	return "uid " + strings.Join(s, " or ")
}

// Trusted reports why root may not take path as the caller's own (nil:
// it may): a program it hands to the server account (an install given
// with --install or -k X=install:DIR) or a directory it reads as input
// (an extension's source). As root, path, every directory above it and
// every link on the way must belong to InputOwners and be writable by
// nobody else (a directory may be sticky). Not root: nil, an account
// runs what it can read.
func Trusted(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return chain(abs, InputOwners())
}

// InputEntry reports why fi (of path, from Lstat, inside a directory
// Trusted passed) may not be part of an input tree as root: a link,
// file or directory of an account other than InputOwners, or a file or
// (not sticky) directory writable by group or others. Not root: nil.
func InputEntry(path string, fi fs.FileInfo) error {
	if os.Geteuid() != 0 {
		return nil
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return ownedBy(path, fi, InputOwners())
	case fi.IsDir() && fi.Mode()&fs.ModeSticky != 0:
		return ownedBy(path, fi, InputOwners())
	}
	return owned(path, fi, InputOwners())
}
