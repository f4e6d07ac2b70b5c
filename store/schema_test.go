package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateVersion1: a store written at schema version 1 (metrics by
// name, no plans) is migrated on Open: its metric values are in the
// cells' metrics column and still read through the metrics view, an instruction
// configuration is marked as one, and the run's shard waits for its plan.
func TestMigrateVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFile)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	v1 := &Store{db: db, where: path}
	saved := migrations
	migrations = migrations[:1]
	err = v1.migrate(ctx)
	migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{
		`INSERT INTO hosts VALUES ('h', 'bench1', 'cpu', 2, 1024, '6.1', '{}')`,
		`INSERT INTO runs VALUES ('r', '2025-01-01T00:00:00Z', 'base', 2, 'test', '{}', '[]', '2025-01-01T00:00:00Z')`,
		`INSERT INTO run_shards VALUES ('r', '1/1', '/x', 'h', '2025-01-01T00:00:00Z', '[]')`,
		`INSERT INTO configurations VALUES ('select1/instr/cpuall', 'select1', 1, 0, '{}'), ('select1/c1/cpuall', 'select1', 1, 0, '{}')`,
		`INSERT INTO cells (id, run_id, cell, shard, commit_label, config, repeat, seq, status, saturated, started_at, duration_s, error, artifacts)
			VALUES (1, 'r', 'c1', '1/1', 'base', 'select1/c1/cpuall', 1, 1, 'ok', 0, '', 1, '', '{}')`,
		`INSERT INTO metrics VALUES (1, 'tps', 1234.5), (1, 'latency_avg_ms', 0.8)`,
	} {
		if _, err := db.Exec(st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	db.Close()

	// A dry run's open refuses the old schema and leaves it as it is.
	if s, err := OpenCurrent(ctx, path); err == nil || !strings.Contains(err.Error(), "schema version 1") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("OpenCurrent of a version-1 store: %v", err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Version(ctx); err != nil || v != SchemaVersion || v != 9 {
		t.Fatalf("version %d, %v", v, err)
	}
	var got []string
	rows, err := s.db.Query("SELECT metric || '=' || value FROM metrics WHERE cell_id = 1 ORDER BY metric")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m string
		rows.Scan(&m)
		got = append(got, m)
	}
	rows.Close()
	var cellMetrics string
	var instr int
	s.db.QueryRow("SELECT metrics FROM cells WHERE id = 1").Scan(&cellMetrics)
	s.db.QueryRow("SELECT count(*) FROM configurations WHERE instructions = 1 AND id = 'select1/instr/cpuall'").Scan(&instr)
	if strings.Join(got, " ") != "latency_avg_ms=0.8 tps=1234.5" || cellMetrics != `{"latency_avg_ms":0.8,"tps":1234.5}` || instr != 1 {
		t.Errorf("after the migration: metrics %q, metrics column %s, %d instruction configurations", got, cellMetrics, instr)
	}
	if _, err := s.Shards(ctx, "r"); err == nil || !strings.Contains(err.Error(), "import /x again") {
		t.Errorf("a run stored without its plan: %v", err)
	}
}

// TestMigrateVersion8Cache: a store of schema 8, whose runs carry a
// cached analysis (verdicts, pooled tests, answers, gate, run_judged),
// opens migrated: the cache's tables and columns are gone, the run is
// still listed with its commits, shards and cells, its cells read as
// before, and an import again finds every cell there.
func TestMigrateVersion8Cache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFile)
	saved := migrations
	migrations = migrations[:8]
	s, err := Open(ctx, path)
	if err != nil {
		migrations = saved
		t.Fatal(err)
	}
	dir := filepath.Join("..", "results", "testdata", "v1")
	st, err := s.Import(ctx, dir)
	migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO run_judged VALUES ('` + st.Run + `', 'v-old', '2025-01-01T00:00:00Z', '[]')`,
		`INSERT INTO verdicts (run_id, commit_label, config, metric, verdict, n, gated, note, role) VALUES ('` + st.Run + `', 'patch', 'c', 'tps', 'worse', 3, 1, '', 'gated')`,
		`INSERT INTO run_answers VALUES ('` + st.Run + `', 'patch', 0, 1, 0, 0, 0, 0, 0, 0, NULL, NULL, 'tps worse')`,
		`INSERT INTO run_geomeans (run_id, commit_label, metric, verdict, configs) VALUES ('` + st.Run + `', 'patch', 'tps', 'worse', 1)`,
		`UPDATE runs SET gate = 'regression', gate_detail = 'cached'`,
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	before, err := s.CellMetrics(ctx, st.Run)
	if err != nil || len(before) != st.Cells {
		t.Fatalf("%d cells' metrics at version 8 (%d cells), %v", len(before), st.Cells, err)
	}
	s.Close()

	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Version(ctx); err != nil || v != 9 {
		t.Fatalf("version %d after the migration, %v", v, err)
	}
	for _, q := range []string{"SELECT 1 FROM run_judged", "SELECT 1 FROM verdicts", "SELECT 1 FROM run_answers", "SELECT 1 FROM run_geomeans", "SELECT gate FROM runs"} {
		if _, err := s.db.Exec(q); err == nil {
			t.Errorf("after the migration, %q still reads", q)
		}
	}
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != st.Run || runs[0].Cells != st.Cells || len(runs[0].Commits) != 2 || len(runs[0].Shards) != 1 {
		t.Fatalf("after the migration: runs %+v, %v", runs, err)
	}
	after, err := s.CellMetrics(ctx, st.Run)
	if err != nil || len(after) != len(before) {
		t.Errorf("after the migration: %d cells' metrics, %d before, %v", len(after), len(before), err)
	}
	again, err := s.Import(ctx, dir)
	if err != nil || again.Cells != 0 || again.Present != st.Cells {
		t.Errorf("importing again after the migration: %+v, %v", again, err)
	}
}
