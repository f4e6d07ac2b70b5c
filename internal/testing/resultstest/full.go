// Package resultstest has records for the tests of the packages that
// read and keep them.
package resultstest

import (
	"time"

	"github.com/pgabtest/abtest/results"
)

// FullRecord is a record with every field set, nested ones included
// (store's TestFullRecordSetsEveryField holds it to that): the case a
// reader of records must keep whole.
func FullRecord(commit string, seq int, status results.Status) results.Record {
	// A zone other than UTC: the store keeps the instant.
	started := time.Date(2025, 4, 1, 12, 30, 15, 123456789, time.FixedZone("CEST", 2*3600)).Add(time.Duration(seq) * time.Minute)
	return results.Record{
		Cell: "select1/instr/cpu2/pgss.max=5000/r1/" + commit, Seq: seq, Commit: commit,
		Config: results.Config{Workload: "select1", Clients: 1, CPUs: 2, Settings: map[string]string{"pg_stat_statements.max": "5000"}, Instructions: true,
			Rate: 1000, RateUnit: results.PerOp, Vars: map[string]string{"batch": "10"}, Condition: "xmin-holder",
			Extra: map[string]string{"think_ms": "5"}},
		Repeat: 1, Status: status, StartedAt: started, DurationS: 10.5, WallS: 17.25,
		Metrics:   results.ValuesOf(map[string]float64{results.MetricInstructionsPerTx: 123456, results.MetricTPS: 1000.5}),
		Saturated: true, Pgbench: "/opt/pg/bin/pgbench",
		Saturation:     &results.Saturation{OfferedTPS: 1000, CommittedTPS: 600, BacklogS: 6, BoundS: 5, Saturated: true, Reason: "committed 60 %", Stalls: 1, StallMaxS: 0.75, StalledS: 0.75},
		ConditionFacts: map[string]float64{"xmin_age": 4242},
		Samples: []results.Sample{{T: 5, Entries: 1, Hot: 1, Cold: 1, TPS: 1, Dealloc: 1, Age: results.Dist{Min: 1}, Calls: results.Dist{Max: 1},
			FP: "a7b9", Waits: []results.WaitTop{{Event: "CPU", N: 1}}, HasClass: true}},
		Progress: []results.Progress{{T: 1, TPS: 1, LatMS: 1, StddevMS: 1, LagMS: 1, Failed: 1, Skipped: 1, HasLag: true}},
		Waits:    &results.Waits{Ticks: 1, Idle: 1, Active: 1, ByEvent: map[string]int{"CPU": 1}, Seconds: 1},
		Final:    &results.Final{Entries: 1, Hot: 1, Cold: 1, HotCalls: 1, ColdCalls: 1, Deallocs: 1, Histogram: []results.HistogramBin{{}}, HasClass: true},
		Probe:    &results.Counters{Kinds: map[string]results.KindCounters{"SELECT": {Calls: 1, Rows: 1}}, CPUTicks: 1, HasCPU: true},
		Error:    "pgbench: exit 2", LogTail: []string{"FATAL: the last line"}, Warnings: []string{"a warning"},
		Artifacts: map[string]string{"pgbench": "cells/" + commit + "/pgbench.log", "server_log": "cells/" + commit + "/server.log"},
		Perf: &results.PerfInfo{Profile: "cells/" + commit + "/perf.pb.gz", Samples: 4000, Event: "cycles", WindowS: 5, Tx: 5000,
			CallGraphs: true, Error: "perf: some samples lost"},
		Server: &results.Server{Fingerprint: "fp-" + commit, Version: "PostgreSQL 18.3", Exe: "/opt/pg/bin/postgres", PID: 4242},
		Instr: &results.InstrInfo{Method: "valgrind-lackey", Transactions: 200, Seed: 7,
			Profile: "cells/" + commit + "/instr.pb.gz"},
		LatencyMethod: "pgbench-log",
		Observer: &results.Observer{WindowS: 10, BackendS: 0.02, AbtestS: 0.03, PgbenchLogS: 0.001, LoggedTx: 400, LogLineS: 2.3e-6,
			PgbenchS: 4, ServerS: 9, Queries: 12},
		Void: map[string]string{results.MetricStatementsPerTx: results.VoidEvicted},
		// A cell writes its progress reports, not their spread; set here
		// so every field is: reading drops the reports for the spread.
		TPSSpread: &results.LogSpread{N: 2, Mean: 7.2, SS: 0.01, Lag: -0.004},
	}
}
