package testpg

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// CopyInstallPGXS is CopyInstall for a test that builds an extension with
// PGXS into the copy: share is copied (an extension installs its control
// and SQL files there, and the system's must stay as it is), the server
// headers are linked (postgresql-server-dev-15 on Debian; a missing one
// skips the test, or fails it under ABTEST_REQUIRE=1). The copy stays
// the caller's (root's when the tests are root): abtest installs an
// extension by copying what make staged, never by handing the install
// to the build account, and refuses an install that account can write.
func CopyInstallPGXS(t testing.TB, src, fingerprint string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(src, "bin", "pg_config"), "--pgxs", "--includedir-server").Output()
	lines := strings.Fields(string(out))
	testenv.Require(t, err == nil && len(lines) == 2 && exists(lines[0]) && exists(filepath.Join(lines[1], "postgres.h")),
		"PGXS and the server headers of %s (apt-get install postgresql-server-dev-15)", src)
	install := CopyInstall(t, src, fingerprint)
	root := strings.TrimSuffix(install, filepath.Join("usr", "lib", "postgresql", filepath.Base(src)))
	share, _ := exec.Command(filepath.Join(src, "bin", "pg_config"), "--sharedir").Output()
	link := filepath.Join(root, "usr", "share", "postgresql", filepath.Base(strings.TrimSpace(string(share))))
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", strings.TrimSpace(string(share)), link).CombinedOutput(); err != nil {
		t.Fatalf("copying share: %v: %s", err, out)
	}
	// INCLUDEDIR-SERVER is DIR/15/server: the copy's pg_config says it
	// under root.
	inc := filepath.Dir(filepath.Dir(lines[1]))
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(inc)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inc, filepath.Join(root, inc)); err != nil {
		t.Fatal(err)
	}
	return install
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
