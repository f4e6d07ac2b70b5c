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
	if v, err := s.Version(ctx); err != nil || v != SchemaVersion || v != 8 {
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

// TestMigrateVersion4Roles: a store written at schema version 4 (its
// verdicts without a role) opens migrated, and its run's cached
// judgement, written before the analysis was a cache, is stale: no
// verdict of it is read as current, and Stale lists the run to judge
// again (history's tests show the judgement then has roles).
func TestMigrateVersion4Roles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFile)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "results", "testdata", "v1")
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	j := &Judged{Version: "v-test", Cells: st.Cells, Verdicts: []Verdict{{Commit: "patch", Config: "c", Metric: "tps", Verdict: "same", Role: "gated"}}}
	if ok, err := s.PutJudged(ctx, st.Run, j); !ok || err != nil {
		t.Fatalf("caching a judgement: %v, %v", ok, err)
	}
	if got, err := s.Verdicts(ctx, st.Run, "v-test"); err != nil || len(got) != 1 || got[0].Role != "gated" {
		t.Fatalf("cached verdicts: %+v, %v", got, err)
	}
	// Back to version 4, as an older abtest left it.
	if err := DowngradeTo5(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE verdicts DROP COLUMN role", "DELETE FROM schema_version WHERE version = 5"} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Verdicts(ctx, st.Run, "v-test"); err != nil || len(got) != 0 {
		t.Fatalf("after the migration: %d verdicts read as current (want none: the run was judged before the cache), %v", len(got), err)
	}
	if stale, err := s.Stale(ctx, "v-test"); err != nil || len(stale) != 1 || stale[0] != st.Run {
		t.Fatalf("after the migration: stale %v (want [%s]), %v", stale, st.Run, err)
	}
}
