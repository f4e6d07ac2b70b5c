// Package testpg holds the helpers of tests that start real PostgreSQL
// servers: a cluster manager that runs them as the server account, a
// copy of an install a test may change, and stopping every cluster a
// test started when it ends.
//
// As root, servers run as the postgres account (PostgreSQL refuses to
// run as root); otherwise as the caller. A missing prerequisite (the
// account, runuser, the binaries) skips the test, or fails it under
// ABTEST_REQUIRE=1, through internal/testenv.
//
// Only tests import this package; it imports cluster and build, so the
// internal tests of those two packages (package cluster, package build)
// cannot use it and keep their own few lines.
package testpg

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// Account returns the account test servers run as: nil when the tests
// are not root (servers run as the caller), else the postgres account.
func Account(t testing.TB) *proc.User {
	t.Helper()
	name := testenv.ServerUser(t)
	if name == "" {
		return nil
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		// ServerUser found the account with id(1): not finding it here
		// is a defect, not a missing prerequisite.
		t.Fatalf("the server account %s: %v", name, err)
	}
	safefile.TrustAccount(int(u.UID)) // as workspace.Clusters does
	return u
}

// Manager returns a cluster manager over a new data root the server
// account can enter, running servers as Account; every cluster of it
// still running when the test ends is stopped.
func Manager(t testing.TB) *cluster.Manager {
	t.Helper()
	return ManagerAt(t, filepath.Join(labOf(t).dir(t, "data-"), "data"))
}

// ManagerAt is Manager over the data root root, which the test owns
// (e.g. the PG_DATA_DIR it gives abtest): every cluster under root still
// running when the test ends is stopped, whoever started it.
func ManagerAt(t testing.TB, root string) *cluster.Manager {
	t.Helper()
	m := &cluster.Manager{Root: root, Run: &proc.Runner{}, User: Account(t)}
	l := labOf(t)
	l.mu.Lock()
	l.managers = append(l.managers, m)
	l.mu.Unlock()
	return m
}

// StopAll stops every cluster under m's root that runs and removes it,
// with its socket directory (outside the test's directories, in /tmp).
// It goes by the data directories, not by List, so that a cluster whose
// start failed after its server started is stopped too; it forces the
// stop, as a test that failed may still hold a cluster. A failure fails
// t.
func StopAll(t testing.TB, m *cluster.Manager) {
	t.Helper()
	entries, err := os.ReadDir(m.Root)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stopping the clusters under %s: %v", m.Root, err)
		}
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		_, err := m.ForceStop(context.Background(), e.Name())
		if errors.Is(err, cluster.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Errorf("stopping cluster %s: %v", e.Name(), err)
			continue
		}
		if err := removeCluster(m, e.Name()); err != nil {
			t.Errorf("removing cluster %s: %v", e.Name(), err)
		}
	}
}

// removeCluster removes cluster name, trying again for up to 5 s when a
// process still writes into it ("directory not empty"): after a test
// kills abtest -9, a backend of the killed run can outlive its
// postmaster for a moment (issue 24's open "pre-existing shared memory
// block" defect), and one failed removal was seen in a full run.
func removeCluster(m *cluster.Manager, name string) error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = m.Remove(context.Background(), name); err == nil || !errors.Is(err, syscall.ENOTEMPTY) || time.Now().After(deadline) {
			return err
		}
		_, _ = m.ForceStop(context.Background(), name)
	}
}

// A lab is what one test made through this package. Its end is one
// cleanup, registered at the test's first call here: it stops the
// clusters of its managers first and removes its directories (data
// roots, copies of installs) after, whatever order the test made them
// in; a copy removed before its server stopped would leave no pg_ctl to
// stop it.
type lab struct {
	mu       sync.Mutex
	managers []*cluster.Manager
	dirs     []string
}

var labs sync.Map // testing.TB → *lab

func labOf(t testing.TB) *lab {
	if l, ok := labs.Load(t); ok {
		return l.(*lab)
	}
	l, loaded := labs.LoadOrStore(t, &lab{})
	if !loaded {
		t.Cleanup(func() { l.(*lab).end(t) })
	}
	return l.(*lab)
}

func (l *lab) end(t testing.TB) {
	labs.Delete(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.managers {
		StopAll(t, m)
	}
	for _, d := range l.dirs {
		os.RemoveAll(d)
	}
}

// dir makes a directory the server account can enter (t.TempDir is
// root's alone when the tests run as root), removed at the lab's end. Its
// name has a fixed length (testenv.MkdirTemp says why).
func (l *lab) dir(t testing.TB, prefix string) string {
	t.Helper()
	d, err := testenv.MkdirTemp("abtest-test-" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.dirs = append(l.dirs, d)
	l.mu.Unlock()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// CopyInstall copies the install src (e.g. testenv.PGInstall) into a new
// directory the server account can enter, where a test may replace its
// binaries, removed after the test's clusters stopped; with a
// fingerprint it holds a build record of that fingerprint, as a build
// leaves. Debian's binaries find their share directory relative to bin
// (../../../../share/postgresql/15), so the copy keeps that layout and
// links share to the system's.
func CopyInstall(t testing.TB, src, fingerprint string) string {
	t.Helper()
	root := labOf(t).dir(t, "install-")
	install := filepath.Join(root, "usr", "lib", "postgresql", filepath.Base(src))
	if err := os.MkdirAll(filepath.Dir(install), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, install).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", src, err, out)
	}
	out, err := exec.Command(filepath.Join(src, "bin", "pg_config"), "--sharedir").Output()
	if err != nil {
		t.Fatalf("pg_config --sharedir of %s: %v", src, err)
	}
	if share := strings.TrimSpace(string(out)); share != "" {
		link := filepath.Join(root, "usr", "share", "postgresql", filepath.Base(share))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(share, link); err != nil {
			t.Fatal(err)
		}
	}
	if fingerprint != "" {
		data, err := json.Marshal(build.Info{Name: "test", Install: install, Fingerprint: fingerprint})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(install, build.InfoFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return install
}
