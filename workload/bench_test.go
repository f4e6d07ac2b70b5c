package workload

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

func okBench() Bench {
	return Bench{Seconds: 5, Clients: 4, SampleEvery: time.Second, WaitEvery: time.Second, Workloads: "select1,churn"}
}

// TestBenchCheck: each value pgbench or the samplers cannot take is exit
// 2 with a message naming the flag, before anything runs.
func TestBenchCheck(t *testing.T) {
	for want, change := range map[string]func(*Bench){
		"-t -1:":                   func(b *Bench) { b.Transactions = -1 },
		"-t 1000000001:":           func(b *Bench) { b.Transactions = 1_000_000_001 },
		"-d 0: want 1 to 86400":    func(b *Bench) { b.Seconds = 0 },
		"-d 86401:":                func(b *Bench) { b.Seconds = 86401 },
		"--sample-every 0s:":       func(b *Bench) { b.SampleEvery = 0 },
		"--wait-every 2h0m0s:":     func(b *Bench) { b.WaitEvery = 2 * time.Hour },
		"--jobs -1:":               func(b *Bench) { b.Threads = -1 },
		"--sleep -5:":              func(b *Bench) { b.SleepMS = -5 },
		"-R -1:":                   func(b *Bench) { b.Rate = -1 },
		"-w: workload churn given": func(b *Bench) { b.Workloads = "churn,select1, churn" },
		"-c 0: want at least 1":    func(b *Bench) { b.Clients = 0 },
		"-M \"fast\"":              func(b *Bench) { b.Protocol = "fast" },
	} {
		b := okBench()
		change(&b)
		_, err := b.Specs()
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v (exit %d)", want, err, exitcode.Code(err))
		}
	}
	b := okBench()
	b.Seconds = 0
	b.Transactions = 100 // -t replaces -d
	if _, err := b.Specs(); err != nil {
		t.Errorf("-t without -d: %v", err)
	}
}

// TestBenchSpecs: one checked spec per workload, in order, with the
// shared settings; -o keeps each workload's files (transaction log
// included) in its own directory; -t runs no timed window.
func TestBenchSpecs(t *testing.T) {
	b := okBench()
	b.Transactions, b.OutDir, b.Protocol = 50, "/out", "simple"
	b.Workloads = "select1,churn"
	specs, err := b.Specs()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Workload.Name != "select1" || specs[1].Workload.Name != "churn" {
		t.Fatalf("specs = %+v", specs)
	}
	for _, s := range specs {
		if s.OutDir != filepath.Join("/out", s.Workload.Name) || !s.KeepTxLog || s.Duration != 0 || s.Transactions != 50 ||
			s.Clients != 4 || s.Threads < 1 || s.Protocol != "simple" {
			t.Errorf("spec %s = %+v", s.Workload.Name, s)
		}
	}
}

// TestBenchDryRun: a dry run prints pgbench's command for every
// workload, no header, and returns no results.
func TestBenchDryRun(t *testing.T) {
	b := okBench()
	b.Conn = Conn{Host: "/tmp", Port: 5999, User: "u", Database: "d"}
	specs, err := b.Specs()
	if err != nil {
		t.Fatal(err)
	}
	var trace, live bytes.Buffer
	r := &Runner{Proc: &proc.Runner{DryRun: true, Trace: &trace}, Out: &live, Getenv: func(string) string { return "" }}
	res, err := r.Bench(context.Background(), specs, time.Second)
	if err != nil || len(res) != 0 {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	if n := strings.Count(trace.String(), "pgbench "); n < 2 || strings.Contains(live.String(), "=== abtest bench ===") {
		t.Errorf("%d pgbench lines; live %q\n%s", n, live.String(), trace.String())
	}
}

// TestWriteTPSSummary: one line per workload, saturated ones marked.
func TestWriteTPSSummary(t *testing.T) {
	var out bytes.Buffer
	WriteTPSSummary(&out, []*Result{{Workload: "select1", Metrics: map[string]float64{"tps": 1234.4}}, {Workload: "churn", Saturated: true, Metrics: map[string]float64{"tps": 99.6}}})
	want := "\n=== TPS Summary ===\n  select1         1234\n  churn           100  (saturated)\n"
	if out.String() != want {
		t.Errorf("summary %q, want %q", out.String(), want)
	}
}

// TestCountInstructionsDryRun: the cluster is held and stopped (said
// once), not restarted first (its own options), left stopped, and the
// dry run prints both runs of each workload on one server on the
// cluster's data directory; an unknown cluster is exit 2.
func TestCountInstructionsDryRun(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "valgrind")
	install := testenv.PGInstall(t)
	m := testpg.Manager(t)
	ctx := context.Background()
	st, err := m.Start(ctx, "c", cluster.Options{Install: install, PgssMax: 5000, MaxClients: 4, AutoPort: true})
	if err != nil {
		t.Fatal(err)
	}
	var trace, notice bytes.Buffer
	run := &proc.Runner{DryRun: true, Trace: &trace}
	b := InstrBench{Cluster: "c", Workloads: "select1,churn", Transactions: 10, OutDir: t.TempDir()}
	res, err := CountInstructions(ctx, run, m, b, &notice)
	if err != nil || res != nil {
		t.Fatalf("dry run: %v, %v", res, err)
	}
	if want := "bench: stopped cluster c to count instructions; it stays stopped (abtest switch c starts it)\n"; notice.String() != want {
		t.Errorf("notice %q, want %q", notice.String(), want)
	}
	if _, running := cluster.PID(st.DataDir); running {
		t.Error("the cluster still runs")
	}
	// Its own options, so the quiet period's start changed nothing.
	if after, err := m.ReadState("c"); err != nil || !after.StartedAt.Equal(st.StartedAt) || after.Port != st.Port || after.Settings["pg_stat_statements.max"] != "5000" {
		t.Errorf("the cluster's state after the quiet period: %+v, %v; before %+v", after, err, st)
	}
	// One server on the cluster's data directory per workload, serving
	// both runs.
	if n := strings.Count(trace.String(), "-D "+st.DataDir+" "); n != 2 {
		t.Errorf("%d servers on %s in the trace, want one per workload:\n%s", n, st.DataDir, trace.String())
	}
	for _, run := range []string{" -t 10 ", " -t 20 "} {
		if n := strings.Count(trace.String(), run); n != 2 {
			t.Errorf("%d pgbench runs with%s in the trace, want one per workload:\n%s", n, run, trace.String())
		}
	}
	b.Cluster = "nosuch"
	if _, err := CountInstructions(ctx, run, m, b, &notice); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "abtest switch nosuch") {
		t.Errorf("unknown cluster: %v", err)
	}
}

// TestCheckInstructions: each setting an instruction count cannot honour
// is exit 2; one client given explicitly is fine.
func TestCheckInstructions(t *testing.T) {
	given := func(flags ...string) func(string) bool {
		return func(f string) bool { return slices.Contains(flags, f) }
	}
	b := okBench()
	b.Clients = 1
	if err := b.CheckInstructions("c", given("clients")); err != nil {
		t.Errorf("-c 1: %v", err)
	}
	for want, tc := range map[string]struct {
		cluster string
		given   []string
		clients int
	}{
		"--cluster NAME":  {"", nil, 1},
		"with -R":         {"c", []string{"rate"}, 1},
		"with -c 4":       {"c", []string{"clients"}, 4},
		"with -S":         {"c", []string{"sleep"}, 1},
		"-p and --host":   {"c", []string{"host"}, 1},
		"-p and --host n": {"c", []string{"port"}, 1},
	} {
		b := okBench()
		b.Clients = tc.clients
		if err := b.CheckInstructions(tc.cluster, given(tc.given...)); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), strings.TrimSuffix(want, " n")) {
			t.Errorf("%s: %v", want, err)
		}
	}
	b.Threads = 2
	if err := b.CheckInstructions("c", given()); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("-j 2: %v", err)
	}
}

func TestExpandAll(t *testing.T) {
	if got := ExpandAll("file:x.sql, all"); got != "file:x.sql,"+strings.Join(Names, ",") {
		t.Errorf("ExpandAll = %q", got)
	}
	if got := ExpandAll("churn"); got != "churn" {
		t.Errorf("ExpandAll(churn) = %q", got)
	}
}

// TestBenchWarmupSizesLog: bench's default warm-up measures the
// throughput that sizes a closed loop's latency log (issue 43: without
// it, `bench -w select1 -c 4 -d 5` logged every transaction, 3 % of a
// core); without a warm-up the log is sized for the upper bound, as
// before.
func TestBenchWarmupSizesLog(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 1000)
	b := okBench()
	b.Conn = Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database}
	b.Workloads, b.Seconds, b.Pgbench = "select1", 2, filepath.Join(install, "bin", "pgbench")
	specs, err := b.Specs()
	if err != nil {
		t.Fatal(err)
	}
	bound := samplingRate(specs[0])
	for _, warmup := range []time.Duration{BenchWarmup, 0} {
		var live bytes.Buffer
		r := runner()
		r.Out = &live
		res, err := r.Bench(context.Background(), specs, warmup)
		if err != nil || len(res) != 1 {
			t.Fatalf("warm-up %s: %v, %d results", warmup, err, len(res))
		}
		said := strings.Contains(live.String(), "select1: warm-up 1s at ")
		if warmup > 0 && (res[0].SamplingRate >= bound/2 || !said) {
			t.Errorf("warm-up %s: sampling rate %g (the bound's %g), said %v; want the warm-up's throughput to size it:\n%s", warmup, res[0].SamplingRate, bound, said, live.String())
		}
		if warmup == 0 && (res[0].SamplingRate != bound || said) {
			t.Errorf("no warm-up: sampling rate %g, want the bound's %g; said %v", res[0].SamplingRate, bound, said)
		}
	}
}
