package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestDataDirAtAndRunningProcesses: a server found by its port reports
// the data directory abtest started it in, and its processes are the
// postmaster and its children; once stopped, none are listed and
// RunningProcesses is a usage error.
func TestDataDirAtAndRunningProcesses(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	st := start(t, m, "bydir", Options{Install: install, AutoPort: true, PgssMax: DefaultPgssMax, MaxClients: 4})
	ctx := context.Background()
	dir, err := DataDirAt(ctx, st.Port, st.SocketDir, SuperUser)
	if err != nil || !sameDir(dir, st.DataDir) {
		t.Fatalf("DataDirAt = %q, %v; want %s", dir, err, st.DataDir)
	}
	pids, err := RunningProcesses(dir)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := PID(st.DataDir)
	if got := pids(); len(got) < 2 || !slices.Contains(got, pm) {
		t.Errorf("processes %v: want the postmaster %d and its children", got, pm)
	}
	if _, err := m.Stop(ctx, "bydir"); err != nil {
		t.Fatal(err)
	}
	if _, err := RunningProcesses(dir); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("stopped: err %v (code %d), want exit 2", err, exitcode.Code(err))
	}
	if _, err := DataDirAt(ctx, st.Port, st.SocketDir, SuperUser); exitcode.Code(err) != exitcode.Infra {
		t.Errorf("stopped: DataDirAt err %v, want exit 3", err)
	}
}

// TestReadEnvAndPickCPUs: a bad name and a cluster without env.sh are
// exit 2 naming how to make one; -C 1 is one online CPU.
func TestReadEnvAndPickCPUs(t *testing.T) {
	t.Parallel()
	m := &Manager{Root: t.TempDir()}
	if _, err := m.ReadEnv("../x"); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("bad name: %v", err)
	}
	if _, err := m.ReadEnv("none"); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "abtest switch none") {
		t.Errorf("no env.sh: %v", err)
	}
	if _, err := m.ProcessesOf("none"); err == nil {
		t.Error("processes of a cluster that does not exist")
	}
	cpus, err := PickCPUs("1")
	if err != nil || len(cpus) != 1 {
		t.Errorf("PickCPUs(1) = %v, %v", cpus, err)
	}
	if _, err := PickCPUs("100000"); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("PickCPUs(100000): %v", err)
	}
}
