package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestForBuild(t *testing.T) {
	t.Parallel()
	if got := ForBuild("base"); got != "m-base" {
		t.Errorf("ForBuild(base) = %q", got)
	}
	long := strings.Repeat("x", 64)
	got := ForBuild(long)
	if len(got) != 64 || !strings.HasPrefix(got, MatrixPrefix+"x") || got == ForBuild(long[:63]+"y") {
		t.Errorf("ForBuild of 64 characters = %q", got)
	}
}

// TestQuiesce: a quiet period makes a new cluster (initdb) or
// reconfigures a running one with its options, runs fn on the stopped
// data directory with the options written into abtest.conf, and leaves
// the cluster stopped, saying whether it stopped a running server; fn's
// error is returned; the next Start brings the cluster back.
func TestQuiesce(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	t.Cleanup(func() { m.Stop(context.Background(), "q") })
	opts := Options{Install: install, Settings: []Setting{{"work_mem", "3MB"}}}
	var seen *State
	check := func(st *State) error {
		seen = st
		if _, running := PID(st.DataDir); running {
			t.Error("fn runs while the server runs")
		}
		// fn's own server (valgrind's) needs the socket directory.
		if fi, err := os.Lstat(st.SocketDir); err != nil || !fi.IsDir() {
			t.Errorf("socket directory in the quiet period: %v", err)
		}
		conf, err := os.ReadFile(filepath.Join(st.DataDir, ConfFile))
		if err != nil || !strings.Contains(string(conf), "work_mem = '3MB'") {
			t.Errorf("abtest.conf in the quiet period: %v\n%s", err, conf)
		}
		return nil
	}
	stopped, err := m.Quiesce(ctx, "q", opts, check)
	if err != nil || stopped || seen == nil || seen.Action != Created || !seen.Initialized {
		t.Fatalf("Quiesce of a new cluster = %v, %v; state %+v", stopped, err, seen)
	}

	st := start(t, m, "q", Options{Install: install})
	if stopped, err := m.Quiesce(ctx, "q", opts, check); err != nil || !stopped || seen.Action != Restarted {
		t.Errorf("Quiesce of a running cluster = %v, %v (action %s)", stopped, err, seen.Action)
	}
	if _, running := PID(st.DataDir); running {
		t.Error("the cluster runs after its quiet period")
	}
	if _, err := os.Lstat(seen.SocketDir); err == nil {
		t.Errorf("the stopped cluster kept its socket directory %s after its quiet period", seen.SocketDir)
	}
	boom := errors.New("boom")
	if stopped, err := m.Quiesce(ctx, "q", opts, func(*State) error { return boom }); !errors.Is(err, boom) || stopped {
		t.Errorf("Quiesce with a failing fn = %v, %v", stopped, err)
	}
	// Released: another quiet period or a start may follow.
	if again, err := m.Start(ctx, "q", opts); err != nil || again.Action != Started {
		t.Errorf("Start after the quiet period = %v", err)
	}
}
