package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
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
	Progress  []Progress        `json:"progress,omitempty"`
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

// decodePlan decodes a plan as json.Unmarshal does. A big plan's cells
// share their configurations' settings (read them, never write them):
// 10⁵ cells took 53 MB, most of it maps. They are decoded by
// lineDecoder, where it can: by json.Unmarshal, they were most of
// reading such a plan.
func decodePlan(data []byte) (*Plan, error) {
	// The outer Cells hides the plan's own from json.Unmarshal, and
	// decodes them where they are (a json.RawMessage was a copy of them,
	// 18 MB at 10⁵ cells, while cells.jsonl decodes).
	in := newInterner()
	d := newLineDecoder(in)
	type plan struct {
		Plan
		Cells planCells `json:"cells"`
	}
	var p Plan
	ok := false
	// First the plan without its cells, which lineDecoder reads: given
	// them, json.Unmarshal scanned them twice before (to check the
	// whole, then to find their end), 0.2 CPU-s at 10⁵ cells. The
	// cells' key must be the only one json.Unmarshal gives them
	// (planCells counts), or the plan is read as below.
	if rest, cells, found := cutCells(data, d); found {
		v := plan{Cells: planCells{d: d, ok: true}}
		if json.Unmarshal(rest, &v) == nil && v.Cells.ok && v.Cells.keys == 1 {
			p, ok = v.Plan, true
			p.Cells = cells
		}
	}
	if !ok {
		v := plan{Cells: planCells{d: d, ok: true}}
		ok = json.Unmarshal(data, &v) == nil && v.Cells.ok
		p = v.Plan
		p.Cells = v.Cells.cells
	}
	if !ok {
		// The plan as a whole, as before (and for json.Unmarshal's
		// error, which names the field by its path), its cells shared
		// as lineDecoder shares them.
		p = Plan{}
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		for i := range p.Cells {
			c := &p.Cells[i]
			c.Commit = in.str(c.Commit)
			in.config(&c.Config)
		}
	}
	return &p, nil
}

// cutCells decodes the cells of a plan's top-level "cells" key (the
// first), and returns the plan with null in their place; found is false
// where it gives up (no such key, an escaped key, a value it does not
// read). Where the rest then decodes, the whole is valid JSON, and
// json.Unmarshal would have given the cells to that key.
func cutCells(data []byte, d *lineDecoder) (rest []byte, cells []Cell, found bool) {
	s := scanner{b: data}
	if !s.next('{') || s.next('}') {
		return nil, nil, false
	}
	for {
		k, ok := s.str()
		if !ok || !s.next(':') {
			return nil, nil, false
		}
		if string(k) == "cells" {
			s.space()
			start := s.i
			if cells, ok = d.cellsAt(&s); !ok {
				return nil, nil, false
			}
			rest = make([]byte, 0, len(data)-(s.i-start)+len("null"))
			rest = append(append(append(rest, data[:start]...), "null"...), data[s.i:]...)
			return rest, cells, true
		}
		if _, ok := s.skip(); !ok {
			return nil, nil, false
		}
		if !s.next(',') {
			return nil, nil, false
		}
	}
}

// planCells decodes a plan's cells with a lineDecoder; ok is false
// where it gave up (and json.Unmarshal decodes the plan whole).
type planCells struct {
	d     *lineDecoder
	cells []Cell
	ok    bool
	keys  int // how many keys json.Unmarshal gave the cells
}

func (c *planCells) UnmarshalJSON(b []byte) error {
	c.keys++
	// A second "cells" (json.Unmarshal keeps the last) after one it
	// gave up on still sends the plan to json.Unmarshal, for its error.
	if string(b) == "null" {
		c.cells = nil
		return nil
	}
	var ok bool
	c.cells, ok = c.d.cells(b)
	c.ok = c.ok && ok
	return nil
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
	return ReadRecordsEach(dir, nil)
}

// ReadRecordsEach is ReadRecords handing the records to each as they
// are decoded, block by block (about a megabyte of lines) in the file's
// order, the lines that do not decode left out: a reader such as the
// store's import starts on the first records while the rest decode
// (the whole of 100 000 cells takes a core-second). each runs on the
// goroutine that gathers the blocks and decoding waits for it: it must
// hand the records on, not work on them. The records it is given equal
// those ReadRecordsEach returns, sharing their strings, maps and slices:
// read them, never write them.
func ReadRecordsEach(dir string, each func([]Record)) ([]Record, []string, error) {
	return readRecords(dir, each, false)
}

// ReadRecordsNoProgress is ReadRecords without the records' progress
// reports (Progress nil), which only the plots read: 19 MB at 10⁵
// cells. A line whose reports do not decode does not either.
func ReadRecordsNoProgress(dir string) ([]Record, []string, error) {
	return readRecords(dir, nil, true)
}

func readRecords(dir string, each func([]Record), noProgress bool) ([]Record, []string, error) {
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
	return decodeRecords(f, filepath.Join(dir, CellsFile), size, each, noProgress)
}

// DecodeRecords reads cells.jsonl lines from r; name is for warnings.
// Blocks of lines are decoded by one worker per CPU, in order: decoding
// is most of reading a big run (85 MB, 100 000 cells). Records of one
// configuration share its Settings and Vars maps (and equal strings):
// read them, never write them.
func DecodeRecords(r io.Reader, name string) ([]Record, []string, error) {
	return decodeRecords(r, name, 0, nil, false)
}

// decodeRecords is DecodeRecords of size bytes (0: not known), each
// (when not nil) given each block's records as ReadRecordsEach says,
// without their progress reports when noProgress.
func decodeRecords(r io.Reader, name string, size int64, each func([]Record), noProgress bool) ([]Record, []string, error) {
	work := make(chan *chunk)
	order := make(chan *chunk, 2*runtime.GOMAXPROCS(0))
	spare := newSpares()
	for range runtime.GOMAXPROCS(0) {
		go decodeChunks(work, spare, noProgress)
	}
	// readErr is set before order closes: set after (sendChunks
	// closing it), it raced with the read below and a read error
	// could be lost.
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		readErr = sendChunks(r, size, spare, order, work)
	}()
	var out []Record
	var chunks [][]Record // of an unknown size
	var warnings []string
	n, end := 0, 0 // records gathered; the end of those decoded in place
	for c := range order {
		<-c.done
		m := len(c.recs)
		switch {
		case c.dst != nil:
			// In place, after the lines of those before that were
			// no record: moved back over them. Those before (handed
			// to each) stay; those after are decoded past this
			// chunk's lines.
			out = c.all[:n+m]
			if c.at != n {
				copy(out[n:], c.all[c.at:c.at+m])
			}
			end = c.at + m
		case out != nil:
			// Past the slice's end (the file grew, or its first
			// lines were longer): no chunk after is decoded into it;
			// it grows, the blocks handed before staying in the
			// array they were in, unchanged.
			out = append(out, c.recs...)
			spare.putRecs(c.recs)
		default:
			chunks = append(chunks, c.recs)
		}
		n += m
		if each != nil && m > 0 {
			if out != nil {
				each(out[n-m : n : n])
			} else {
				each(c.recs[:m:m])
			}
		}
		for _, b := range c.bad {
			warnings = append(warnings, fmt.Sprintf("%s line %d does not decode (%v); skipped: a run killed while writing it, or a value JSON cannot hold (NaN, 1e999)", name, b.n, b.err))
		}
	}
	if n == 0 {
		return nil, warnings, readErr
	}
	if out == nil {
		out = make([]Record, 0, n)
		for _, recs := range chunks {
			out = append(out, recs...)
		}
	} else if end > n {
		// Moved back, the last records left copies of theirs (unless
		// out grew out of their array since).
		clear(out[n:min(end, cap(out))])
	}
	return out, warnings, readErr
}

// sendChunks reads r's chunks (readChunks) and sends each to order and
// work.
func sendChunks(r io.Reader, size int64, spare *spares, order, work chan<- *chunk) error {
	// Of a known size, the records are decoded where they are kept: in
	// a slice of the size the first block's bytes per line predict,
	// each chunk from where its first line is (as if every line before
	// it were a record) to its last. Decoded apart and copied in (43
	// MB at 10⁵ cells), the copy was most of what the goroutine
	// gathering them did, 0.08 CPU-s, the decoders waiting.
	var all []Record
	return readChunks(r, spare, func(c *chunk) {
		if size > 0 && all == nil && c.lines > 0 {
			all = make([]Record, 0, int(size*int64(c.lines)/int64(c.bytes)*21/20)+1)
		}
		if all != nil && c.at+c.lines <= cap(all) {
			c.all, c.dst = all, all[c.at:c.at:c.at+c.lines]
		}
		order <- c
		work <- c
	})
}

// spares are the blocks and record slices of decoded chunks, for the
// next ones: made new for every chunk, they were 125 MB of garbage at
// 10⁵ cells (the file's size, and every record once more). Nothing
// decoded points into a block: lineDecoder copies what it keeps.
type spares struct {
	blocks chan []byte
	recs   chan []Record
}

func newSpares() *spares {
	// As many as can be in flight: decodeRecords' order channel, a
	// chunk per worker and one being read.
	n := 3*runtime.GOMAXPROCS(0) + 2
	return &spares{blocks: make(chan []byte, n), recs: make(chan []Record, n)}
}

// block returns an empty block of at least size bytes' capacity.
func (s *spares) block(size int) []byte { return spare(s.blocks, size) }

func (s *spares) putBlock(b []byte) { keepSpare(s.blocks, b) }

// records returns an empty slice of records of at least n capacity.
func (s *spares) records(n int) []Record { return spare(s.recs, n) }

// spare returns an empty slice of at least n capacity: one kept in ch
// if it is big enough, else a new one.
func spare[T any](ch chan []T, n int) []T {
	select {
	case v := <-ch:
		if cap(v) >= n {
			return v[:0]
		}
	default:
	}
	return make([]T, 0, n)
}

// keepSpare keeps v in ch for spare, unless ch is full.
func keepSpare[T any](ch chan []T, v []T) {
	select {
	case ch <- v:
	default:
	}
}

// putRecs takes back a slice whose records were copied: cleared, so
// that it holds nothing of theirs alive.
func (s *spares) putRecs(r []Record) {
	clear(r)
	keepSpare(s.recs, r)
}

// readChunks reads r in blocks of whole lines (a line longer than a
// block makes the block grow) and hands each to send. The lines are
// never copied one by one: at 10⁵ cells, their copies were 160 MB of
// garbage.
func readChunks(r io.Reader, spare *spares, send func(*chunk)) error {
	const size = 1 << 20
	line := 1
	var rest []byte
	for {
		buf := spare.block(max(size, 2*len(rest)))
		buf = append(buf, rest...)
		n, err := io.ReadFull(r, buf[len(rest):cap(buf)])
		buf = buf[:len(rest)+n]
		end := bytes.LastIndexByte(buf, '\n') + 1
		last := err != nil
		if last {
			end = len(buf)
		} else if end == 0 {
			rest = buf
			continue
		}
		c := &chunk{first: line, at: line - 1, data: buf[:end], bytes: end, done: make(chan struct{})}
		c.lines = bytes.Count(c.data, []byte{'\n'})
		line += c.lines
		if end > 0 && buf[end-1] != '\n' {
			c.lines++ // the last, unended
		}
		// The rest is copied into the next block at once: this one
		// goes back to the spares when its chunk is decoded.
		rest = append(rest[:0:0], buf[end:]...)
		send(c)
		if last {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil
			}
			return err
		}
	}
}

// chunk is consecutive lines of cells.jsonl, decoded by one worker.
type chunk struct {
	first int    // line number of data's first line
	data  []byte // whole lines
	bytes int    // len(data)
	at    int    // lines before data's
	lines int    // lines in data
	// all is the records' slice where dst, its lines' place, is (not
	// nil): the chunk is decoded into dst.
	all, dst []Record
	recs     []Record
	bad      []badLine // lines that did not decode
	done     chan struct{}
}

// decodeChunks decodes the chunks of work, closing each one's done.
func decodeChunks(work <-chan *chunk, spare *spares, noProgress bool) {
	d := newLineDecoder(newInterner())
	d.noProgress = noProgress
	for c := range work {
		if c.dst != nil {
			c.recs = c.dst
		} else {
			c.recs = spare.records(c.lines)
		}
		n := c.first
		for data := c.data; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			// Decoded where it is kept: a Record of its own per line
			// escaped (json.Unmarshal takes its address), 48 MB at
			// 10⁵ cells.
			c.recs = append(c.recs, Record{})
			if err := d.line(line, &c.recs[len(c.recs)-1]); err != nil {
				c.recs = c.recs[:len(c.recs)-1]
				c.bad = append(c.bad, badLine{n, err})
			}
		}
		spare.putBlock(c.data[:0])
		c.data = nil
		close(c.done)
	}
}

// line decodes one line into the zero rec: by the fast path where it
// can, else by json.Unmarshal. rec is zero again after an error.
func (d *lineDecoder) line(line []byte, rec *Record) error {
	if d.decode(line, rec) && rec.Cell != "" {
		return nil
	}
	*rec = Record{}
	if err := d.unmarshal(line, rec); err != nil {
		*rec = Record{}
		return err
	}
	return nil
}

// unmarshal decodes a line with json.Unmarshal, as lineDecoder's
// results must be.
func (d *lineDecoder) unmarshal(line []byte, rec *Record) error {
	err := json.Unmarshal(line, rec)
	if err == nil && rec.Cell == "" {
		err = errors.New("no cell id")
	}
	if err != nil {
		return err
	}
	if bytes.Contains(line, []byte("null")) {
		nullMetrics(line, rec)
	}
	if d.noProgress {
		rec.Progress = nil
	}
	d.in.record(rec)
	return nil
}

// badLine is a line of cells.jsonl that did not decode, and why.
type badLine struct {
	n   int
	err error
}

// nullMetrics marks a metric written as null as NaN, not a measurement:
// decoded into the map it would be 0, and a tps of 0 taken for a value.
func nullMetrics(line []byte, rec *Record) {
	var v struct {
		Metrics map[string]*float64 `json:"metrics"`
	}
	if json.Unmarshal(line, &v) != nil {
		return
	}
	for m, x := range v.Metrics {
		if x == nil {
			rec.Metrics.Set(m, math.NaN())
		}
	}
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
