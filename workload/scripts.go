// Package workload is abtest's measuring instrument: the built-in pgbench
// scripts, running pgbench, a live sampler of pg_stat_statements and wait
// events on one persistent connection, counter probes around the measured
// window, and the parsing of everything pgbench prints.
//
// It knows servers and workloads, never commits: a Result is what one
// workload did on one server, with a flat metrics map (tps,
// latency_p99_ms, pgss_deallocs, wal_bytes_per_tx, server_cpu_s_per_tx, …)
// that the matrix stores and the analysis compares.
//
// Latency percentiles come from pgbench's per-transaction log written
// with --sampling-rate: the rate is chosen so that about
// LoggedTxPerSecond transactions a second of window are logged whatever
// the throughput (what logging costs pgbench stays a fixed share of a
// core), and the percentiles are computed over that uniform sample. The
// average latency and TPS are pgbench's own, over every transaction; the
// max is the sample's.
package workload

import (
	"fmt"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
)

// Workload is a pgbench script and what the sampler should know about it.
type Workload struct {
	Name string
	// Script is the pgbench script.
	Script string
	// HotPrefix and ColdPrefix start the normalised text of the
	// workload's hot and cold queries; empty when it has none.
	HotPrefix, ColdPrefix string
	// SimpleOnly marks scripts whose distinct query texts come from
	// pgbench's textual variable substitution, which only the simple
	// protocol does (extended and prepared turn :var into a parameter).
	SimpleOnly bool
	// Builtin is false for file: scripts.
	Builtin bool
	// Setup is SQL run on the workload's database before each cell's
	// warm-up (a file's "-- abtest:setup" section): its tables, made so
	// that running it again is harmless.
	Setup string
	// Metrics are the metrics a file declares ("-- abtest:metric"), read
	// by SQL after the window.
	Metrics []Declared
	// Primary is the metric a file's open-loop configurations are judged
	// by first ("-- abtest:primary NAME"), OpsPerTx how many of the
	// user's operations one transaction carries ("-- abtest:ops-per-tx
	// EXPR": a number or :NAME); empty when not declared. The matrix
	// records both in its plan (results.WorkloadDeclares).
	Primary, OpsPerTx string
}

// Declares is what w declares of itself, as a plan records it.
func (w Workload) Declares() results.WorkloadDeclares {
	return results.WorkloadDeclares{Primary: w.Primary, OpsPerTx: w.OpsPerTx}
}

// Names lists the built-in workloads.
var Names = []string{"select1", "churn", "slow_churn", "within_max"}

// Distinct queries are distinct query texts after normalisation:
// constants normalise away, so each query gets its own CTE name
// (hot_123), which pg_stat_statements' query jumbling keeps.
const (
	churnHot   = 1000
	churnCold  = 3000000
	churnHotPc = 80
	slowHot    = 4950
	// slowNewOneIn: one transaction in this many runs a never-seen query;
	// at tens of thousands of TPS that is one every few seconds.
	slowNewOneIn = 150000
	withinMax    = 4500
)

// Builtin returns the built-in workload name.
func Builtin(name string) (Workload, bool) {
	switch name {
	case "select1":
		return Workload{Name: name, Builtin: true, Script: "-- select1: baseline overhead, no eviction\nSELECT 1;\n"}, true
	case "churn":
		return Workload{Name: name, Builtin: true, SimpleOnly: true, HotPrefix: "WITH hot_", ColdPrefix: "WITH cold_", Script: fmt.Sprintf(`-- churn: %d%% of transactions run one of %d hot queries, the rest one of
-- %d cold ones: pg_stat_statements evicts constantly.
\set r random(1, 100)
\set hot random(1, %d)
\set cold random(1, %d)
\if :r <= %d
WITH hot_:hot AS (SELECT 1) SELECT * FROM hot_:hot;
\else
WITH cold_:cold AS (SELECT 1) SELECT * FROM cold_:cold;
\endif
`, churnHotPc, churnHot, churnCold, churnHot, churnCold, churnHotPc)}, true
	case "slow_churn":
		return Workload{Name: name, Builtin: true, SimpleOnly: true, HotPrefix: "WITH hot_", ColdPrefix: "WITH new_", Script: fmt.Sprintf(`-- slow_churn: %d hot queries keep pg_stat_statements near capacity; about
-- one transaction in %d runs a query never seen before (one every few
-- seconds at typical rates): admission near capacity.
\set r random(1, %d)
\set hot random(1, %d)
\set new random(1, 1000000000)
\if :r = 1
WITH new_:new AS (SELECT 1) SELECT * FROM new_:new;
\else
WITH hot_:hot AS (SELECT 1) SELECT * FROM hot_:hot;
\endif
`, slowHot, slowNewOneIn, slowNewOneIn, slowHot)}, true
	case "within_max":
		return Workload{Name: name, Builtin: true, SimpleOnly: true, HotPrefix: "WITH wm_", Script: fmt.Sprintf(`-- within_max: %d distinct queries inside transactions; stays under
-- pg_stat_statements.max, so nothing is evicted.
\set q random(1, %d)
BEGIN;
WITH wm_:q AS (SELECT 1) SELECT * FROM wm_:q;
COMMIT;
`, withinMax, withinMax)}, true
	}
	return Workload{}, false
}

// Resolve returns the workload for a -w item: a built-in name or
// file:PATH. A file is read through safefile.Input: a regular file of at
// most 64 MiB (not /dev/zero, not a FIFO) and, as root, one of root's
// or the invoking user's that nobody else can write: its SQL runs as
// the server's superuser.
func Resolve(item string) (Workload, error) {
	if path, ok := strings.CutPrefix(item, "file:"); ok {
		data, err := safefile.Input(path)
		if err != nil {
			return Workload{}, exitcode.BadInputf("workload %s: %v", item, err)
		}
		w, err := parseFile(item, string(data))
		if err != nil {
			return Workload{}, err
		}
		w.Name = strings.TrimSuffix(pathBase(path), ".sql")
		return w, nil
	}
	if w, ok := Builtin(item); ok {
		return w, nil
	}
	return Workload{}, exitcode.BadInputf("unknown workload %q: use one of %s, or file:PATH for your own pgbench script", item, strings.Join(Names, ", "))
}

// ResolveList resolves a comma-separated -w value.
func ResolveList(list string) ([]Workload, error) {
	var out []Workload
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		w, err := Resolve(item)
		if err != nil {
			return nil, err
		}
		if seen[w.Name] {
			continue
		}
		seen[w.Name] = true
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, exitcode.BadInputf("-w: no workload given: use one of %s", strings.Join(Names, ", "))
	}
	return out, nil
}

// WithThinkTime returns script with a \sleep of ms milliseconds after each
// transaction (the -S option).
func WithThinkTime(script string, ms int) string {
	if ms <= 0 {
		return script
	}
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	return script + fmt.Sprintf("\\sleep %d ms\n", ms)
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
