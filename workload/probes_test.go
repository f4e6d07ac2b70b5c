package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/results"
)

// TestOpenLoopSaturation (issue 25): select1 offered far beyond what
// this host commits, for 3 s, is saturated with the reason, whatever
// its progress reports say; offered well below, it is not; a closed
// loop never is.
func TestOpenLoopSaturation(t *testing.T) {
	st, install := startCluster(t, 5000)
	w, _ := Builtin("select1")
	for _, tc := range []struct {
		rate      float64
		saturated bool
	}{{1e6, true}, {200, false}, {0, false}} {
		s := spec(st, install, w)
		s.Rate = tc.rate
		res, err := runner().Run(context.Background(), s)
		if err != nil {
			t.Fatalf("-R %g: %v", tc.rate, err)
		}
		sat := res.Saturation
		if tc.rate == 0 {
			if sat != nil || res.Saturated {
				t.Errorf("closed loop: saturation %+v", sat)
			}
			continue
		}
		if sat == nil {
			t.Fatalf("-R %g: no saturation recorded", tc.rate)
		}
		t.Logf("-R %g: offered %.0f tx/s, committed %.0f tx/s (%d tx), backlog %.2f s (lag avg %.0f ms, max %.0f ms): saturated %v (%s)",
			tc.rate, sat.OfferedTPS, sat.CommittedTPS, res.Summary.Processed, sat.BacklogS, res.Summary.LagAvgMS, res.Summary.LagMaxMS, sat.Saturated, sat.Reason)
		if sat.Saturated != tc.saturated || res.Saturated != tc.saturated {
			t.Errorf("-R %g: saturated %v (result %v), want %v", tc.rate, sat.Saturated, res.Saturated, tc.saturated)
		}
		m := res.Metrics
		if m[results.MetricOfferedTPS] != tc.rate || m[results.MetricBacklog] != sat.BacklogS || m[results.MetricTPS] != sat.CommittedTPS {
			t.Errorf("-R %g: metrics offered %v backlog %v tps %v; saturation %+v", tc.rate, m[results.MetricOfferedTPS], m[results.MetricBacklog], m[results.MetricTPS], sat)
		}
		warned := strings.Contains(strings.Join(res.Warnings, "\n"), "saturated: "+sat.Reason)
		if tc.saturated && (!strings.Contains(sat.Reason, "of the 1000000 tx/s offered") || !warned) {
			t.Errorf("-R %g: reason %q, warnings %q", tc.rate, sat.Reason, res.Warnings)
		}
		if !tc.saturated && (sat.Reason != "" || warned || sat.CommittedTPS < 0.8*tc.rate || sat.BacklogS > 1) {
			t.Errorf("-R %g: reason %q, committed %.0f tx/s, backlog %.2f s", tc.rate, sat.Reason, sat.CommittedTPS, sat.BacklogS)
		}
	}
}

// updateWorkload makes a table of 1 000 accounts and a history table,
// neither vacuumed by autovacuum, and a workload file whose transaction
// updates one account and inserts one history row.
func updateWorkload(t *testing.T, st *cluster.State) Workload {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL) WITH (autovacuum_enabled = off)",
		"INSERT INTO acct SELECT i, 0 FROM generate_series(1, 1000) i",
		"CREATE TABLE hist (id bigserial PRIMARY KEY, acct int NOT NULL) WITH (autovacuum_enabled = off)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	closeAndWait(t, conn)
	script := filepath.Join(t.TempDir(), "upd.sql")
	text := "\\set id random(1, 1000)\nBEGIN;\nUPDATE acct SET n = n + 1 WHERE id = :id;\nINSERT INTO hist (acct) VALUES (:id);\nEND;\n"
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Resolve("file:" + script)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestProbesExplainUpdates (issue 25): a timed run of a workload that
// updates and inserts shows the rows it wrote per transaction exactly,
// HOT updates, dead tuples and WAL records per transaction, the tables'
// and indexes' growth and buffer hits; autovacuum, off on its tables,
// ran 0 times (a value, not a missing one). A transaction holding its
// snapshot through a second run shows as the oldest xmin, at least as
// old as the transactions committed meanwhile. Open-loop at
// plumbingRate: the proofs are per transaction, and 1415 transactions
// still grow the tables and age the holder's snapshot; alone 3.0 CPU-s
// against 6.5 closed-loop, 8-9 s of wall (load 2.6-3.6).
func TestProbesExplainUpdates(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 5000)
	ctx := context.Background()
	s := spec(st, install, updateWorkload(t, st))
	s.Rate = plumbingRate
	res, err := runner().Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Probe == nil {
		t.Fatalf("no probe: %v", res.Warnings)
	}
	m, tb := res.Metrics, res.Probe.Tables
	t.Logf("%d tx: %+v; metrics %v", res.Summary.Processed, tb, m)
	if m[results.MetricTupUpdPerTx] != 1 || m[results.MetricTupInsPerTx] != 1 || m[results.MetricTupDelPerTx] != 0 {
		t.Errorf("rows per tx: updated %v inserted %v deleted %v, want exactly 1, 1, 0 (%d tx, %+v)",
			m[results.MetricTupUpdPerTx], m[results.MetricTupInsPerTx], m[results.MetricTupDelPerTx], res.Summary.Processed, tb)
	}
	if hot := m[results.MetricHOTUpdatePct]; hot <= 0 || hot > 100 || tb.HotUpd <= 0 {
		t.Errorf("HOT updates %d of %d: %v %%", tb.HotUpd, tb.Upd, hot)
	}
	if m[results.MetricDeadTupGrowth] <= 0 || m[results.MetricDeadTupPerTx] <= 0 {
		t.Errorf("dead tuples grew by %v (%v per tx)", m[results.MetricDeadTupGrowth], m[results.MetricDeadTupPerTx])
	}
	if m[results.MetricWALRecordsPerTx] < 3 {
		t.Errorf("WAL records per tx %v, want at least an update's, an insert's and a commit's", m[results.MetricWALRecordsPerTx])
	}
	if m[results.MetricIndexGrowth] <= 0 || m[results.MetricTableGrowth] <= 0 || m[results.MetricIndexGrowthPerTx] <= 0 || m[results.MetricBuffersHitPerTx] < 2 {
		t.Errorf("growth table %v index %v B (%v B/tx), buffer hits %v per tx", m[results.MetricTableGrowth], m[results.MetricIndexGrowth], m[results.MetricIndexGrowthPerTx], m[results.MetricBuffersHitPerTx])
	}
	for _, name := range []string{results.MetricAutovacuumRuns, results.MetricAutoanalyzeRuns, results.MetricBuffersReadPerTx, results.MetricOldestXminAge} {
		if _, ok := m[name]; !ok {
			t.Errorf("%s missing: void %v", name, res.Void)
		}
	}
	if m[results.MetricAutovacuumRuns] != 0 {
		t.Errorf("autovacuum ran %v times on tables it is off for", m[results.MetricAutovacuumRuns])
	}
	free := m[results.MetricOldestXminAge]

	cfg, _ := pgx.ParseConfig(st.ConnString(cluster.Database))
	cfg.RuntimeParams["application_name"] = "xmin-holder"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT count(*) FROM acct"); err != nil {
		t.Fatal(err)
	}
	held, err := runner().Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	// Every committed transaction took an xid after the holder's
	// snapshot.
	age, ok := held.Metrics[results.MetricOldestXminAge]
	var sampled int64
	for _, smp := range held.Samples {
		sampled = max(sampled, smp.XminAge)
	}
	t.Logf("oldest xmin age: %v free, %v held over %d tx (samples up to %d)", free, age, held.Summary.Processed, sampled)
	if !ok || age < float64(held.Summary.Processed) || held.OldestXminAge == nil || float64(*held.OldestXminAge) != age || age <= free {
		t.Errorf("oldest xmin age with a holder %v (%v), without %v; %d tx committed", age, ok, free, held.Summary.Processed)
	}
	if sampled <= 0 {
		t.Errorf("no sample saw the holder's xmin: %+v", held.Samples)
	}
}
