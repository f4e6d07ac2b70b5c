package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/results"
)

// openPoint is a synthetic open-loop point: pgbench's Poisson schedule
// at rate tx/s for secs seconds, served first come first served, each
// transaction taking svc seconds of a server that does nothing in the
// stalls ([from, to) seconds into the window). As pgbench does, a
// transaction begun before the window's end completes and is counted;
// one scheduled but not begun by then never runs.
type openPoint struct {
	rate, secs, svc float64
	stalls          [][2]float64
	seed            uint64
}

// run returns the point's transaction log (every transaction logged)
// and pgbench's summary of it.
func (p openPoint) run() (*TxLog, Summary) {
	const epoch = 1_700_000_000_000_000 // µs
	r := rand.New(rand.NewPCG(p.seed, 7))
	var log TxLog
	var sum Summary
	free := 0.0
	var lagMax float64
	for sched, n := r.ExpFloat64()/p.rate, int64(0); sched < p.secs; sched += r.ExpFloat64() / p.rate {
		begin := math.Max(sched, free)
		for _, st := range p.stalls {
			if begin >= st[0] && begin < st[1] {
				begin = st[1]
			}
		}
		if begin >= p.secs {
			break
		}
		end := begin + p.svc
		for _, st := range p.stalls {
			if begin < st[0] && end > st[0] {
				end += st[1] - st[0]
			}
		}
		free = end
		lagMax = math.Max(lagMax, begin-sched)
		log.tx = append(log.tx, loggedTx{client: 0, no: n, latencyUS: int64((end - sched) * 1e6), endUS: epoch + int64(end*1e6)})
		n++
	}
	sum.Processed = int64(len(log.tx))
	sum.TPS = float64(sum.Processed) / p.secs
	sum.LagMaxMS = 1000 * lagMax
	sum.Complete = true
	return &log, sum
}

// judge runs the point through what a cell does with its log (openLoop)
// and returns the result.
func (p openPoint) judge() *Result {
	log, sum := p.run()
	res := &Result{Duration: p.secs, Summary: sum, Metrics: map[string]float64{}}
	w, _ := Builtin("select1")
	openLoop(res, log, Spec{Workload: w, Rate: p.rate})
	return res
}

// TestStallIsNotSaturation (issue 40 item 3): a gap in which nothing
// committed, shorter than the backlog bound, is a stall (counted, its
// length kept, a report-tier metric), not saturation; a point that
// falls behind steadily stays saturated, stalls or none.
func TestStallIsNotSaturation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		p         openPoint
		stalls    int
		longest   float64 // s, ±0.05
		saturated bool
		why       string
		beforeSat bool // what the rule without stalls said
	}{
		// (a) 1 s stall in a 3 s cell at an easy rate: it catches up.
		{"stall in the middle", openPoint{rate: 200, secs: 3, svc: 0.001, stalls: [][2]float64{{1, 2}}}, 1, 1, false, "", false},
		// r600 "saturated" with p50 1.4 ms: near its capacity (720/s)
		// the point drains the stall's backlog at 120/s and has not by
		// the end: 73 % committed, saturated by the share alone.
		{"stall near capacity", openPoint{rate: 600, secs: 3, svc: 1.0 / 720, stalls: [][2]float64{{1, 2}}}, 1, 1, false, "", true},
		// (b) a steady shortfall: 70 % committed, no gap.
		{"steady shortfall", openPoint{rate: 1000, secs: 3, svc: 1.0 / 700}, 0, 0, true, "of the 1000 tx/s offered (70 %, below 90 %)", true},
		// Far behind at a low commit rate, whose gaps may read as stalls.
		{"far behind", openPoint{rate: 200, secs: 3, svc: 1.0 / 60}, -1, -1, true, "of the 200 tx/s offered", true},
		// (c) a stall at the very end of the window.
		{"stall at the end", openPoint{rate: 200, secs: 3, svc: 0.001, stalls: [][2]float64{{2.2, 4}}}, 1, 0.8, false, "", true},
		// As long as the bound: saturated by its backlog.
		{"stall beyond the bound", openPoint{rate: 200, secs: 10, svc: 0.001, stalls: [][2]float64{{2, 8}}}, 1, 6, true, "backlog reached 6.0 s of offered work, beyond the bound of 5 s", true},
		// Most of a short window: too little seen to excuse it.
		{"stalled most of the window", openPoint{rate: 200, secs: 3, svc: 0.001, stalls: [][2]float64{{0.5, 3.5}}}, 1, 2.5, true, "of the 200 tx/s offered (16 %, below 90 %)", true},
		// Two stalls, each caught up.
		{"two stalls", openPoint{rate: 500, secs: 5, svc: 0.0005, stalls: [][2]float64{{1, 1.5}, {3, 4.2}}}, 2, 1.2, false, "", false},
	} {
		log, sum := tc.p.run()
		before := SaturationOf(tc.p.rate, sum, 0, tc.p.secs, nil)
		res := tc.p.judge()
		sat := res.Saturation
		t.Logf("%s: committed %.0f of %.0f tx/s, stalls %+v; saturated %v (%s); without stalls %v", tc.name, sum.TPS, tc.p.rate, log.Stalls(WindowSeconds(sum, tc.p.secs)), sat.Saturated, sat.Reason, before.Saturated)
		if before.Saturated != tc.beforeSat {
			t.Errorf("%s: the rule without stalls said saturated %v (%s), the case says %v", tc.name, before.Saturated, before.Reason, tc.beforeSat)
		}
		if sat.Saturated != tc.saturated || res.Saturated != tc.saturated || !strings.Contains(sat.Reason, tc.why) || (sat.Reason == "") == tc.saturated {
			t.Errorf("%s: saturated %v (%q), want %v (%q)", tc.name, sat.Saturated, sat.Reason, tc.saturated, tc.why)
		}
		if tc.stalls >= 0 && (sat.Stalls != tc.stalls || math.Abs(sat.StallMaxS-tc.longest) > 0.05) {
			t.Errorf("%s: %d stalls, longest %.3f s; want %d, %.2f s", tc.name, sat.Stalls, sat.StallMaxS, tc.stalls, tc.longest)
		}
		m := res.Metrics
		if m[results.MetricStalls] != float64(sat.Stalls) || m[results.MetricStallMax] != sat.StallMaxS || m[results.MetricBacklog] < sat.StallMaxS {
			t.Errorf("%s: metrics stalls=%v stall_max_s=%v backlog_s=%v; saturation %+v", tc.name, m[results.MetricStalls], m[results.MetricStallMax], m[results.MetricBacklog], sat)
		}
		warned := strings.Join(res.Warnings, "\n")
		if sat.Stalls > 0 && !strings.Contains(warned, "stalled: nothing committed for ") {
			t.Errorf("%s: warnings %q; want the stall said", tc.name, res.Warnings)
		}
		if tc.saturated != strings.Contains(warned, "saturated: ") {
			t.Errorf("%s: warnings %q", tc.name, res.Warnings)
		}
	}
}

// TestNoStallByChance: a point that keeps its rate has no stall, from
// 10 to 20 000 tx/s (logged at pgbench's sampling rate beyond 2 000),
// in 100 windows of each; and where its rate is too low to tell a stall
// from the schedule's gaps, none is claimed.
func TestNoStallByChance(t *testing.T) {
	for _, rate := range []float64{10, 30, 200, 2000, 20000} {
		found := 0
		for seed := range uint64(100) {
			p := openPoint{rate: rate, secs: 3, svc: 0.0002, seed: seed}
			log, sum := p.run()
			if rate > LoggedTxPerSecond {
				keep := LoggedTxPerSecond / rate
				r := rand.New(rand.NewPCG(seed, 9))
				var sampled []loggedTx
				for _, tx := range log.tx {
					if r.Float64() < keep {
						sampled = append(sampled, tx)
					}
				}
				log.tx = sampled
			}
			if s := log.Stalls(WindowSeconds(sum, p.secs)); len(s) > 0 {
				found++
				t.Logf("-R %g seed %d: %+v", rate, seed, s)
			}
		}
		if found > 0 {
			t.Errorf("-R %g: stalls in %d of 100 windows that kept their rate", rate, found)
		}
	}
	// At 10 tx/s a 1 s gap is the schedule's own now and then: no stall.
	p := openPoint{rate: 10, secs: 3, svc: 0.001, stalls: [][2]float64{{1, 2}}}
	log, sum := p.run()
	if s := log.Stalls(WindowSeconds(sum, p.secs)); len(s) > 0 {
		t.Errorf("-R 10: stalls %+v; a 1 s gap at 10 tx/s cannot be told from chance", s)
	}
}

// TestRealStall: a real server, offered 200 tx/s for 3 s of a workload
// that updates one table, which another session locks for 1 s in the
// middle of the window: nothing commits meanwhile, then the point
// catches up. The per-transaction log shows one stall of about 1 s, and
// the point is not saturated.
func TestRealStall(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 5000)
	ctx := context.Background()
	s := spec(st, install, updateWorkload(t, st))
	s.Rate = 200
	conn, err := pgx.Connect(ctx, st.ConnString(cluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	locked := make(chan error, 1)
	go func() {
		// Once the window has committed 150 transactions (0.75 s).
		for n := 0; n < 150; time.Sleep(20 * time.Millisecond) {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM hist").Scan(&n); err != nil {
				locked <- err
				return
			}
		}
		_, err := conn.Exec(ctx, "BEGIN; LOCK TABLE acct IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(1); COMMIT;")
		locked <- err
	}()
	res, err := runner().Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	sat := res.Saturation
	t.Logf("committed %.0f of 200 tx/s, %d stalls, longest %.2f s, backlog %.2f s, saturated %v (%s); warnings %q",
		sat.CommittedTPS, sat.Stalls, sat.StallMaxS, sat.BacklogS, sat.Saturated, sat.Reason, res.Warnings)
	if sat.Saturated || sat.Stalls != 1 || sat.StallMaxS < 0.9 || sat.StallMaxS > 1.5 || res.Metrics[results.MetricStalls] != 1 {
		t.Errorf("a 1 s lock in a 3 s window at 200 tx/s: saturated %v, %d stalls, longest %.2f s; want one stall of about 1 s, not saturated", sat.Saturated, sat.Stalls, sat.StallMaxS)
	}
}
