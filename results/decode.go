package results

// How cells.jsonl and plan.json decode: with
// github.com/go-json-experiment/json, the prototype of encoding/json/v2
// (the toolchain's own needs GOEXPERIMENT=jsonv2), with encoding/json's
// (v1) rules.
//
// encoding/json checks each line's syntax in a pass of its own and then
// decodes it in another; v2 decodes in one. 100 000 cells of
// bench/gen100k (85 MB of cells.jsonl, 18 MB of plan.json), user CPU-s
// of abtest analyze (/usr/bin/time, the three binaries alternated, 4
// rounds md and 3 json, load average 3.1–3.7 on 2 cores), md / json:
//
//	hand-written decoder (12e0d13)  1.05–1.14 / 0.74–0.87
//	encoding/json (0ee5899)         3.85–3.96 / 3.43–3.64
//	this file                       1.97–2.04 / 1.65–1.83
//
// The load step alone (bench/analyzeprof -count 3, CPU-s): 0.77–0.84 by
// hand, 2.83–2.90 with encoding/json, 0.96–1.04 here; the rest of the
// gap is the analysis, slower since 12e0d13 (0.27 → 0.46 CPU-s) whatever
// the decoder.
//
// Since (recorddecode.go: maps shared as they decode, dropped progress
// reports in a reused buffer, the plan's cells sized once; block buffers
// reused; analysis' configuration IDs by their fields), same runs, load
// average 3.1–3.4: abtest analyze --format json 1.60–1.65 → 1.25–1.31
// user CPU-s, wall 1.84 → 1.44 s, peak RSS 197–237 → 163–168 MB; md
// 3.49 → 3.04 (most of it the plots); the load step 1.02–1.12 → 0.83–
// 0.91 CPU-s. What is left is v2's own work: strconv for each float
// (0.1 CPU-s), reflection over each record's fields, progress reports
// decoded, every field checked, to be dropped (0.2; their TPS summary
// kept: ReadRecordsNoProgress), the plan's 10⁵ cells (0.13), each with
// its configuration: the analysis counts the planned cells of each.

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// v1Semantics are encoding/json's rules for what abtest reads: a
// repeated name's last value counts, a name matches a field whatever
// its case, invalid UTF-8 becomes U+FFFD. A null is the zero value (v1
// leaves the value as it was: the zero value, in what abtest decodes
// into); unknown names are ignored in both.
var v1Semantics = jsonv2.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv2.MatchCaseInsensitiveNames(true),
)

// metricNames are the built-in metrics' names: a decoded name that is
// one of them is that string, not a new one (12 a record at 10⁵ cells).
var metricNames = func() map[string]string {
	m := make(map[string]string, len(Builtin))
	for _, d := range Builtin {
		m[d.Name] = d.Name
	}
	return m
}()

// lastNames are the metric names a decoder read last: a run's records
// come a configuration at a time, so the next record's are most often
// the same, and then they are that slice, shared (Values' names are
// read, never written), not a new one. Looking each name up in
// metricNames was 0.08 CPU-s at 10⁵ cells.
var lastNames = sync.Pool{New: func() any { return new([]string) }}

// UnmarshalJSONFrom reads an object as UnmarshalJSON does, token by
// token from the line's decoder: no second pass over the metrics.
func (v *Values) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		*v = Values{}
		return nil
	case '{':
	default:
		return errors.New("metrics: not an object")
	}
	last := lastNames.Get().(*[]string)
	defer lastNames.Put(last)
	// The names and values gather on the stack, then go to the heap in
	// one allocation each, of their size: growing them was 0.1 CPU-s at
	// 10⁵ cells.
	var nbuf [32]string
	var vbuf [32]float64
	names, vals := nbuf[:0], vbuf[:0]
	same, sorted := true, true
	for dec.PeekKind() != '}' {
		if tok, err = dec.ReadToken(); err != nil {
			return err
		}
		var name string
		if k := len(names); same && k < len(*last) && (*last)[k] == tok.String() {
			name = (*last)[k]
		} else if same = false; metricNames[tok.String()] != "" {
			name = metricNames[tok.String()]
		} else {
			name = tok.String()
		}
		x, err := metricValue(dec, name)
		if err != nil {
			return err
		}
		sorted = sorted && (len(names) == 0 || names[len(names)-1] < name)
		names = append(names, name)
		vals = append(vals, x)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if len(names) == 0 {
		*v = Values{}
		return nil
	}
	var kept []string // names on the heap (names may be on the stack)
	switch {
	case !sorted:
		kept, vals = sortLast(names, vals)
	case same && len(names) == len(*last):
		kept = *last
	default:
		kept = slices.Clone(names)
	}
	*last = kept
	*v = Values{names: kept, vals: slices.Clone(vals)}
	return nil
}

// metricValue reads a metric's value: a number, or null for NaN (not a
// measurement). It parses the value's bytes, not Token.Float: that
// clamps 1e999 to the largest float, where json.Unmarshal fails.
func metricValue(dec *jsontext.Decoder, name string) (float64, error) {
	val, err := dec.ReadValue()
	if err != nil {
		return 0, err
	}
	switch val.Kind() {
	case '0':
		x, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return 0, fmt.Errorf("metrics: %s: %w", name, err)
		}
		return x, nil
	case 'n':
		return math.NaN(), nil
	}
	return 0, errors.New("metrics: " + name + " is not a number")
}

// UnmarshalJSONFrom reads the reports as json.Unmarshal reads a slice
// of them, into a pooled buffer first, then to the heap at their size:
// growing the slice report by report was 0.12 CPU-s at 10⁵ cells, and
// decoding them one by one 0.23.
func (p *ProgressReports) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	buf := progressBufs.Get().(*[]Progress)
	defer progressBufs.Put(buf)
	*buf = (*buf)[:0] // its capacity reused
	if err := jsonv2.UnmarshalDecode(dec, buf); err != nil {
		return err
	}
	if *buf == nil {
		*p = nil // null
	} else {
		*p = append(make(ProgressReports, 0, len(*buf)), *buf...)
	}
	return nil
}

// progressBufs are buffers of progress reports being decoded.
var progressBufs = sync.Pool{New: func() any { return new([]Progress) }}

// sortLast sorts names with their values, the last of a repeated name
// kept.
func sortLast(names []string, vals []float64) ([]string, []float64) {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	// Stable: a repeated name's values stay in the line's order.
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(names[a], names[b]) })
	var n []string
	var x []float64
	for k, i := range idx {
		if k+1 < len(idx) && names[idx[k+1]] == names[i] {
			continue
		}
		n = append(n, names[i])
		x = append(x, vals[i])
	}
	return n, x
}

// maxLine is the longest line of cells.jsonl read: far beyond any
// record abtest writes (a log tail is a few kilobytes); a longer one
// stops the reading with an error.
const maxLine = 1 << 30

// blockSize is about how many bytes of lines a block holds.
const blockSize = 1 << 20

// decodeRecords decodes r's lines, blocks of about a megabyte of lines
// by one goroutine per CPU, gathered in order; noProgress leaves their
// progress reports out. size is r's, when known (else 0): the
// records then decode in place, into one slice as long as the first
// block's lines predict, and only those past it are copied. A line that
// does not decode is skipped with a warning.
func decodeRecords(r io.Reader, name string, size int64, noProgress bool) ([]Record, []string, error) {
	order := make(chan *block, 2*runtime.GOMAXPROCS(0))
	work := make(chan *block)
	// Blocks' buffers, decoded, are read into again: records keep none
	// of their bytes (the library copies strings). A new megabyte a
	// block was 85 MB of garbage at 10⁵ cells, cleared and faulted in.
	free := make(chan []byte, cap(order)+runtime.GOMAXPROCS(0)+1)
	for range runtime.GOMAXPROCS(0) {
		go func() {
			d := newLineDecoder(noProgress)
			for b := range work {
				b.decode(d, name)
				if cap(b.buf) == blockSize {
					select {
					case free <- b.buf:
					default:
					}
				}
				b.buf = nil
				close(b.done)
			}
		}()
	}
	// readErr and all are set before order closes, which the loop below
	// waits for.
	var readErr error
	var all []Record
	go func() {
		defer close(order)
		defer close(work)
		start := 0
		readErr = readBlocks(r, free, func(b *block) {
			if all == nil && size > 0 && b.lines > 0 {
				// As many as the first block's lines predict, 5 % more.
				all = make([]Record, int(size*int64(b.lines)/int64(len(b.data))*21/20)+1)
			}
			if start+b.lines <= len(all) {
				b.recs = all[start : start : start+b.lines]
				b.start = start
				start += b.lines
			} else {
				b.start, start = -1, len(all)+1
			}
			order <- b
			work <- b
		})
	}()
	var out []Record
	var warnings []string
	for b := range order {
		<-b.done
		warnings = append(warnings, b.warnings...)
		if b.start >= 0 && out == nil {
			out = all[:0]
		}
		if b.start >= 0 && len(out) == b.start {
			out = out[:len(out)+len(b.recs)]
		} else {
			// Copied: past the slice in place, or moved back over
			// the lines before it that were no record (blank, torn).
			out = append(out, b.recs...)
		}
		b.recs = nil
	}
	if len(out) == 0 {
		return nil, warnings, readErr
	}
	return out, warnings, readErr
}

// block is consecutive lines of cells.jsonl, and their records once
// decoded (done closed).
type block struct {
	first int    // the number of data's first line
	data  []byte // the lines, each but the last one of r ended by a newline
	buf   []byte // data's buffer, whole
	lines int    // how many
	// start is the index in the slice in place of recs' first record,
	// -1 when recs are the block's own.
	start    int
	recs     []Record
	warnings []string
	done     chan struct{}
}

// readBlocks reads r's lines into blocks of about blockSize bytes, in
// a buffer from free if there is one, and hands each to send. A read
// error ends the lines before the one it cut.
func readBlocks(r io.Reader, free <-chan []byte, send func(*block)) error {
	n := 1           // the number of the next line
	var carry []byte // the start of a line the last block did not end
	for {
		var data []byte
		if len(carry) > blockSize/2 {
			data = make([]byte, 2*len(carry))
		} else {
			select {
			case data = <-free:
			default:
				data = make([]byte, blockSize)
			}
		}
		copy(data, carry)
		k, err := io.ReadFull(r, data[len(carry):])
		data = data[:len(carry)+k]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		cut := len(data)
		if !eof {
			cut = bytes.LastIndexByte(data, '\n') + 1
		}
		if cut == 0 && err == nil {
			// No newline in a whole block: one line longer, read on.
			if len(data) > maxLine {
				return fmt.Errorf("line %d: %w", n, bufio.ErrTooLong)
			}
			carry = data
			continue
		}
		if cut > 0 {
			carry = append([]byte(nil), data[cut:]...)
			b := &block{first: n, data: data[:cut], buf: data, done: make(chan struct{})}
			b.lines = bytes.Count(b.data, []byte{'\n'})
			if b.data[cut-1] != '\n' {
				b.lines++
			}
			n += b.lines
			send(b)
		}
		switch {
		case eof:
			return nil
		case err != nil:
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
}

// decode decodes the block's lines with d; name is for warnings.
func (b *block) decode(d *lineDecoder, name string) {
	n := b.first
	for line := range bytes.Lines(b.data) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			b.recs = append(b.recs, Record{})
			rec := &b.recs[len(b.recs)-1]
			if err := d.decode(line, rec); err != nil {
				b.recs = b.recs[:len(b.recs)-1]
				b.warnings = append(b.warnings, fmt.Sprintf("%s line %d does not decode (%v); skipped: a run killed while writing it, or a value JSON cannot hold (NaN, 1e999)", name, n, err))
			} else if len(b.recs) > 1 {
				rec.share(&b.recs[len(b.recs)-2])
			}
		}
		n++
	}
	b.data = nil
}

// share makes r's metric names prev's where they are equal (a run's
// records come a configuration at a time): each record's own were a
// third of what 100 000 records kept alive, and of the collector's
// work. They are read, never written (Values.Set copies). Settings and
// variables are shared as they decode (mapCache).
func (r *Record) share(prev *Record) {
	if names := prev.Metrics.names; slices.Equal(r.Metrics.names, names) {
		r.Metrics.names = names
	}
}
