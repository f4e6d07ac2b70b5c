package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// firstRecord returns the first line of dir's cells.jsonl, decoded, and
// the file's lines.
func firstRecord(t *testing.T, dir string) (map[string]any, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, results.CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec, lines
}

func writeCells(t *testing.T, dir string, lines []string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + "\n"
}

func TestStoreDuplicateCellSQLite(t *testing.T) {
	checkDuplicateCell(t, openSQLite(t))
}

func TestStoreDuplicateCellPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), startPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkDuplicateCell(t, s)
}

// checkDuplicateCell: a cell twice in cells.jsonl, the second copy with
// other values and one more metric, is refused (exit 2, naming the
// cell), and nothing of the run is stored: the analysis of the directory
// calls its configuration incomplete, and the store keeps no one of two
// answers silently (issue 40).
func checkDuplicateCell(t *testing.T, s *store.Store) {
	ctx := context.Background()
	dir := fixture(t)
	rec, lines := firstRecord(t, dir)
	metrics := rec["metrics"].(map[string]any)
	metrics["tps"] = metrics["tps"].(float64) * 3
	metrics["dup_only"] = 1.0
	// The copy last: a sort by cell name must not put it first.
	writeCells(t, dir, append(lines, jsonLine(t, rec)))
	cell := rec["cell"].(string)

	_, err := s.Import(ctx, dir)
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), cell) {
		t.Fatalf("importing a directory with cell %s twice: %v (exit %d), want exit 2 naming it", cell, err, exitcode.Code(err))
	}
	for _, table := range []string{"runs", "cells", "metrics"} {
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows (%v) after the refused import", table, n, err)
		}
	}
}

// TestStoreInputManyMetrics: a cell of many metrics is read back in
// memory linear in them (a Set per metric was quadratic: 190 MB at
// 4 000 metrics), with every value.
func TestStoreInputManyMetrics(t *testing.T) {
	const k = 4000
	ctx := context.Background()
	s := openSQLite(t)
	dir := fixture(t)
	rec, lines := firstRecord(t, dir)
	metrics := rec["metrics"].(map[string]any)
	for i := range k {
		metrics[fmt.Sprintf("extra_%04d", i)] = float64(i)
	}
	lines[0] = jsonLine(t, rec)
	writeCells(t, dir, lines)
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	in, err := history.Input(ctx, s, st.Run)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	mb := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	t.Logf("%d metrics read back in %.1f MB", k, mb)
	if mb > 40 {
		t.Errorf("reading a run with a cell of %d metrics back allocated %.0f MB", k, mb)
	}
	for _, r := range in.Records {
		if r.Cell != rec["cell"] {
			continue
		}
		if r.Metrics.Len() != len(metrics) {
			t.Errorf("%s: %d metrics read back, %d stored", r.Cell, r.Metrics.Len(), len(metrics))
		}
		for name, v := range metrics {
			if got, ok := r.Metrics.Get(name); !ok || got != v {
				t.Errorf("%s %s = %v, %v; want %v", r.Cell, name, got, ok, v)
			}
		}
		return
	}
	t.Errorf("cell %v not read back", rec["cell"])
}
