package testpg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// TestLabEndLeavesNoSocketDir: the clusters a test started through this
// package, one running and one stopped, leave nothing when the test
// ends: no data root, no socket directory, and no socket directory
// whose cluster is gone names a data directory of the test.
func TestLabEndLeavesNoSocketDir(t *testing.T) {
	install := testenv.PGInstall(t)
	var root string
	var socks []string
	t.Run("clusters", func(t *testing.T) {
		m := Manager(t)
		root = m.Root
		for _, name := range []string{"running", "stopped"} {
			st, err := m.Start(context.Background(), name, cluster.Options{Install: install})
			if err != nil {
				t.Fatal(err)
			}
			socks = append(socks, st.SocketDir)
		}
		if _, err := m.Stop(context.Background(), "stopped"); err != nil {
			t.Fatal(err)
		}
	})
	if len(socks) != 2 {
		t.Fatal("the subtest started no clusters")
	}
	for _, p := range append(socks, root) {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the test", p)
		}
	}
	orphans, err := (&cluster.Manager{Root: root, User: Account(t)}).Orphans()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range orphans {
		if strings.HasPrefix(o.DataDir, filepath.Dir(root)+"/") {
			t.Errorf("socket directory %s of a cluster of the ended test: %s", o.Dir, o.Reason)
		}
	}
}
