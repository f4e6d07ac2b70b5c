package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

const nobody = 65534

// TestDefaultDirNeverAdopted: nobody pre-creates abtest_<UTC second>
// (0777) in a results root of mode 1777 (issue 24 item 1): the default
// name is another, new directory, and a directory nobody makes under the
// chosen name before the run does is refused, not written into. An -o
// DIR of nobody's is refused before anything runs.
func TestDefaultDirNeverAdopted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: files owned by nobody")
	}
	root := filepath.Join(t.TempDir(), "results")
	os.Mkdir(root, 0o755)
	os.Chmod(root, 0o777|os.ModeSticky)
	plan := &results.Plan{Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	guessed := filepath.Join(root, "abtest_20260102T030405Z")
	mkNobody(t, guessed)
	dir, err := OutputDir(plan, "", root)
	if err != nil {
		t.Fatal(err)
	}
	if dir == guessed || !strings.HasPrefix(dir, guessed+"_") {
		t.Errorf("default directory %s; want a new one beside nobody's %s", dir, guessed)
	}
	mkNobody(t, dir)
	if held, err := results.LockRun(dir); exitcode.Code(err) != exitcode.Usage {
		if held != nil {
			held.Release()
		}
		t.Errorf("LockRun of a directory nobody made meanwhile: %v; want exit 2", err)
	}
	if _, err := OutputDir(plan, guessed, root); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), guessed) {
		t.Errorf("-o nobody's directory: %v; want exit 2 naming it", err)
	}
}

// TestReportNeverFollowsLinks: report.md planted as a link to a file of
// root's is not written through.
func TestReportNeverFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "report.md"))
	if err := Write(dir, &analysis.Report{Plan: &results.Plan{}}); err == nil {
		t.Error("Write through a link: no error")
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("report written through a link: %q", data)
	}
}

func mkNobody(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}
