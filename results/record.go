package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/jsonl"
	"github.com/pgabtest/abtest/internal/safefile"
)

// Files of a results directory.
const (
	PlanFile  = "plan.json"
	CellsFile = "cells.jsonl"
	CellsDir  = "cells"
	// LockFile is held by the run writing the directory.
	LockFile = ".lock"
)

// Record is one line of cells.jsonl: one measured (or failed) cell.
type Record struct {
	Cell   string `json:"cell"`
	Seq    int    `json:"seq"`
	Commit string `json:"commit"`
	// Config is the cell's configuration (its fields inline in JSON).
	Config
	Repeat    int       `json:"repeat"`
	Status    Status    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	DurationS float64   `json:"duration_s"`
	// WallS is the cell's whole wall time: cluster (re)start, warm-up,
	// measurement, probes.
	WallS float64 `json:"wall_s"`
	// Metrics are the cell's measured values by metric name.
	Metrics   Values            `json:"metrics,omitzero"`
	Saturated bool              `json:"saturated,omitempty"`
	Samples   []Sample          `json:"samples,omitempty"`
	Progress  ProgressReports   `json:"progress,omitempty"`
	Waits     *Waits            `json:"waits,omitempty"`
	Final     *Final            `json:"final,omitempty"`
	Probe     *Counters         `json:"probe,omitempty"`
	Error     string            `json:"error,omitempty"`
	LogTail   []string          `json:"log_tail,omitempty"`
	Warnings  []string          `json:"warnings,omitempty"`
	Artifacts map[string]string `json:"artifacts,omitempty"`
	// Perf describes the CPU profile of the cell's middle, with --perf.
	Perf *PerfInfo `json:"perf,omitempty"`
	// Server is what the cell actually measured: the build fingerprint
	// of the running server, its version() and its binary.
	Server *Server `json:"server,omitempty"`
	// Pgbench is the pgbench that drove the cell: one for every server
	// of a run (the newest build's, or matrix --pgbench).
	Pgbench string `json:"pgbench,omitempty"`
	// Saturation is how an open-loop cell kept its offered rate (nil in a
	// closed loop); Saturated is its verdict.
	Saturation *Saturation `json:"saturation,omitempty"`
	// ConditionFacts are what the cell's condition reached by the end of
	// the window (workload.Condition.Check: xmin_age, retained_wal_bytes,
	// checkpoints, rows_updated, …).
	ConditionFacts map[string]float64 `json:"condition_facts,omitempty"`
	// Instr is an instruction cell's measurement (Config.Instructions).
	Instr *InstrInfo `json:"instr,omitempty"`
	// LatencyMethod is where the cell's latency percentiles come from
	// (a workload.LatencyMethod); cells of different methods are never
	// compared.
	LatencyMethod string `json:"latency_method,omitempty"`
	// Void lists the metrics whose value in this cell is not a
	// measurement (Metric.Validity), each with why: they are left out of
	// Metrics and never judged.
	Void map[string]string `json:"void,omitempty"`
	// Observer is what measuring the cell cost (nil in results of an
	// older abtest, and in instruction cells).
	Observer *Observer `json:"observer,omitempty"`
	// TPSSpread is the TPSSeconds of the progress reports where they
	// were left out (ReadRecordsNoProgress; the store, which keeps it in
	// the cell's detail): the within-cell noise without the reports. A
	// cell writes none: its reports are there.
	TPSSpread *LogSpread `json:"tps_seconds,omitempty"`
}

// ProgressReports are a cell's pgbench progress reports in time order.
type ProgressReports []Progress

// LogSpread summarizes positive values by their logarithms, as the
// variance components pool them: how many, their mean, the sum of
// squares around it and the sum of the products of consecutive
// values' deviations from it (the lag-1 autocovariance's numerator).
type LogSpread struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SS   float64 `json:"ss"`
	Lag  float64 `json:"lag,omitempty"`
}

// TPSSeconds is the spread of the cell's per-second TPS (the progress
// reports' TPS above 0): from the reports, or, where they were left out
// on reading (ReadRecordsNoProgress), as they were then.
func (r *Record) TPSSeconds() LogSpread {
	if r.Progress == nil {
		if r.TPSSpread == nil {
			return LogSpread{}
		}
		return *r.TPSSpread
	}
	var s LogSpread
	for _, p := range r.Progress {
		if p.TPS > 0 {
			s.N++
		}
	}
	// The mean first, then the squares around it: the sums of squares of
	// logarithms near each other lose nothing to cancellation so.
	for _, p := range r.Progress {
		if p.TPS > 0 {
			s.Mean += math.Log(p.TPS) / float64(s.N)
		}
	}
	prev, first := 0.0, true
	for _, p := range r.Progress {
		if p.TPS > 0 {
			d := math.Log(p.TPS) - s.Mean
			s.SS += d * d
			if !first {
				s.Lag += prev * d
			}
			prev, first = d, false
		}
	}
	return s
}

// DropProgress leaves out r's progress reports, keeping their
// TPSSeconds (TPSSpread).
func (r *Record) DropProgress() {
	if s := r.TPSSeconds(); s.N > 0 {
		r.TPSSpread = &s
	}
	r.Progress = nil
}

// Method is how the cell measured the metrics of a kind: its latency
// method, or its instruction counter; "" when the cell does not say
// (results of an older abtest, or not that kind of cell).
func (r *Record) Method(by MeasuredBy) string {
	switch {
	case by == ByLatency:
		return r.LatencyMethod
	case by == ByInstructions && r.Instr != nil:
		return r.Instr.Method
	}
	return ""
}

// WhyVoid says why the cell's value of m is not a measurement, or ""
// when it is (or the cell has none): the reason recorded with the cell
// or, for a cell recorded before abtest recorded validity (its value is
// there), m's rule applied to the deallocations the cell recorded. Such
// a cell never said that it could not read them, so there only evidence
// of evictions voids a value.
func (r *Record) WhyVoid(m Metric) string {
	if why := r.Void[m.Name]; why != "" {
		return why
	}
	if _, ok := r.Metrics.Get(m.Name); !ok || m.Validity == ValidAlways {
		return ""
	}
	w, ok := r.window()
	if !ok {
		return ""
	}
	return m.Validity.Void(w)
}

// window is what the record says of its window's deallocations: its
// final reading or, where that is not kept (the store drops the series),
// its pgss_deallocs metric; ok false when it says nothing.
func (r *Record) window() (w Window, ok bool) {
	if f := r.Final; f != nil && !f.DeallocsUnknown {
		return Window{Deallocs: f.Deallocs, DeallocsKnown: true}, true
	}
	if d, ok := r.Metrics.Get(MetricPGSSDeallocs); ok && !math.IsNaN(d) {
		return Window{Deallocs: int64(math.Ceil(d)), DeallocsKnown: true}, true
	}
	return Window{}, false
}

// InstrInfo is how an instruction cell counted: cells counted by
// different methods are never compared.
type InstrInfo struct {
	// Method is a workload.InstrMethod (valgrind-…, perf-stat).
	Method       string `json:"method"`
	Transactions int    `json:"transactions"`
	Seed         int64  `json:"seed"`
	// Profile is the per-function instruction profile (pprof, sample
	// type instructions) relative to the results directory; empty for
	// perf stat.
	Profile string `json:"profile,omitempty"`
}

// Server identifies the server a cell measured, read from the running
// postmaster, not from the plan: an in-place rebuild must never be
// measured on the old binary unnoticed.
type Server struct {
	Fingerprint string `json:"fingerprint,omitempty"`
	Version     string `json:"version,omitempty"`
	// Exe is /proc/PID/exe of the postmaster; it ends in " (deleted)"
	// when the binary was replaced under a running server.
	Exe string `json:"exe,omitempty"`
	PID int    `json:"pid,omitempty"`
}

// PerfInfo is a cell's profile: where it is, what it covers.
type PerfInfo struct {
	// Profile is relative to the results directory.
	Profile string  `json:"profile"`
	Samples int     `json:"samples"`
	Event   string  `json:"event"`
	WindowS float64 `json:"window_s"`
	// Tx is the number of transactions pgbench completed in the window
	// (its progress reports integrated over the window).
	Tx         float64 `json:"tx"`
	CallGraphs bool    `json:"call_graphs"`
	Error      string  `json:"error,omitempty"`
}

// ErrNotResults: a directory without plan.json.
var ErrNotResults = errors.New("results: not a results directory")

// ErrNewerSchema: a plan written by a newer abtest.
var ErrNewerSchema = errors.New("results: newer schema")

// ReadPlan reads dir/plan.json, upgrading older schema versions in
// memory.
func ReadPlan(dir string) (*Plan, error) {
	path := filepath.Join(dir, PlanFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%w: %s has no %s", ErrNotResults, dir, PlanFile)
	}
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	return DecodePlan(data, path)
}

// DecodePlan parses a plan.json's bytes; name is for errors.
func DecodePlan(data []byte, name string) (*Plan, error) {
	p, err := decodePlan(data)
	if err != nil {
		return nil, exitcode.BadInputf("%s: %v", name, err)
	}
	switch {
	case p.Version > Version:
		return nil, exitcode.BadInputf("%s: %w: plan version %d, this abtest reads up to %d; use a newer abtest", name, ErrNewerSchema, p.Version, Version)
	case p.Version < 1:
		return nil, exitcode.BadInputf("%s: no plan version: not written by abtest", name)
	case len(p.Commits) == 0:
		return nil, exitcode.BadInputf("%s: the plan has no commits", name)
	}
	// Version 1 differs only in how metric definitions were spelled
	// (Metric.UnmarshalJSON reads both).
	p.Version = Version
	// A plan written before metrics declared their validity gets the
	// built-in metrics' own: a source that loses data lost it then too.
	// Likewise a count: pgss_deallocs counted eviction cycles before it
	// was declared an event count.
	for i, m := range p.Metrics {
		if b, ok := Builtin.Get(m.Name); ok {
			if m.Validity == ValidAlways {
				p.Metrics[i].Validity = b.Validity
			}
			p.Metrics[i].Count = m.Count || b.Count
		}
	}
	return p, nil
}

// WritePlan writes dir/plan.json atomically.
func WritePlan(dir string, p *Plan) error { return WriteJSON(dir, PlanFile, p) }

// WriteJSON writes v as dir/name atomically, never through a link
// planted at either name (a results root others can write to).
func WriteJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// The temporary file is made new (O_EXCL, O_NOFOLLOW), never opened
	// through a link; a stale one (a killed run's, or planted) is
	// removed first: Remove deletes a link, not its target, and the
	// rename replaces a link at plan.json rather than writing through it.
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := safefile.Create(tmp, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return safefile.Rename(tmp, filepath.Join(dir, name))
}

// ReadRecords reads dir/cells.jsonl. A line that does not parse (the
// last one of a killed run, typically) is skipped with a warning.
func ReadRecords(dir string) ([]Record, []string, error) {
	return readRecords(dir, false)
}

// ReadRecordsNoProgress is ReadRecords without the records' progress
// reports (Progress nil), which only the plots read: each record keeps
// their TPSSeconds, which the variance components read. A line whose
// reports do not decode does not either.
func ReadRecordsNoProgress(dir string) ([]Record, []string, error) {
	return readRecords(dir, true)
}

func readRecords(dir string, noProgress bool) ([]Record, []string, error) {
	f, err := os.Open(filepath.Join(dir, CellsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return decodeRecords(f, filepath.Join(dir, CellsFile), size, noProgress)
}

// DecodeRecords reads cells.jsonl lines from r; name is for warnings.
func DecodeRecords(r io.Reader, name string) ([]Record, []string, error) {
	return decodeRecords(r, name, 0, false)
}

// AppendRecord appends one line to dir/cells.jsonl and fsyncs it: a
// killed run keeps every finished cell.
func AppendRecord(dir string, r *Record) error {
	return jsonl.Append(filepath.Join(dir, CellsFile), r)
}

// Repair truncates a torn last line of dir/cells.jsonl (a run killed, or
// a full disk, while writing it) back to the last newline, so the next
// append starts a line of its own. It returns what it did, for the user,
// or "" when the file was whole.
func Repair(dir string) (string, error) {
	path := filepath.Join(dir, CellsFile)
	n, err := jsonl.Repair(path)
	if err != nil || n == 0 {
		return "", err
	}
	return fmt.Sprintf("%s: removed a torn last line (%d bytes, a run killed while writing it)", path, n), nil
}

// CellDir is where a cell's artefacts go: cells/<cell id>, one directory
// per "/"-separated part of the id, each part percent-encoded to a safe
// path component ([A-Za-z0-9._=-] kept, "." and ".." encoded, "" as
// "%"), so that distinct ids have distinct directories inside cells/.
func CellDir(dir, id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = pathPart(p)
	}
	return filepath.Join(append([]string{dir, CellsDir}, parts...)...)
}

// pathPart encodes one part of an id as a path component: injective, and
// never ".", ".." or empty.
func pathPart(p string) string {
	switch p {
	case "":
		return "%"
	case ".", "..":
		return strings.Repeat("%2E", len(p))
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if c := p[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '=' || c == '-' {
			b.WriteByte(c)
		} else {
			percent(&b, c)
		}
	}
	return b.String()
}
