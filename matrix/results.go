package matrix

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/jsonl"
	"github.com/pgabtest/abtest/workload"
)

// Files of a results directory.
const (
	PlanFile  = "plan.json"
	CellsFile = "cells.jsonl"
	CellsDir  = "cells"
)

// Record is one line of cells.jsonl: one measured (or failed) cell.
type Record struct {
	Cell      string            `json:"cell"`
	Seq       int               `json:"seq"`
	Commit    string            `json:"commit"`
	Workload  string            `json:"workload"`
	Clients   int               `json:"clients"`
	CPUs      int               `json:"cpus"`
	Settings  map[string]string `json:"settings"`
	Repeat    int               `json:"repeat"`
	Status    string            `json:"status"` // ok, failed
	StartedAt time.Time         `json:"started_at"`
	DurationS float64           `json:"duration_s"`
	// WallS is the cell's whole wall time: cluster (re)start, warm-up,
	// measurement, probes.
	WallS     float64             `json:"wall_s"`
	Metrics   map[string]float64  `json:"metrics,omitempty"`
	Saturated bool                `json:"saturated,omitempty"`
	Samples   []workload.Sample   `json:"samples,omitempty"`
	Progress  []workload.Progress `json:"progress,omitempty"`
	Waits     *workload.Waits     `json:"waits,omitempty"`
	Final     *workload.Final     `json:"final,omitempty"`
	Probe     *workload.Counters  `json:"probe,omitempty"`
	Error     string              `json:"error,omitempty"`
	LogTail   []string            `json:"log_tail,omitempty"`
	Warnings  []string            `json:"warnings,omitempty"`
	Artifacts map[string]string   `json:"artifacts,omitempty"`
	// Perf describes the CPU profile of the cell's middle, with --perf.
	Perf *PerfInfo `json:"perf,omitempty"`
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

// Config returns the record's configuration.
func (r *Record) Config() Config {
	return Config{Workload: r.Workload, Clients: r.Clients, CPUs: r.CPUs, Settings: r.Settings}
}

// ErrNotResults: a directory without plan.json.
var ErrNotResults = errors.New("matrix: not a results directory")

// ReadPlan reads dir/plan.json.
func ReadPlan(dir string) (*Plan, error) {
	data, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%w: %s has no %s", ErrNotResults, dir, PlanFile)
	}
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, exitcode.BadInputf("%s: %v", filepath.Join(dir, PlanFile), err)
	}
	if p.Version != PlanVersion {
		return nil, exitcode.BadInputf("%s: plan version %d, this abtest reads %d", filepath.Join(dir, PlanFile), p.Version, PlanVersion)
	}
	return &p, nil
}

// ReadRecords reads dir/cells.jsonl. A line that does not parse (the
// last one of a killed run, typically) is skipped with a warning.
func ReadRecords(dir string) ([]Record, []string, error) {
	f, err := os.Open(filepath.Join(dir, CellsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var out []Record
	var warnings []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 256*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil || r.Cell == "" {
			warnings = append(warnings, fmt.Sprintf("%s line %d is incomplete (a run killed while writing?); skipped", filepath.Join(dir, CellsFile), n))
			continue
		}
		out = append(out, r)
	}
	return out, warnings, sc.Err()
}

// writePlan writes plan.json atomically.
func writePlan(dir string, p *Plan) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, PlanFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, PlanFile))
}

// appendRecord appends one line to cells.jsonl and fsyncs it: a killed
// run keeps every finished cell.
func appendRecord(dir string, r *Record) error {
	return jsonl.Append(filepath.Join(dir, CellsFile), r)
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._=-]`)

// cellDir is where a cell's artefacts go: cells/<cell id>, each part of
// the id made safe as a path component.
func cellDir(dir, id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		p = unsafeRE.ReplaceAllString(p, "_")
		if p == "." || p == ".." || p == "" {
			p = "_" + p
		}
		parts[i] = p
	}
	return filepath.Join(append([]string{dir, CellsDir}, parts...)...)
}
