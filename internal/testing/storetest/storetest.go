// Package storetest writes synthetic result directories for the store's,
// the dashboard's and the CLI's tests: nights of a nightly job with steps
// injected where a test wants them, and runs split into shards. They are
// written with the results package, like a real run's.
package storetest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/results"
)

// Run is a synthetic run.
type Run struct {
	Created time.Time
	Seed    int64
	Commits []results.Commit
	Configs []results.Config
	Repeats int
	// Shard I of N takes every Nth configuration, as matrix does; zero
	// means 1/1.
	I, N int
	Host host.Host
	// Value gives a cell's metrics.
	Value func(commit results.Commit, c results.Config, repeat int) map[string]float64
	// Metrics are the plan's metric definitions; nil means Metrics.
	Metrics results.Metrics
}

// Metrics are the definitions synthetic plans carry.
var Metrics = results.Metrics{
	{Name: results.MetricTPS, Unit: "tx/s", Direction: results.HigherIsBetter, ThresholdPct: 2, Tier: results.TierBand, Doc: "transactions per second"},
	{Name: results.MetricLatencyP99, Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierReport, Doc: "99th percentile latency"},
}

// Write writes r into dir (plan.json and cells.jsonl) and returns the
// number of cells.
func Write(dir string, r Run) (int, error) {
	if r.N == 0 {
		r.I, r.N = 1, 1
	}
	if r.Metrics == nil {
		r.Metrics = Metrics
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	p := &results.Plan{
		Version: results.Version, Commits: r.Commits, Baseline: r.Commits[0].Label,
		Options: results.PlanOpts{Repeats: r.Repeats, DurationS: 10, Order: "abba", Seed: r.Seed, Protocol: "simple", BuildType: "release"},
		Shard:   fmt.Sprintf("%d/%d", r.I, r.N), Created: r.Created, Host: r.Host, Metrics: r.Metrics, AbtestVersion: "test",
		Doctor: []results.Finding{{Check: "governor", Status: "warn", Value: "powersave", Why: "frequency scaling adds noise", Fix: "cpupower frequency-set -g performance"}},
	}
	for i, c := range r.Configs {
		if i%r.N == r.I-1 {
			p.Configs = append(p.Configs, c)
		}
	}
	var recs []results.Record
	seq := 0
	for rep := 1; rep <= r.Repeats; rep++ {
		for _, c := range p.Configs {
			for _, k := range r.Commits {
				seq++
				id := fmt.Sprintf("%s/r%d/%s", c.ID(), rep, k.Label)
				p.Cells = append(p.Cells, results.Cell{ID: id, Seq: seq, Commit: k.Label, Repeat: rep, Config: c})
				recs = append(recs, results.Record{
					Cell: id, Seq: seq, Commit: k.Label, Config: results.Config{Workload: c.Workload, Clients: c.Clients, CPUs: c.CPUs, Settings: c.Settings},
					Repeat: rep, Status: results.StatusOK, StartedAt: r.Created.Add(time.Duration(seq) * time.Minute), DurationS: 10,
					Metrics: results.ValuesOf(r.Value(k, c, rep)), Artifacts: map[string]string{"pgbench": filepath.Join("cells", id, "pgbench.log")},
				})
			}
		}
	}
	if err := results.WritePlan(dir, p); err != nil {
		return 0, err
	}
	// One write, not results.AppendRecord's fsync per line: a benchmark
	// writes thousands of these.
	var buf bytes.Buffer
	for i := range recs {
		line, err := json.Marshal(&recs[i])
		if err != nil {
			return 0, err
		}
		buf.Write(append(line, '\n'))
	}
	return len(recs), os.WriteFile(filepath.Join(dir, results.CellsFile), buf.Bytes(), 0o644)
}

// Config is the configuration nights run.
var Config = results.Config{Workload: "select1", Clients: 16, Settings: map[string]string{}}

// NightSHA is the head's sha on night i.
func NightSHA(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprint("night ", i)))
	return hex.EncodeToString(sum[:])
}

// BaseSHA is the nights' baseline.
const BaseSHA = "1111111111111111111111111111111111111111"

// Nights writes n nightly runs under root (night-000, …), one a day from
// 2025-01-01, each the baseline and that night's head on Config with 5
// repeats. The head's TPS is 10 000 with 0.5 % noise, multiplied by
// 1 + steps[i]/100 from night i on. It returns the directories.
func Nights(root string, n int, steps map[int]float64) ([]string, error) {
	start := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	var dirs []string
	for i := range n {
		level := 10000.0
		for at, pct := range steps {
			if i >= at {
				level *= 1 + pct/100
			}
		}
		rng := rand.New(rand.NewSource(int64(i) + 1))
		dir := filepath.Join(root, fmt.Sprintf("night-%03d", i))
		_, err := Write(dir, Run{
			Created: start.AddDate(0, 0, i), Seed: int64(i) + 1, Repeats: 5,
			Commits: []results.Commit{
				{Label: "base", Ref: "REL_17_0", SHA: BaseSHA, Build: "base", BuildType: "release"},
				{Label: "head", Ref: "master", SHA: NightSHA(i), Build: "head", BuildType: "release"},
			},
			Configs: []results.Config{Config},
			Host:    host.Host{Hostname: "bench1", CPU: "Synthetic CPU", NProc: 8, MemoryMB: 16384, Kernel: "6.1.0"},
			Value: func(k results.Commit, _ results.Config, _ int) map[string]float64 {
				v := 10000.0
				if k.Label == "head" {
					v = level
				}
				v *= 1 + 0.005*rng.NormFloat64()
				return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 16 / v * 1000 * 1.5}
			},
		})
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// Shards writes one run of 12 configurations (three workloads × four
// client counts, 12 repeats) made with seed as len(hosts) shard
// directories under root (shard1, …), shard i run on hosts[i-1]; the
// patch is 10 % slower on churn. It returns the directories.
func Shards(root string, seed int64, hosts []host.Host) ([]string, error) {
	var configs []results.Config
	for _, w := range []string{"select1", "churn", "within_max"} {
		for _, c := range []int{1, 4, 16, 64} {
			configs = append(configs, results.Config{Workload: w, Clients: c, Settings: map[string]string{"pg_stat_statements.max": "5000"}})
		}
	}
	var dirs []string
	for i, h := range hosts {
		dir := filepath.Join(root, fmt.Sprintf("shard%d", i+1))
		_, err := Write(dir, Run{
			Created: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i+1) * time.Second), Seed: seed, Repeats: 12, I: i + 1, N: len(hosts),
			Commits: []results.Commit{{Label: "base", SHA: BaseSHA, Build: "base"}, {Label: "patch", SHA: BaseSHA,
				Patches: []results.Patch{{File: "x.patch", SHA256: "ffff"}}, Build: "patch"}},
			Configs: configs,
			Host:    h,
			Value: func(k results.Commit, c results.Config, rep int) map[string]float64 {
				v := 1000.0 * float64(c.Clients) * (1 + 0.01*float64(rep%3))
				if k.Label == "patch" && c.Workload == "churn" {
					v *= 0.9
				}
				return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 1e4 / v}
			},
		})
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}
