package cluster_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// TestForeignInstall (issue 39, item 4): as root, a copy of Debian's
// install that nobody (uid 65534) owns is refused by Start in one line
// (exit 2) before anything of it runs: no data directory, no server
// (it once had its postgres --version run as root, and its cluster was
// then left running, abtest refusing to stop it). The same install is
// the caller's own when nobody invoked abtest through sudo: it starts,
// and abtest stops the cluster it started.
func TestForeignInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installs are checked only when abtest is root")
	}
	install := testpg.CopyInstall(t, testenv.PGInstall(t), "")
	usr := strings.TrimSuffix(install, "/lib/postgresql/15")
	if out, err := exec.Command("chown", "-R", "-h", "65534:65534", usr).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	m := testpg.Manager(t)
	ctx := context.Background()

	t.Setenv("SUDO_UID", "")
	_, err := m.Start(ctx, "f", cluster.Options{Install: install})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "install "+install) || !strings.Contains(err.Error(), "uid 65534") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Start from nobody's install = %v, want one line, exit 2, naming it and uid 65534", err)
	}
	if _, err := os.Lstat(filepath.Join(m.Root, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start made a data directory: %v", err)
	}

	t.Setenv("SUDO_UID", "65534")
	st, err := m.Start(ctx, "f", cluster.Options{Install: install})
	if err != nil {
		t.Fatalf("Start from the sudo caller's install: %v", err)
	}
	t.Setenv("SUDO_UID", "")
	// Started under sudo, stopped by root itself (cron, another shell):
	// a cluster abtest started is one it stops.
	if stopped, err := m.Stop(ctx, "f"); err != nil || !stopped {
		t.Errorf("Stop of the cluster started from the caller's install: %v, %v", stopped, err)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Errorf("the cluster still runs")
	}
}
