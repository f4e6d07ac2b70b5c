package workload

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

func TestCheckCondition(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cond.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"none", "xmin-holder", "idle-slot", "autovacuum-off", "checkpoint-storm", "checkpoint-storm=0.5", "bulk-update", "bulk-update=5000", "file:" + script} {
		if err := CheckCondition(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "nosuch", "xmin-holder=3", "bulk-update=0", "bulk-update=NaN", "bulk-update=x", "checkpoint-storm=-1", "file:/nonexistent", "file:" + filepath.Dir(script), "file:cond.sh"} {
		err := CheckCondition(bad)
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: want a one-line usage error, got %v", bad, err)
		}
	}
	if s := ConditionSettings("idle-slot"); s["wal_level"] != "logical" {
		t.Errorf("idle-slot needs wal_level=logical, got %v", s)
	}
}

// TestConditionsHeldAndGone starts every built-in condition on a real
// server beside writes, checks it active with what it reached, stops it
// and checks nothing is left: no session, no snapshot, no slot, no table
// option. A session cut as a killed abtest's would be leaves nothing
// either.
func TestConditionsHeldAndGone(t *testing.T) {
	t.Parallel()
	st, _ := startCluster(t, 5000, cluster.Setting{Name: "wal_level", Value: "logical"})
	c := Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.connString(c.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	exec := func(q string) {
		t.Helper()
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE cond_t (id int PRIMARY KEY, v int)")
	exec("INSERT INTO cond_t SELECT g, g FROM generate_series(1, 20000) g")
	exec("ANALYZE cond_t")
	env := ConditionEnv{Conn: c, Proc: &proc.Runner{}, OutDir: t.TempDir()}
	want := map[string]string{"xmin-holder": "xmin_age", "idle-slot": "retained_wal_bytes", "autovacuum-off": "tables", "checkpoint-storm=0.3": "checkpoints", "bulk-update=2000": "rows_updated"}
	for name, fact := range want {
		h, err := StartCondition(ctx, name, env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := 0; i < 20; i++ { // writes: xids and WAL to hold back
			exec("UPDATE cond_t SET v = v + 1 WHERE id = " + strconv.Itoa(1+i))
		}
		// A checkpoint every 0.3 s shows after 0.7 s on a quiet host; at
		// load 7–10 the first took longer in 3 runs of 4. Its fact is
		// awaited, up to 15 s: Check says "not active" until it shows,
		// which once ended the wait at its first look (a warm suite,
		// s13c: no checkpoints in the first 0.7 s).
		var facts map[string]float64
		for end := time.Now().Add(15 * time.Second); ; {
			time.Sleep(700 * time.Millisecond)
			facts, err = h.Check(ctx)
			if facts[fact] > 0 || time.Now().After(end) {
				break
			}
		}
		if err != nil || !(facts[fact] > 0) {
			t.Errorf("%s: active? %v, facts %v (want %s > 0)", name, err, facts, fact)
		}
		if err := h.Stop(ctx); err != nil {
			t.Errorf("%s: stop: %v", name, err)
		}
		if err := h.Stop(ctx); err != nil {
			t.Errorf("%s: a second stop: %v", name, err)
		}
		assertNothingLeft(t, admin, name)
	}
	// A session that dies (abtest killed) takes the snapshot and the
	// temporary slot with it.
	for _, name := range []string{"xmin-holder", "idle-slot"} {
		h, err := StartCondition(ctx, name, env)
		if err != nil {
			t.Fatal(err)
		}
		h.conn.PgConn().Conn().Close()
		if err := h.waitGone(ctx); err != nil {
			t.Fatal(err)
		}
		assertNothingLeft(t, admin, name+" (session cut)")
	}
	// autovacuum-off left by a killed cell is reset by the next cell.
	h, err := StartCondition(ctx, "autovacuum-off", env)
	if err != nil {
		t.Fatal(err)
	}
	h.conn.Close(ctx)
	next, err := StartCondition(ctx, "none", env)
	if err != nil {
		t.Fatal(err)
	}
	next.Stop(ctx)
	assertNothingLeft(t, admin, "autovacuum-off (killed, then none)")
}

func assertNothingLeft(t *testing.T, admin *pgx.Conn, what string) {
	t.Helper()
	ctx := context.Background()
	var sessions, xmins, slots, options int
	// The short sessions that checked the condition end a moment after
	// they closed; what the condition held must be gone at once.
	for i := 0; i < 100; i++ {
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&sessions); err != nil || sessions == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := admin.QueryRow(ctx, `SELECT
 (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()),
 (SELECT count(*) FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()),
 (SELECT count(*) FROM pg_replication_slots),
 (SELECT count(*) FROM pg_class WHERE reloptions IS NOT NULL AND relname = 'cond_t')`).Scan(&sessions, &xmins, &slots, &options)
	if err != nil {
		t.Fatal(err)
	}
	// pg_stat_statements' and the sampler's sessions are not running here:
	// any other client backend is the condition's.
	if sessions+xmins+slots+options != 0 {
		t.Errorf("%s: left %d sessions, %d snapshots, %d slots, %d table options", what, sessions, xmins, slots, options)
	}
}

// TestConditionFile runs a custom condition's start, check and stop as
// the server's account, with the server in its environment; a failing
// check is an inactive condition naming the log.
func TestConditionFile(t *testing.T) {
	t.Parallel()
	st, _ := startCluster(t, 5000)
	u := testpg.Account(t)
	// The server's account writes its state where anyone can; the
	// script lies in a directory of root's alone (one in a directory
	// others can write is refused: TestHostileInputs), and its log in
	// the cell's.
	shared := testenv.SharedTempDir(t)
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(shared, "state")
	dir := testenv.SharedTempDir(t)
	script := filepath.Join(dir, "cond.sh")
	body := "#!/bin/sh\ncase $1 in\nstart) echo \"$(id -un) $PGPORT\" > " + state + ";;\ncheck) test -f " + state + ";;\nstop) rm -f " + state + ";;\nesac\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database}
	ctx := context.Background()
	h, err := StartCondition(ctx, "file:"+script, ConditionEnv{Conn: c, Proc: &proc.Runner{}, User: u, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(state)
	account := os.Getenv("USER")
	if u != nil {
		account = u.Name
	}
	if want := account + " " + strconv.Itoa(st.Port) + "\n"; string(got) != want {
		t.Errorf("start ran as/with %q, want %q", got, want)
	}
	// What runs is the copy read when the condition started: the file
	// changed since is not run.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Check(ctx); err != nil {
		t.Errorf("check: %v", err)
	}
	os.Remove(state)
	if _, err := h.Check(ctx); err == nil || !strings.Contains(err.Error(), "condition.log") {
		t.Errorf("a failing check: %v, want an error naming the log", err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := os.Stat(h.copyDir); h.copyDir == "" || err == nil {
		t.Errorf("the script's copy %q is left after Stop", h.copyDir)
	}
}
