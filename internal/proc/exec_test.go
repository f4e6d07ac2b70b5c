package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// TestRootExecRule: as root, a program another account can write runs
// as Unprivileged, or not at all (exit 2); root's own program, named
// relative to the command's directory, runs as root.
func TestRootExecRule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is root's")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	id := "#!/bin/sh\nid -u\n"
	own := filepath.Join(dir, "own")
	if err := os.WriteFile(own, []byte(id), 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs")
	if err := os.WriteFile(theirs, []byte(id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// nobody must reach its program: t.TempDir's parent is private.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	ctx := context.Background()
	r := &Runner{}
	if out, err := r.Output(ctx, Cmd{Path: "../own", Dir: sub}); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("root's own program by a relative path: %q, %v", out, err)
	}
	_, err := r.Output(ctx, Cmd{Path: theirs})
	if !errors.Is(err, safefile.ErrUntrusted) || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("nobody's program without an unprivileged account: %v (exit %d)", err, exitcode.Code(err))
	}
	r.Unprivileged = &User{Name: "nobody", UID: 65534, GID: 65534}
	if out, err := r.Output(ctx, Cmd{Path: theirs}); err != nil || strings.TrimSpace(out) != "65534" {
		t.Errorf("nobody's program ran as %q, %v; want as 65534", out, err)
	}
}
