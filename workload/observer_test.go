package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testenv"
	"github.com/pgabtest/abtest/internal/testpg"
)

// TestObserverCost: a real cell records what measuring it cost, each
// part positive, the whole below a sane bound; sampling far more often
// costs more, so the figure follows the sampler (issue 27).
func TestObserverCost(t *testing.T) {
	st, install := startCluster(t, 5000)
	w, _ := Builtin("select1")
	run := func(every, waitEvery time.Duration) *Observer {
		s := spec(st, install, w)
		s.Duration = 3 * time.Second
		s.SampleEvery, s.WaitEvery = every, waitEvery
		res, err := runner().Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		o := res.Observer
		if o == nil {
			t.Fatal("no observer cost recorded")
		}
		t.Logf("sample every %v, waits every %v: %s; %d queries, window %.2f s, backend %.4f s, abtest %.4f s, log %.4f s (%d lines), pgbench %.3f s, server %.2f s",
			every, waitEvery, o.Line(), o.Queries, o.WindowS, o.BackendS, o.AbtestS, o.PgbenchLogS, o.LoggedTx, o.PgbenchS, o.ServerS)
		if o.WindowS < 2.5 || o.BackendS <= 0 || o.AbtestS <= 0 || o.PgbenchS <= 0 || o.ServerS <= 0 || o.Queries <= 0 {
			t.Errorf("a part is missing: %+v", *o)
		}
		if o.PgbenchLogS <= 0 || o.LoggedTx != res.LoggedTx {
			t.Errorf("pgbench logging %v s for %d lines (the run logged %d)", o.PgbenchLogS, o.LoggedTx, res.LoggedTx)
		}
		return o
	}
	normal := run(5*time.Second, time.Second)
	// The window is 3 s, so the probes around it weigh more than in a
	// 30 s cell: measuring costs something, far from a core's worth.
	if pct := normal.PctOfCore(); pct <= 0 || pct > 10 || normal.PctOfTotal() > 10 {
		t.Errorf("observer cost %.2f %% of one core, %.2f %% of the total", pct, normal.PctOfTotal())
	}
	busy := run(10*time.Millisecond, 2*time.Millisecond)
	if busy.Queries < 20*normal.Queries {
		t.Errorf("%d queries at 2 ms intervals, %d at 1 s", busy.Queries, normal.Queries)
	}
	if busy.BackendS < 5*normal.BackendS || busy.PctOfCore() < 2*normal.PctOfCore() {
		t.Errorf("sampling ~500 times as often: backend %.4f s against %.4f s, cost %.2f %% against %.2f %%",
			busy.BackendS, normal.BackendS, busy.PctOfCore(), normal.PctOfCore())
	}
}

// TestSessionsKeepTheBackend: with Sessions, a run reuses the
// connection of the run before it on the same server (a warm-up's), so
// its backend's catalog caches are warm and its readings cost the
// server less than a new backend's did; the probe stays (the kept
// connection is the run's own, not a foreign backend). A run refused
// for too many clients leaves the connection kept; a restarted server
// gets a new one (issue 27).
func TestSessionsKeepTheBackend(t *testing.T) {
	install := testenv.PGInstall(t)
	m := testpg.Manager(t)
	ctx := context.Background()
	opts := cluster.Options{Install: install, PgssMax: 1000, MaxClients: 16}
	st, err := m.Start(ctx, "w", opts)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Builtin("select1")
	r := runner()
	r.Sessions = &Sessions{}
	defer r.Sessions.Close()
	kept := func() int {
		t.Helper()
		r.Sessions.mu.Lock()
		defer r.Sessions.mu.Unlock()
		if len(r.Sessions.idle) != 1 {
			t.Fatalf("%d connections kept, want 1", len(r.Sessions.idle))
		}
		for _, se := range r.Sessions.idle {
			return int(se.conn.PgConn().PID())
		}
		return 0
	}
	run := func(s Spec) *Result {
		t.Helper()
		res, err := r.Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Probe == nil {
			t.Errorf("no probe: %v", res.Warnings)
		}
		return res
	}
	s := spec(st, install, w)
	s.Duration, s.SampleEvery, s.WaitEvery = 2*time.Second, 5*time.Second, time.Second
	first := run(s)
	pid := kept()
	second := run(s)
	if p := kept(); p != pid {
		t.Errorf("the second run's connection has backend %d, the first's %d", p, pid)
	}
	t.Logf("backend CPU: a new backend %.1f ms, the kept one %.1f ms", 1000*first.Observer.BackendS, 1000*second.Observer.BackendS)
	if second.Observer.BackendS > 0.7*first.Observer.BackendS {
		t.Errorf("the kept backend's readings cost %.1f ms, a new backend's %.1f ms", 1000*second.Observer.BackendS, 1000*first.Observer.BackendS)
	}
	many := s
	many.Clients = 500
	if _, err := r.Run(ctx, many); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "max_connections") {
		t.Errorf("too many clients on a kept connection: %v", err)
	}
	if p := kept(); p != pid {
		t.Errorf("after a refused run backend %d is kept, want %d", p, pid)
	}
	if _, err := m.Stop(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if st, err = m.Start(ctx, "w", opts); err != nil {
		t.Fatal(err)
	}
	run(spec(st, install, w))
	if p := kept(); p == pid {
		t.Errorf("after a restart the dead backend %d's connection is kept", p)
	}
}
