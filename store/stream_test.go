package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

func TestImportStreamedSQLite(t *testing.T) {
	checkImportStreamed(t, func() *store.Store { return openSQLite(t) })
}

func TestImportStreamedPostgres(t *testing.T) {
	url := startPostgres(t)
	n := 0
	checkImportStreamed(t, func() *store.Store {
		n++
		return openDatabase(t, url, fmt.Sprintf("streamed_%d", n))
	})
}

// openDatabase opens a store in a new database name of url's cluster.
func openDatabase(t *testing.T, url, name string) *store.Store {
	t.Helper()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db := strings.Replace(url, "postgres:///"+cluster.Database+"?", "postgres:///"+name+"?", 1)
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// streamedDir writes a results directory of the fixture's plan and
// 5 000 lines of its cells (the fixture's 40, each again in 124 more
// repeats with other values: 3.8 MB, several of the decoder's blocks),
// a line that does not decode in the middle and cells twice (the second
// copy with other values); it returns the directory and the lines.
func streamedDir(t *testing.T) (string, []string) {
	dir := fixture(t)
	_, lines := firstRecord(t, dir)
	lines = lines[:len(lines)-1] // the "" after the last newline
	var out []string
	for r := 1; r <= 125; r++ {
		for i, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if r > 1 {
				// Repeat q of the fixture is repeat q+1000(r-1) here.
				q := int(rec["repeat"].(float64))
				rep := q + 1000*(r-1)
				rec["cell"] = strings.Replace(rec["cell"].(string), fmt.Sprintf("/r%d/", q), fmt.Sprintf("/r%d/", rep), 1)
				rec["repeat"] = rep
				rec["seq"] = (r-1)*len(lines) + i + 1
				if m, ok := rec["metrics"].(map[string]any); ok {
					for k, v := range m {
						m[k] = v.(float64) * (1 + float64((r*7+i)%13-6)/200)
					}
				}
			}
			// (A cell recorded twice is refused: checkDuplicateCell.)
			out = append(out, jsonLine(t, rec))
		}
		if r == 60 {
			out = append(out, `{"cell":"torn/r1/base","seq":`+"\n")
		}
	}
	writeCells(t, dir, out)
	return dir, out
}

// checkImportStreamed: an import of 5 000 lines (a torn one among them)
// stores every cell once with its metric values, and judges on read;
// and of a run still being written it stores a prefix of the file,
// exactly as the import of that prefix does.
func checkImportStreamed(t *testing.T, open func() *store.Store) {
	ctx := context.Background()
	dir, lines := streamedDir(t)
	old := open()
	st, err := old.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The verdicts are the analysis run on read.
	want := dump(t, old)
	rep, err := history.Judge(ctx, old, st.Run, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Cells != 5000 || len(want["cells"]) != 5000 || len(want["metrics"]) < 5000 || len(rep.Rows) == 0 || len(st.Warnings) == 0 {
		t.Fatalf("import: %+v, %d cells, %d metric values, %d rows judged", st, len(want["cells"]), len(want["metrics"]), len(rep.Rows))
	}

	// A run still being written: the first thousand lines there, the
	// rest appended while the import reads, a line torn across writes.
	live := filepath.Join(t.TempDir(), "live")
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	plan, err := os.ReadFile(filepath.Join(dir, results.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, results.PlanFile), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	writeCells(t, live, lines[:1000])
	f, err := os.OpenFile(filepath.Join(live, results.CellsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		defer f.Close()
		for i := 1000; i < len(lines); i += 7 {
			part := strings.Join(lines[i:min(i+7, len(lines))], "")
			half := len(part) / 2
			if _, err := f.WriteString(part[:half]); err != nil {
				wrote <- err
				return
			}
			if _, err := f.WriteString(part[half:]); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	s := open()
	got, err := s.Import(ctx, live)
	if werr := <-wrote; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The prefix of the lines that holds the cells stored.
	seen := map[string]bool{}
	n := 0
	for n < len(lines) && len(seen) < got.Cells {
		var rec struct{ Cell string }
		if json.Unmarshal([]byte(lines[n]), &rec) == nil {
			seen[rec.Cell] = true
		}
		n++
	}
	t.Logf("a run being written: %d of %d lines stored", n, len(lines))
	prefix := filepath.Join(t.TempDir(), "prefix")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, results.PlanFile), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	writeCells(t, prefix, lines[:n])
	whole := open()
	if _, err := whole.Import(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	compareDumps(t, "a run being written", dump(t, s), dump(t, whole))
}

// dump is what a store holds of its runs, by table, each row as text in
// a fixed order (the cells without their ids, nor the imports' times
// and directories).
func dump(t *testing.T, s *store.Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, q := range map[string]string{
		"cells": `SELECT run_id, cell, shard, commit_label, config, repeat, seq, status, saturated, started_at, duration_s, error, artifacts, detail, metrics
			FROM cells ORDER BY run_id, cell`,
		"metrics":        `SELECT c.cell, m.metric, m.value FROM metrics m JOIN cells c ON c.id = m.cell_id ORDER BY 1, 2`,
		"configurations": `SELECT * FROM configurations ORDER BY id`,
		"runs":           `SELECT id, created, baseline, ncommits, options, metric_defs FROM runs ORDER BY id`,
		"commits":        `SELECT * FROM commits ORDER BY run_id, label`,
	} {
		rows, err := s.DB().Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			out[name] = append(out[name], fmt.Sprintf("%#v", vals))
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func compareDumps(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	for table, rows := range want {
		if len(got[table]) != len(rows) {
			t.Errorf("%s: %d rows of %s, want %d", what, len(got[table]), table, len(rows))
			continue
		}
		for i := range rows {
			if got[table][i] != rows[i] {
				t.Errorf("%s: %s row %d:\n%s\nwant\n%s", what, table, i, got[table][i], rows[i])
				break
			}
		}
	}
}
