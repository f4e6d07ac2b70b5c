package workload

import (
	"context"
	"testing"
	"time"
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
