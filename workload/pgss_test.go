package workload

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
)

// TestPgssOneReading: the sampler reads pg_stat_statements as one row
// of arrays, and the reading at the end gives the top statements in the
// same pass (issue 27: under churn each reading of the view is the
// observer's main cost). Both must say what a row an entry said: the
// same entries, calls and classes, abtest's own left out, an entry
// admitted after the first reading classed like the others, and the
// same top statements as the query that listed them apart.
func TestPgssOneReading(t *testing.T) {
	t.Parallel()
	st, _ := startCluster(t, 5000)
	ctx := context.Background()
	connect := func() *pgx.Conn {
		conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	conn, client := connect(), connect()
	exec := func(sql string) {
		t.Helper()
		if _, err := client.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, marker+" CREATE TABLE kinds_t (x int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, marker+" SELECT pg_stat_statements_reset()"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		for range i % 7 {
			exec(fmt.Sprintf("WITH hot_%d AS (SELECT 1) SELECT * FROM hot_%d", i, i))
		}
		exec(fmt.Sprintf("WITH cold_%d AS (SELECT pg_sleep(%g)) SELECT * FROM cold_%d", i, float64(i%5)/1000, i))
	}
	// The longest statement by far, so that it heads the top list: at
	// 20 ms a cold statement of 0–4 ms, its backend descheduled in a
	// loaded suite (s14d), took 394 ms and headed it instead.
	exec("SELECT   pg_sleep(1),\n\tcount(*)  FROM pg_class")
	exec(marker + " SELECT 2")
	w, _ := Builtin("churn")
	sm := &sampler{conn: conn, w: w}

	// What a row an entry says.
	type row struct {
		id, calls int64
		class     int
	}
	want := func() []row {
		rows, err := conn.Query(ctx, marker+` SELECT queryid, calls, CASE WHEN query LIKE 'WITH hot\_%' THEN 1 WHEN query LIKE 'WITH cold\_%' THEN 2 ELSE 0 END
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%/* abtest */%'`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.calls, &x.class)
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
		return out
	}
	got := func() []row {
		es, err := sm.entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]row, len(es))
		for i, e := range es {
			if e.age != -1 {
				t.Errorf("entry %d: age %v on PostgreSQL 15, which has no stats_since", e.id, e.age)
			}
			out[i] = row{e.id, e.calls, e.class}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
		return out
	}
	first := got()
	if w := want(); !reflect.DeepEqual(first, w) {
		t.Fatalf("entries:\n got %v\nwant %v", first, w)
	}
	classes := map[int]int{}
	for _, r := range first {
		classes[r.class]++
	}
	// 30 cold, the hot ones run at least once (i%7 > 0), pg_class's;
	// abtest's own are left out.
	if classes[1] != 26 || classes[2] != 30 || classes[0] != 1 {
		t.Errorf("classes %v, want 26 hot, 30 cold, 1 other", classes)
	}

	exec("WITH hot_999 AS (SELECT 1) SELECT * FROM hot_999")
	second := got()
	if len(second) != len(first)+1 || !reflect.DeepEqual(second, want()) {
		t.Fatalf("after a new entry:\n got %v\nwant %v", second, want())
	}

	// The probe's sums by kind, as the probe's own query read them
	// before they were folded into these readings.
	wantKinds := func() map[string]KindCounters {
		rows, err := conn.Query(ctx, marker+` SELECT upper(coalesce(substring(ltrim(query) from '^[A-Za-z]+'), 'OTHER')), sum(calls)::int8, sum(rows)::int8
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%/* abtest */%'
GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]KindCounters{}
		for rows.Next() {
			var k string
			var c KindCounters
			if err := rows.Scan(&k, &c.Calls, &c.Rows); err != nil {
				t.Fatal(err)
			}
			m[k] = c
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	kinds, err := sm.baseline(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := wantKinds(); !reflect.DeepEqual(kinds, w) || len(w) != 2 || w["WITH"].Calls != 87+1+30 || w["SELECT"].Calls != 1 {
		t.Errorf("kinds at the baseline:\n got %v\nwant %v", kinds, w)
	}
	if len(sm.calls) != len(second) {
		t.Errorf("the baseline noted the calls of %d entries, want %d", len(sm.calls), len(second))
	}
	exec("INSERT INTO kinds_t SELECT 1")
	f, top, last, err := sm.final(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds = last.kinds
	if w := wantKinds(); !reflect.DeepEqual(kinds, w) || w["INSERT"].Calls != 1 || w["INSERT"].Rows != 1 {
		t.Errorf("kinds at the end:\n got %v\nwant %v", kinds, w)
	}
	if f.Entries != len(second)+1 || f.Hot != 27 || f.Cold != 30 {
		t.Errorf("final %+v, want %d entries, 27 hot, 30 cold", f, len(second)+1)
	}
	rows, err := conn.Query(ctx, marker+` SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 120), calls, mean_exec_time, max_exec_time
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%/* abtest */%'
ORDER BY total_exec_time DESC LIMIT 10`)
	if err != nil {
		t.Fatal(err)
	}
	wantTop, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Statement, error) {
		var s Statement
		return s, r.Scan(&s.Query, &s.Calls, &s.MeanMS, &s.MaxMS)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 10 || top[0].Query != "SELECT pg_sleep($1), count(*) FROM pg_class" || !reflect.DeepEqual(top, wantTop) {
		t.Errorf("top statements:\n got %v\nwant %v", top, wantTop)
	}
}

// TestKindOf: a statement's kind is the letters it begins with, as
// the regular expression '^[A-Za-z]+' on the server found them.
func TestKindOf(t *testing.T) {
	for head, want := range map[string]string{
		"select 1": "SELECT", "INSERT INTO t": "INSERT", "With x AS (": "WITH", "SELECT1": "SELECT",
		"(SELECT 1)": "OTHER", "/* c */ SELECT": "OTHER", "": "OTHER", "\nSELECT": "OTHER", "VACUUM;": "VACUUM",
	} {
		if got := kindOf(head); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", head, got, want)
		}
	}
}
