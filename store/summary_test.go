package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
)

// TestRunSummary: a stored run is named by its directory and keeps its
// plan's metric definitions; an import again changes neither.
func TestRunSummary(t *testing.T) {
	ctx := context.Background()
	dirs, err := storetest.Shards(filepath.Join(t.TempDir(), "pgss-ab"), 42, []host.Host{{Hostname: "node1"}})
	if err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t)
	check := func(when string) {
		t.Helper()
		runs, err := s.Runs(ctx)
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s: runs %v, %v", when, runs, err)
		}
		if r := runs[0]; r.Name() != "shard1" || len(r.Metrics) == 0 {
			t.Errorf("%s: name %q, %d metric definitions", when, r.Name(), len(r.Metrics))
		}
	}
	if _, err := s.Import(ctx, dirs[0]); err != nil {
		t.Fatal(err)
	}
	check("import")
	if again, err := s.Import(ctx, dirs[0]); err != nil || again.Cells != 0 {
		t.Fatalf("import again: %+v, %v", again, err)
	}
	check("import again")
}
