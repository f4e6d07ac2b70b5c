package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/text"
)

// scheme is a URL's scheme followed by "//": a location that has one and
// is not a PostgreSQL URL is refused, never taken for a relative file
// name (ftp://example/x would make ./ftp:/example/x a database).
var scheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Parse reads a store location: a postgres:// or postgresql:// URL, or
// the path of a SQLite file, optionally written sqlite:PATH. Any other
// scheme, and a PostgreSQL URL that does not parse, is refused (exit 2)
// before anything is opened or created.
func Parse(location string) (postgres bool, path string, err error) {
	switch {
	case location == "":
		return false, "", exitcode.BadInputf("store: no location: give --store URL or a results directory")
	case strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://"):
		if _, err := url.Parse(location); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				// ue.Error() repeats the URL, password and all.
				err = ue.Err
			}
			return false, "", exitcode.BadInputf("store: the PostgreSQL URL does not parse: %v; give --store postgres://USER@HOST:PORT/DB", err)
		}
		return true, "", nil
	case strings.HasPrefix(location, "sqlite:"):
		path = strings.TrimPrefix(location, "sqlite:")
	case scheme.MatchString(location):
		return false, "", exitcode.BadInputf("store %s: %q is not a store scheme; give a postgres:// URL or the path of a SQLite file", location, scheme.FindStringSubmatch(location)[1])
	default:
		path = location
	}
	if path == "" {
		return false, "", exitcode.BadInputf("store %s: no file name", location)
	}
	return false, path, nil
}

// Check is what a run checks of the store it will record in before its
// first cell, not after its last, creating nothing: location must parse
// (Parse), a PostgreSQL store must answer a connection, and an existing
// SQLite file must be safe to open (sqliteFile); a missing one is made
// when the run records.
func Check(ctx context.Context, location string) error {
	postgres, path, err := Parse(location)
	if err != nil {
		return err
	}
	if !postgres {
		if _, err := os.Lstat(path); err != nil {
			return nil
		}
		_, err := sqliteFile(path, false)
		return err
	}
	db, err := sql.Open("pgx", location)
	if err == nil {
		err = db.PingContext(ctx)
		db.Close()
	}
	if err != nil {
		return exitcode.Failure(fmt.Errorf("store %s: %w: %s", redact(location), ErrUnreachable, text.OneLine(err.Error())))
	}
	return nil
}

// sqliteFile checks the SQLite file at path before the driver opens it
// (the driver would follow a link): an existing file must be a regular
// file of the effective user's, as must its -wal, -shm and -journal
// files, so a link planted in a results root others can write to is
// refused, never written through. A missing file is created here, new
// (O_EXCL, O_NOFOLLOW), when create; else it is refused (exit 2): a
// reader (history, dashboard) never makes an empty database. It returns
// the file's identity, which must still be there once the driver opened
// it (sameFile).
func sqliteFile(path string, create bool) (fs.FileInfo, error) {
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		side, err := os.Lstat(path + suffix)
		if err != nil {
			continue
		}
		if err := safefile.Owned(path+suffix, side, false); err != nil {
			return nil, exitcode.BadInputf("store %v", err)
		}
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, exitcode.BadInputf("store %s does not exist; import results first (abtest store import DIR), or give --store", path)
		}
		return createFile(path)
	}
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("store %s: %w: %v", path, ErrUnreachable, err))
	}
	if err := safefile.Owned(path, fi, false); err != nil {
		return nil, exitcode.BadInputf("store %v", err)
	}
	return fi, nil
}

// storeDir refuses a SQLite file in a directory others can write
// without the sticky bit: they could replace the files abtest checked.
func storeDir(path string) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return exitcode.BadInputf("store %s: its directory %s is writable by others without the sticky bit; chmod o-w or +t it, or give --store elsewhere", path, dir)
	}
	return nil
}

// sideFiles creates the SQLite file's -wal and -shm files where they are
// missing, new (O_EXCL, O_NOFOLLOW), before the driver opens the file:
// the driver would create them following a link planted at their names
// after sqliteFile looked. Once they are abtest's, nobody else can
// replace them in a sticky directory (storeDir).
func sideFiles(path string) error {
	for _, suffix := range []string{"-wal", "-shm"} {
		f, err := safefile.Create(path+suffix, 0o644)
		if errors.Is(err, fs.ErrExist) {
			side, lerr := os.Lstat(path + suffix)
			if lerr == nil {
				lerr = safefile.Owned(path+suffix, side, false)
			}
			if lerr != nil {
				return exitcode.BadInputf("store %v", lerr)
			}
			continue
		}
		if err != nil {
			return exitcode.Failure(fmt.Errorf("store %s: %w: %v", path, ErrUnreachable, err))
		}
		f.Close()
	}
	return nil
}

func createFile(path string) (fs.FileInfo, error) {
	if err := safefile.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, exitcode.Failure(fmt.Errorf("store %s: %w: %v", path, ErrUnreachable, err))
	}
	f, err := safefile.Create(path, 0o644)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("store %s: %w: %v", path, ErrUnreachable, err))
	}
	defer f.Close()
	return f.Stat()
}

// sameFile refuses a SQLite file that is no longer the one sqliteFile
// checked (replaced by a link between the check and the driver's open).
func sameFile(path string, checked fs.FileInfo) error {
	fi, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, checked) || fi.Mode()&fs.ModeSymlink != 0 {
		return exitcode.BadInputf("store %s: the file changed while it was opened; check who else writes its directory", path)
	}
	return nil
}
