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
// other values and one more metric, is stored once, with the first
// copy's values, as the analysis of the directory keeps it; the
// verdicts from the store are those of the files.
func checkDuplicateCell(t *testing.T, s *store.Store) {
	ctx := context.Background()
	dir := fixture(t)
	rec, lines := firstRecord(t, dir)
	metrics := rec["metrics"].(map[string]any)
	first := metrics["tps"].(float64)
	metrics["tps"] = first * 3
	metrics["dup_only"] = 1.0
	// The copy last: a sort by cell name must not put it first.
	writeCells(t, dir, append(lines, jsonLine(t, rec)))
	cell := rec["cell"].(string)

	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatalf("importing a directory with cell %s twice: %v", cell, err)
	}
	if want := len(lines) - 1; st.Cells != want || st.Present != 0 {
		t.Errorf("import: %+v, want %d new cells", st, want)
	}
	var tps float64
	var n, dup int
	rows, err := s.DB().Query("SELECT c.cell, m.metric, m.value FROM metrics m JOIN cells c ON c.id = m.cell_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c, m string
		var v float64
		if err := rows.Scan(&c, &m, &v); err != nil {
			t.Fatal(err)
		}
		if c == cell && m == "tps" {
			tps = v
			n++
		}
		if m == "dup_only" {
			dup++
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if tps != first || n != 1 || dup != 0 {
		t.Errorf("cell %s: tps stored %d times, %v (first copy %v), the second copy's own metric %d times", cell, n, tps, first, dup)
	}
	checkFromStore(t, s, st.Run, dir)
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
	in, err := s.Input(ctx, st.Run)
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
