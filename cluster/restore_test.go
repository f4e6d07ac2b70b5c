package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// TestRestoreStopped: a build's stop (StopUsingFor) is recorded in the
// cluster's state before the server stops; RestoreStopped leaves alone
// the record of a live process (this one) and starts again, on its port
// and settings, a cluster whose recorder is gone: here a recorder of
// this pid but another start time, as a reused pid would be.
func TestRestoreStopped(t *testing.T) {
	t.Parallel()
	install := testpg.CopyInstall(t, testenv.PGInstall(t), "")
	m := testpg.Manager(t)
	ctx := context.Background()
	st, err := m.Start(ctx, "u", cluster.Options{Install: install, Settings: []cluster.Setting{{Name: "work_mem", Value: "7MB"}}})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := m.StopUsingFor(ctx, install, "a test build")
	if err != nil || len(stopped) != 1 {
		t.Fatalf("StopUsingFor: %v %v", stopped, err)
	}
	rec, err := m.ReadState("u")
	if err != nil || rec.Stopped == nil || rec.Stopped.PID != os.Getpid() || rec.Stopped.Why != "a test build" {
		t.Fatalf("the stop is not recorded: %+v %v", rec, err)
	}
	if got := m.RestoreStopped(ctx); len(got) != 0 {
		t.Errorf("a live recorder's cluster restored: %v", got)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Fatal("restored while its recorder lives")
	}
	// The same pid, another start time: another process.
	path := filepath.Join(st.DataDir, "abtest.state.json")
	data, _ := os.ReadFile(path)
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["stopped"].(map[string]any)["start_ticks"] = rec.Stopped.StartTicks + 1
	data, _ = json.Marshal(raw)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got := m.RestoreStopped(ctx)
	if len(got) != 1 || got[0].Err != nil || !strings.HasPrefix(got[0].String(), "restored cluster u on port") {
		t.Fatalf("RestoreStopped = %v", got)
	}
	after, err := m.ReadState("u")
	// Its port, unless another test's server took it while u was
	// stopped (a remembered port is a preference).
	moved := err == nil && after.Port != st.Port
	if _, held := cluster.PortHolder(st.Port); moved && !held {
		t.Errorf("restored on port %d, not its free port %d", after.Port, st.Port)
	}
	if _, running := cluster.PID(st.DataDir); err != nil || !running || after.Settings["work_mem"] != "7MB" || after.Stopped != nil {
		t.Errorf("after restore: running %v, %+v, %v", running, after, err)
	}
	if got := m.RestoreStopped(ctx); len(got) != 0 {
		t.Errorf("restored twice: %v", got)
	}
	// A stop its recorder keeps (a matrix's own cluster at the run's
	// end) is forgotten: nothing starts it again.
	if _, err := m.StopUsingFor(ctx, install, "a test build"); err != nil {
		t.Fatal(err)
	}
	if err := m.KeepStopped("u"); err != nil {
		t.Fatal(err)
	}
	if kept, err := m.ReadState("u"); err != nil || kept.Stopped != nil {
		t.Errorf("KeepStopped left %+v, %v", kept, err)
	}
}
