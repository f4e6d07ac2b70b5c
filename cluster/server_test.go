package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestDataDirAtAndRunningProcesses: a server found by its port reports
// the data directory abtest started it in, and its processes are the
// postmaster and its children; once stopped, none are listed and
// RunningProcesses is a usage error.
func TestDataDirAtAndRunningProcesses(t *testing.T) {
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
