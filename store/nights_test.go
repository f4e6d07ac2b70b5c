package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pgabtest/abtest/store"
	"github.com/pgabtest/abtest/store/storetest"
)

// TestNightsUnderDir: a nightly job's nights are the runs stored from
// under its runs directory; a run from elsewhere in the same store is
// neither a night nor a point of the nights' series, though History
// (every run) has it. On SQLite and on PostgreSQL.
func TestNightsUnderDir(t *testing.T) {
	checkNights(t, openSQLite(t))
}

func TestNightsUnderDirPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), startPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkNights(t, s)
}

func checkNights(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	nights, _ := storetest.Nights(filepath.Join(root, "runs"), 3, nil)
	other, _ := storetest.Nights(filepath.Join(root, "elsewhere"), 4, nil)
	for _, d := range append(nights, other[3]) {
		if _, err := s.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Nights(ctx, filepath.Join(root, "runs"), "head")
	if err != nil || len(got) != 3 {
		t.Fatalf("nights: %+v, %v", got, err)
	}
	for i, nt := range got {
		if nt.Head != storetest.NightSHA(i) || nt.Base != storetest.BaseSHA || nt.Dir != nights[i] || nt.Failed != "" || len(nt.Regressions) != 0 {
			t.Errorf("night %d = %+v", i, nt)
		}
	}
	series, err := s.NightSeries(ctx, filepath.Join(root, "runs"), []string{"tps"})
	if err != nil || len(series) != 1 || len(series[0].Points) != 3 || series[0].Metric != "tps" {
		t.Errorf("night series: %+v, %v", series, err)
	}
	all, _ := s.History(ctx, store.HistoryQuery{Metric: "tps", Config: "select1/c16"})
	if len(all.Points) != 4 {
		t.Errorf("history of every run: %d points, want 4", len(all.Points))
	}
	if none, err := s.Nights(ctx, filepath.Join(root, "run"), "head"); err != nil || len(none) != 0 {
		t.Errorf("a directory that is only a prefix of runs/: %+v, %v", none, err)
	}
}

// TestExists: a dry run reads a store that exists and creates none.
func TestExists(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.DefaultFile)
	if store.Exists(path) || store.Exists("") {
		t.Error("a missing SQLite file exists")
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !store.Exists(path) || !store.Exists("sqlite:"+path) || !store.Exists("postgres://db.example/abtest") {
		t.Error("an existing store or a URL does not exist")
	}
}
