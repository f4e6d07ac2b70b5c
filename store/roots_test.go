package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestOpenNeverFollowsALink (issue 24 item 1): an abtest.db planted in a
// results root as a link to a file of root's, or planted as nobody's own
// file, or with a planted -wal link, is refused (exit 2) and the file is
// left as it was.
func TestOpenNeverFollowsALink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: files owned by nobody")
	}
	ctx := context.Background()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	plant := func(name string) string {
		dir := t.TempDir() // not sticky: fs.protected_symlinks does not apply
		link := filepath.Join(dir, name)
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		os.Lchown(link, 65534, 65534)
		return filepath.Join(dir, DefaultFile)
	}
	nobodys := filepath.Join(t.TempDir(), DefaultFile)
	os.WriteFile(nobodys, nil, 0o666)
	os.Chown(nobodys, 65534, 65534)
	for _, path := range []string{plant(DefaultFile), plant(DefaultFile + "-wal"), nobodys} {
		for _, open := range []func(context.Context, string) (*Store, error){Open, func(ctx context.Context, l string) (*Store, error) { return OpenFor(ctx, l, false) }} {
			s, err := open(ctx, path)
			if err == nil {
				s.Close()
			}
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), path) {
				t.Errorf("open %s: %v; want exit 2 naming it", path, err)
			}
		}
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("the store wrote through a link: %d bytes", len(data))
	}
	if fi, _ := os.Stat(nobodys); fi.Size() != 0 {
		t.Errorf("nobody's file written: %d bytes", fi.Size())
	}
}

// TestParse: the locations a store may have, and those refused.
func TestParse(t *testing.T) {
	for loc, want := range map[string]string{
		"/x/abtest.db": "path /x/abtest.db", "rel.db": "path rel.db", "sqlite:/x/a.db": "path /x/a.db",
		"postgres://u@h/db": "postgres", "postgresql://h:5433/db": "postgres",
		"ftp://example/x": "exit 2", "postgres://bad host:x/db": "exit 2", "sqlite:": "exit 2", "": "exit 2", "https://h/x": "exit 2",
	} {
		pg, path, err := Parse(loc)
		got := "path " + path
		switch {
		case err != nil && exitcode.Code(err) == exitcode.Usage:
			got = "exit 2"
		case err != nil:
			got = err.Error()
		case pg:
			got = "postgres"
		}
		if got != want {
			t.Errorf("Parse(%q) = %s; want %s", loc, got, want)
		}
	}
	if _, _, err := Parse("postgres://u:secret@bad host:x/db"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a URL that does not parse: %v; want an error without the password", err)
	}
}

// TestOpenMakesItsSideFiles: the store makes its -wal and -shm files
// itself (new, not through a link), so the driver never creates them
// where a link could be planted between the check and its open; a store
// in a directory others can write without the sticky bit is refused
// (exit 2), in a sticky one it opens.
func TestOpenMakesItsSideFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, DefaultFile)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if fi, err := os.Lstat(path + suffix); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s%s while open: %v", DefaultFile, suffix, err)
		}
	}
	s.Close()
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	if s, err := Open(ctx, filepath.Join(shared, DefaultFile)); err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "sticky") {
		if s != nil {
			s.Close()
		}
		t.Errorf("a store in a 0777 directory: %v; want exit 2 saying why", err)
	}
	if _, err := os.Stat(filepath.Join(shared, DefaultFile)); err == nil {
		t.Error("the refused store left a database file")
	}
	os.Chmod(shared, os.ModeSticky|0o777)
	s, err = Open(ctx, filepath.Join(shared, DefaultFile))
	if err != nil {
		t.Fatalf("a store in a 1777 directory: %v", err)
	}
	s.Close()
}
