package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// reinstall replaces install's postgres with a fresh copy (a new inode,
// as make install and meson install do) and records fingerprint in its
// build record, as a build would.
func reinstall(t *testing.T, install, fingerprint string) {
	t.Helper()
	if fingerprint != "" {
		data, _ := json.Marshal(build.Info{Name: "l", Install: install, Fingerprint: fingerprint})
		if err := os.WriteFile(filepath.Join(install, build.InfoFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(install, "bin", "postgres")
	if out, err := exec.Command("cp", "-p", bin, bin+".new").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
}

func exeOf(t *testing.T, dir string) string {
	t.Helper()
	pid, ok := cluster.PID(dir)
	if !ok {
		t.Fatal("not running")
	}
	exe, err := procfs.Exe(pid)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestRestartOnReinstall: a cluster running install X whose binaries are
// replaced (another build fingerprint, or the same one rebuilt) is
// restarted by Start, and then runs the new binary, not "(deleted)".
func TestRestartOnReinstall(t *testing.T) {
	t.Parallel()
	src := testenv.PGInstall(t)
	m := testpg.Manager(t)
	ctx := context.Background()
	install := testpg.CopyInstall(t, src, "")
	start := func(name string, o cluster.Options) *cluster.State {
		t.Helper()
		st, err := m.Start(ctx, name, o)
		if err != nil {
			t.Fatalf("Start(%s): %v", name, err)
		}
		return st
	}
	reinstall(t, install, "fp-one")
	st := start("l", cluster.Options{Install: install})
	if st.Action != cluster.Created || st.Fingerprint != "fp-one" || !strings.HasPrefix(st.ServerVersion, "PostgreSQL 15") {
		t.Errorf("first start: action %s, fingerprint %q, version %q", st.Action, st.Fingerprint, st.ServerVersion)
	}
	if want := filepath.Join(install, "bin", "postgres"); st.Exe != want {
		t.Errorf("state exe %q, want %q", st.Exe, want)
	}
	if again := start("l", cluster.Options{Install: install}); again.Action != cluster.Unchanged {
		t.Errorf("same install again: %s (%s), want unchanged", again.Action, again.Reason)
	}

	for _, tc := range []struct{ what, fp, reason string }{
		{"another build", "fp-two", "build fingerprint changed"},
		{"the same build rebuilt (--force)", "", "binary was replaced"},
	} {
		pid1, _ := cluster.PID(st.DataDir)
		reinstall(t, install, tc.fp)
		if exe := exeOf(t, st.DataDir); !strings.HasSuffix(exe, " (deleted)") {
			t.Fatalf("%s: the old server's exe is %q; the test did not replace its binary", tc.what, exe)
		}
		st = start("l", cluster.Options{Install: install})
		if st.Action != cluster.Restarted || !strings.Contains(st.Reason, tc.reason) {
			t.Errorf("%s: Start %s (%s), want restarted: %s", tc.what, st.Action, st.Reason, tc.reason)
		}
		pid2, _ := cluster.PID(st.DataDir)
		if exe := exeOf(t, st.DataDir); strings.HasSuffix(exe, " (deleted)") || pid2 == pid1 {
			t.Errorf("%s: after Start the postmaster (pid %d, was %d) runs %q", tc.what, pid2, pid1, exe)
		}
		id, err := m.Identify("l")
		if err != nil || id.Replaced || id.PID != pid2 {
			t.Errorf("%s: Identify = %+v, %v", tc.what, id, err)
		}
	}
	if st.Fingerprint != "fp-two" {
		t.Errorf("state fingerprint %q, want fp-two", st.Fingerprint)
	}

	// The hook a build calls before installing: it stops the cluster
	// running X and nothing else; then nothing executes X's binaries.
	other := start("other", cluster.Options{Install: src})
	stopped, err := m.StopUsing(ctx, install)
	if err != nil || !slices.Equal(stopped, []string{"l"}) {
		t.Fatalf("StopUsing = %v, %v", stopped, err)
	}
	if users := build.InstallUsers(install); len(users) != 0 {
		t.Errorf("processes still run %s: %+v", install, users)
	}
	if _, ok := cluster.PID(other.DataDir); !ok {
		t.Error("StopUsing stopped a cluster of another install")
	}
	st = start("l", cluster.Options{Install: install})
	if st.Action != cluster.Started {
		t.Errorf("after StopUsing: %s, want started", st.Action)
	}
	if users := build.InstallUsers(install); len(users) < 4 {
		t.Errorf("InstallUsers = %+v, want the postmaster and its auxiliaries", users)
	}
}
