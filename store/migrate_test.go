package store_test

import (
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pgabtest/abtest/store"
)

// TestMigrateVersion5Metrics: a store of schema 5 (each cell's metrics
// as rows of cell_metrics) opens migrated to one metrics column per
// cell, on both engines: every value as it was to the last bit (75 of
// the fixture's 160 need more than 15 digits), the metrics view and
// history's series as before, the run analysed from the store as from
// its files, and an import again finds every cell there.
func TestMigrateVersion5Metrics(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		checkMigrateMetrics(t, filepath.Join(t.TempDir(), store.DefaultFile))
	})
	t.Run("postgres", func(t *testing.T) {
		checkMigrateMetrics(t, startPostgres(t))
	})
}

func checkMigrateMetrics(t *testing.T, location string) {
	ctx := context.Background()
	s, err := store.Open(ctx, location)
	if err != nil {
		t.Fatal(err)
	}
	dir := fixture(t)
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.DowngradeTo5(ctx, s); err != nil {
		t.Fatal(err)
	}
	want, err := s.CellMetrics(ctx, st.Run)
	if err != nil || len(want) != st.Cells {
		t.Fatalf("%d cells' metrics at version 5 (%d cells), %v", len(want), st.Cells, err)
	}
	series, err := s.SeriesKeys(ctx)
	if err != nil || len(series) == 0 {
		t.Fatalf("series at version 5: %v, %v", series, err)
	}
	viewRows := count(t, s, "metrics")
	s.Close()

	if s, err = store.Open(ctx, location); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Version(ctx); err != nil || v != store.SchemaVersion {
		t.Fatalf("version %d after the migration, %v", v, err)
	}
	got, err := s.CellMetrics(ctx, st.Run)
	if err != nil || !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("after the migration, %v: %d cells' metrics differ from version 5's", err, len(got))
	}
	if n := count(t, s, "metrics"); n != viewRows {
		t.Errorf("the metrics view has %d rows after the migration, %d before", n, viewRows)
	}
	if after, err := s.SeriesKeys(ctx); err != nil || !reflect.DeepEqual(after, series) {
		t.Errorf("series after the migration %v (%v), before %v", after, err, series)
	}
	if _, err := s.DB().Exec("SELECT 1 FROM cell_metrics"); err == nil {
		t.Error("cell_metrics is still there after the migration")
	}
	checkFromStore(t, s, st.Run, dir)
	again, err := s.Import(ctx, dir)
	if err != nil || again.Cells != 0 || again.Present != st.Cells {
		t.Errorf("importing again after the migration: %+v, %v", again, err)
	}
}
