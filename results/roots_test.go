package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// nobody is the uid of a hostile local user in a results root others can
// write to (issue 24 item 1).
const nobody = 65534

// sharedRoot is a results root of mode 1777, as on a shared benchmark
// host, and victim a file of root's outside it, holding "precious\n".
func sharedRoot(t *testing.T) (root, victim string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: files owned by nobody")
	}
	root = filepath.Join(t.TempDir(), "results")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim = filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, victim
}

// nobodyDir is a directory nobody made in root, mode 0777 (not sticky,
// so fs.protected_symlinks does not hide a link planted in it).
func nobodyDir(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plant links dir/name to target as nobody would.
func plant(t *testing.T, dir, name, target string) {
	t.Helper()
	link := filepath.Join(dir, name)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

func unchanged(t *testing.T, victim string) {
	t.Helper()
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("root wrote through a link: victim now %q", data)
	}
}

// TestLockRunRefusesAnotherUsersDir: nobody's run2/ with cells.jsonl
// linked to a root file (issue 24 item 1): a run refuses the directory
// (exit 2, naming it and the fix), and appending a cell never writes
// through the link.
func TestLockRunRefusesAnotherUsersDir(t *testing.T) {
	root, victim := sharedRoot(t)
	run2 := nobodyDir(t, root, "run2")
	plant(t, run2, CellsFile, victim)
	held, err := LockRun(run2)
	if err == nil {
		held.Release()
	}
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("LockRun of nobody's 0777 directory: %v; want exit 2", err)
	} else if msg := err.Error(); !strings.Contains(msg, run2) || !strings.Contains(msg, "owned by uid 65534") {
		t.Errorf("refusal %q does not name the directory and its owner", msg)
	}
	if err := AppendRecord(run2, &Record{Cell: "c1"}); err == nil {
		t.Error("AppendRecord through a link: no error")
	}
	if _, err := Repair(run2); err == nil {
		t.Error("Repair through a link: no error")
	}
	unchanged(t, victim)
	// A new directory inside nobody's (not sticky: nobody could rename
	// it and put a link in its place) is refused before it is made.
	inside := filepath.Join(run2, "mine")
	if _, err := LockRun(inside); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("LockRun inside nobody's directory: %v; want exit 2", err)
	}
	if _, err := os.Lstat(inside); err == nil {
		t.Errorf("%s was made", inside)
	}
	// The user's own directory, group-writable, is refused too.
	own := filepath.Join(root, "own")
	os.Mkdir(own, 0o755)
	os.Chmod(own, 0o775)
	if _, err := LockRun(own); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "chmod go-w") {
		t.Errorf("LockRun of a group-writable directory: %v; want exit 2 saying chmod go-w", err)
	}
}

// TestWritesNeverFollowLinks: in a directory that passes no check (the
// writers are the last line of defence), plan.json's temporary file and
// cells.jsonl planted as links are never written through.
func TestWritesNeverFollowLinks(t *testing.T) {
	root, victim := sharedRoot(t)
	dir := nobodyDir(t, root, "run3")
	plant(t, dir, PlanFile+".tmp", victim)
	plant(t, dir, CellsFile, victim)
	// plan.json is written by a rename, which replaces a link, never
	// follows it; in a directory of nobody's the rename is refused too
	// (nobody could swap the file after it), and either way the victim
	// stays.
	if err := WritePlan(dir, &Plan{Version: Version}); err == nil {
		if fi, err := os.Lstat(filepath.Join(dir, PlanFile)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("plan.json: %v, %v; want a regular file", fi, err)
		}
	} else if !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("WritePlan in nobody's directory: %v", err)
	}
	if err := AppendRecord(dir, &Record{Cell: "c1"}); err == nil {
		t.Error("AppendRecord through a link: no error")
	}
	unchanged(t, victim)
	// A regular cells.jsonl of nobody's is not appended to either.
	other := nobodyDir(t, root, "run4")
	cells := filepath.Join(other, CellsFile)
	os.WriteFile(cells, nil, 0o666)
	os.Chown(cells, nobody, nobody)
	if err := AppendRecord(other, &Record{Cell: "c1"}); err == nil {
		t.Error("AppendRecord to nobody's cells.jsonl: no error")
	}
}
