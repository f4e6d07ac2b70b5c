package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

func TestSplitGUCList(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":                     nil,
		"  ":                   nil,
		"*":                    {"*"},
		"localhost, 127.0.0.1": {"localhost", "127.0.0.1"},
		`"a b", c`:             {"a b", "c"},
		`"a""b"`:               {`a"b`},
	} {
		got, ok := splitGUCList(in)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("splitGUCList(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"not an addr;;", "a,", ",a", "a,,b", `"a`, `""`, "a b"} {
		if got, ok := splitGUCList(bad); ok {
			t.Errorf("splitGUCList(%q) = %q, want invalid", bad, got)
		}
	}
}

// TestBadListenLeavesClusterRunning: a listen_addresses postgres -C does
// not check is refused before the running cluster is touched (exit 2),
// and one that passes every check but that the server cannot bind
// brings the cluster back as it was, its old abtest.conf with it.
func TestBadListenLeavesClusterRunning(t *testing.T) {
	t.Parallel()
	m, install := newManager(t)
	ctx := context.Background()
	st := start(t, m, "bx", Options{Install: install})
	pid, _ := PID(st.DataDir)
	conf := filepath.Join(st.DataDir, ConfFile)
	before, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}

	_, err = m.Start(ctx, "bx", Options{Install: install, Listen: "not an addr;;"})
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("Start with a bad listen list = %v, want exit 2", err)
	}
	if now, ok := PID(st.DataDir); !ok || now != pid {
		t.Errorf("after a refused listen list the server is pid %d (running %v), was %d", now, ok, pid)
	}

	// 192.0.2.1 (TEST-NET-1) is no address of this host: the postmaster
	// exits (could not create any TCP/IP sockets).
	_, err = m.Start(ctx, "bx", Options{Install: install, Listen: "192.0.2.1"})
	if err == nil {
		t.Fatal("Start listening on 192.0.2.1 succeeded")
	}
	if _, ok := PID(st.DataDir); !ok {
		t.Errorf("after a failed restart (%v) the cluster is down", err)
	}
	if after, _ := os.ReadFile(conf); string(after) != string(before) {
		t.Errorf("abtest.conf after a failed restart:\n%s\nwant:\n%s", after, before)
	}
	if again, err := m.ReadState("bx"); err != nil || again.Listen != "" {
		t.Errorf("state after a failed restart: %+v, %v", again, err)
	}
}
