package results

// A cells.jsonl line decoded without reflection. encoding/json was most
// of reading a big run (100 000 cells: a map made per record for its
// metrics, every string allocated, then shared again by the interner).
// lineDecoder reads the fields a recorded cell has, in the form abtest
// writes them, straight into a Record, sharing strings and settings as
// it goes; the series and rarer objects (samples, waits, probe, …) are
// handed to json.Unmarshal whole. Anything else it meets (an escaped
// string, a null, an unknown, repeated or differently cased key, a
// number an int cannot hold, bad syntax) makes it give up, and the line
// is decoded by json.Unmarshal as before: the fast path never decides a
// case of its own, so it cannot disagree with it.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// lineDecoder decodes the lines of one worker; its buffers are reused
// from line to line.
type lineDecoder struct {
	in       *interner
	pairs    [][2][]byte // a string map's keys and values, in order
	progress []Progress
	names    [][]byte // a metrics object's names, in order
	vals     []float64
	// progSlab and valSlab are where the records' progress reports
	// and metric values are kept, each record's slice of them capped
	// at its length: one allocation per record for each was two of
	// the three a line made.
	progSlab []Progress
	valSlab  []float64
	// noProgress leaves the records' progress reports out, read (a
	// line whose reports do not decode does not either) but not kept.
	noProgress bool
}

func newLineDecoder(in *interner) *lineDecoder { return &lineDecoder{in: in} }

// decode fills the zero rec from line as json.Unmarshal and
// interner.record would; false when it gave up (rec is then to be
// zeroed and decoded by json.Unmarshal).
func (d *lineDecoder) decode(line []byte, rec *Record) bool {
	s := scanner{b: line}
	var seen [len(recordFields)]bool
	if !s.object(recordFields[:], seen[:], func(f int) bool { return d.field(&s, f, rec) }) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// The keys of a Record (its Config's inline), as json.Marshal writes
// them.
var recordFields = [...]string{"cell", "seq", "commit", "workload", "clients", "cpus", "settings", "instructions", "rate", "rate_unit", "vars", "condition",
	"repeat", "status", "started_at", "duration_s", "wall_s", "metrics", "saturated", "samples", "progress", "waits", "final", "probe",
	"error", "log_tail", "warnings", "artifacts", "perf", "server", "pgbench", "saturation", "condition_facts", "instr", "latency_method", "void", "observer"}

// keyOf is k's index in keys, or -1.
func keyOf(keys []string, k []byte) int {
	for i, f := range keys {
		if f == string(k) {
			return i
		}
	}
	return -1
}

// field decodes the value of recordFields[f] (not a null).
func (d *lineDecoder) field(s *scanner, f int, r *Record) (ok bool) {
	switch recordFields[f] {
	case "cell":
		var b []byte
		b, ok = s.str()
		r.Cell = string(b)
	case "commit":
		r.Commit, ok = d.shared(s)
	case "latency_method":
		r.LatencyMethod, ok = d.shared(s)
	case "status":
		var st string
		st, ok = d.shared(s)
		r.Status = Status(st)
	case "error":
		var b []byte
		b, ok = s.str()
		r.Error = string(b)
	case "pgbench":
		r.Pgbench, ok = d.shared(s)
	case "seq":
		r.Seq, ok = s.int()
	case "repeat":
		r.Repeat, ok = s.int()
	case "duration_s":
		r.DurationS, ok = s.float()
	case "wall_s":
		r.WallS, ok = s.float()
	case "saturated":
		r.Saturated, ok = s.bool()
	case "workload", "clients", "cpus", "settings", "instructions", "rate", "rate_unit", "vars", "condition":
		ok = d.configField(s, recordFields[f], &r.Config)
	case "started_at":
		start := s.i
		if _, ok = s.str(); ok {
			ok = r.StartedAt.UnmarshalJSON(s.b[start:s.i]) == nil
		}
	case "metrics":
		r.Metrics, ok = d.metrics(s)
	case "progress":
		r.Progress, ok = d.progressList(s)
	default:
		ok = s.value(d.target(f, r))
	}
	return ok
}

// configField decodes the value of a Config's key k (not a null).
func (d *lineDecoder) configField(s *scanner, k string, c *Config) (ok bool) {
	switch k {
	case "workload":
		c.Workload, ok = d.shared(s)
	case "condition":
		c.Condition, ok = d.shared(s)
	case "clients":
		c.Clients, ok = s.int()
	case "cpus":
		c.CPUs, ok = s.int()
	case "rate":
		c.Rate, ok = s.float()
	case "rate_unit":
		var u string
		u, ok = d.shared(s)
		c.RateUnit = RateUnit(u)
	case "instructions":
		c.Instructions, ok = s.bool()
	case "settings":
		c.Settings, ok = d.strMap(s)
	case "vars":
		c.Vars, ok = d.strMap(s)
	}
	return ok
}

// cells decodes a plan's cells (a JSON array) as json.Unmarshal and the
// interner would; false when it gave up.
func (d *lineDecoder) cells(b []byte) ([]Cell, bool) {
	s := scanner{b: b}
	out, ok := d.cellsAt(&s)
	if !ok {
		return nil, false
	}
	s.space()
	return out, s.i == len(s.b)
}

// cellsAt decodes the array of cells at s, leaving s after it.
func (d *lineDecoder) cellsAt(s *scanner) ([]Cell, bool) {
	// As many as the cells' ids, at most: appended with doublings, the
	// cells of a plan of 10⁵ were allocated 4.5 times over (60 MB), at
	// the time cells.jsonl decodes.
	// Counted by the key that starts them as json.Marshal writes them:
	// `"id"` anywhere was 18 ms at 10⁵ cells, its quote being most of
	// the plan's bytes, where a brace is a few a cell. A plan written
	// otherwise has its cells appended as they come.
	rest := s.b[s.i:]
	out := make([]Cell, 0, min(bytes.Count(rest, []byte(`{"id"`)), len(rest)/16))
	ok := s.array(func() bool {
		var c Cell
		if !d.cell(s, &c) {
			return false
		}
		out = append(out, c)
		return true
	})
	return out, ok
}

// The keys of a Cell (its Config's inline).
var cellFields = [...]string{"id", "seq", "commit", "repeat", "workload", "clients", "cpus", "settings", "instructions", "rate", "rate_unit", "vars", "condition"}

func (d *lineDecoder) cell(s *scanner, c *Cell) bool {
	var seen [len(cellFields)]bool
	return s.object(cellFields[:], seen[:], func(f int) (ok bool) {
		switch f {
		case 0:
			var b []byte
			b, ok = s.str()
			c.ID = string(b)
		case 1:
			c.Seq, ok = s.int()
		case 2:
			c.Commit, ok = d.shared(s)
		case 3:
			c.Repeat, ok = s.int()
		default:
			ok = d.configField(s, cellFields[f], &c.Config)
		}
		return ok
	})
}

// target is where json.Unmarshal decodes a field lineDecoder does not.
func (d *lineDecoder) target(f int, r *Record) any {
	switch recordFields[f] {
	case "samples":
		return &r.Samples
	case "waits":
		return &r.Waits
	case "final":
		return &r.Final
	case "probe":
		return &r.Probe
	case "log_tail":
		return &r.LogTail
	case "warnings":
		return &r.Warnings
	case "artifacts":
		return &r.Artifacts
	case "perf":
		return &r.Perf
	case "server":
		return &r.Server
	case "saturation":
		return &r.Saturation
	case "condition_facts":
		return &r.ConditionFacts
	case "instr":
		return &r.Instr
	case "void":
		return &r.Void
	case "observer":
		return &r.Observer
	}
	panic("results: no target for " + recordFields[f])
}

// shared reads a string and returns the interner's copy of it.
func (d *lineDecoder) shared(s *scanner) (string, bool) {
	b, ok := s.str()
	if !ok {
		return "", false
	}
	if t, ok := d.in.strs[string(b)]; ok {
		return t, true
	}
	return d.in.str(string(b)), true
}

// strMap reads an object of strings as the interner shares it: a map
// equal to one seen before is that one, looked up without being made.
func (d *lineDecoder) strMap(s *scanner) (map[string]string, bool) {
	if !s.next('{') {
		return nil, false
	}
	if s.next('}') {
		return map[string]string{}, true
	}
	d.pairs = d.pairs[:0]
	for {
		k, ok := s.str()
		if !ok || !s.next(':') {
			return nil, false
		}
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		d.pairs = append(d.pairs, [2][]byte{k, v})
		if s.next(',') {
			continue
		}
		if s.next('}') {
			break
		}
		return nil, false
	}
	// In key order (json.Marshal's) and without a repeated key, the
	// pairs spell the interner's key of the map they make.
	sorted := true
	key := d.in.key[:0]
	for i, p := range d.pairs {
		if i > 0 && bytes.Compare(d.pairs[i-1][0], p[0]) >= 0 {
			sorted = false
		}
		key = appendPair(key, p[0], p[1])
	}
	d.in.key = key
	if sorted {
		if m, ok := d.in.maps[string(key)]; ok {
			return m, true
		}
	}
	m := make(map[string]string, len(d.pairs))
	for _, p := range d.pairs {
		m[string(p[0])] = string(p[1])
	}
	return d.in.strMap(m), true
}

// metrics reads the metrics object, its names shared. Names out of
// order (json.Marshal writes a map's in order) are json.Unmarshal's.
func (d *lineDecoder) metrics(s *scanner) (Values, bool) {
	if !s.next('{') {
		return Values{}, false
	}
	if s.next('}') {
		return Values{}, true
	}
	key := d.in.key[:0]
	d.names = d.names[:0]
	vals := d.vals[:0]
	for {
		k, ok := s.str()
		if !ok || !s.next(':') || s.peek() == 'n' {
			return Values{}, false
		}
		if len(d.names) > 0 && bytes.Compare(d.names[len(d.names)-1], k) >= 0 {
			return Values{}, false
		}
		v, ok := s.float()
		if !ok {
			return Values{}, false
		}
		d.names = append(d.names, k)
		key = appendName(key, k)
		vals = append(vals, v)
		if s.next(',') {
			continue
		}
		if s.next('}') {
			break
		}
		return Values{}, false
	}
	d.in.key, d.vals = key, vals
	names, ok := d.in.names[string(key)]
	if !ok {
		own := make([]string, len(d.names))
		for i, n := range d.names {
			own[i] = string(n)
		}
		names = d.in.valueNames(own)
	}
	return Values{names: names, vals: keep(&d.valSlab, vals)}, true
}

// keep copies s into the end of *slab, a new one when it has no room,
// and returns the copy, its capacity its length: appended to, it moves.
func keep[T any](slab *[]T, s []T) []T {
	const n = 1 << 12
	if len(s) == 0 {
		return []T{} // as json.Unmarshal gives []
	}
	if cap(*slab)-len(*slab) < len(s) {
		*slab = make([]T, 0, max(n, len(s)))
	}
	i := len(*slab)
	*slab = append(*slab, s...)
	return (*slab)[i:len(*slab):len(*slab)]
}

// progressList reads pgbench's progress reports into a slice of their
// number.
func (d *lineDecoder) progressList(s *scanner) ([]Progress, bool) {
	d.progress = d.progress[:0]
	ok := s.array(func() bool {
		var p Progress
		var seen [len(progressFields)]bool
		if !s.object(progressFields[:], seen[:], func(f int) bool {
			switch f {
			case 0:
				return s.floatTo(&p.T)
			case 1:
				return s.floatTo(&p.TPS)
			case 2:
				return s.floatTo(&p.LatMS)
			case 3:
				return s.floatTo(&p.StddevMS)
			case 4:
				return s.floatTo(&p.LagMS)
			case 5:
				return s.int64To(&p.Failed)
			default:
				return s.int64To(&p.Skipped)
			}
		}) {
			return false
		}
		d.progress = append(d.progress, p)
		return true
	})
	if !ok || d.noProgress {
		return nil, ok
	}
	return keep(&d.progSlab, d.progress), true
}

// The keys of a Progress report.
var progressFields = [...]string{"t", "tps", "lat_ms", "stddev_ms", "lag_ms", "failed", "skipped"}

// scanner reads JSON tokens from b at i.
type scanner struct {
	b []byte
	i int
}

// object reads a JSON object whose keys are among keys, each at most
// once and never null (seen marks those read), value(i) reading the
// value of keys[i]; false on anything else.
func (s *scanner) object(keys []string, seen []bool, value func(f int) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.next(':') || s.peek() == 'n' {
			return false
		}
		f := keyOf(keys, k)
		if f < 0 || seen[f] {
			return false
		}
		seen[f] = true
		if !value(f) {
			return false
		}
		if !s.next(',') {
			return s.next('}')
		}
	}
}

// array reads a JSON array, elem reading each element; false on
// anything else.
func (s *scanner) array(elem func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !s.next(',') {
			return s.next(']')
		}
	}
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not space (0 at the end).
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// next consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes, of valid UTF-8: its bytes, which
// are the string's (json.Unmarshal replaces bad UTF-8).
func (s *scanner) str() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, ascii || utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads a number as JSON spells it.
func (s *scanner) number() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// float reads a number into a float64 as json.Unmarshal does
// (strconv.ParseFloat, an error beyond its range: parseFloat).
func (s *scanner) float() (float64, bool) {
	n, ok := s.number()
	if !ok {
		return 0, false
	}
	return parseFloat(n)
}

func (s *scanner) floatTo(f *float64) (ok bool) {
	*f, ok = s.float()
	return ok
}

// int64 reads an integer as json.Unmarshal does: a fraction or an
// exponent is an error, as is a value beyond int64.
func (s *scanner) int64() (int64, bool) {
	n, ok := s.number()
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(n), len(n)), 10, 64)
	return i, err == nil
}

func (s *scanner) int64To(i *int64) (ok bool) {
	*i, ok = s.int64()
	return ok
}

func (s *scanner) int() (int, bool) {
	i, ok := s.int64()
	return int(i), ok && int64(int(i)) == i
}

func (s *scanner) bool() (bool, bool) {
	s.space()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// value hands the next value to json.Unmarshal into v. It only finds
// where the value ends (skip); json.Unmarshal judges it.
func (s *scanner) value(v any) bool {
	start, ok := s.skip()
	return ok && json.Unmarshal(s.b[start:s.i], v) == nil
}

// skip moves past the next value, finding only where it ends (strings
// and nesting), not whether it is valid; it returns where it starts.
func (s *scanner) skip() (start int, ok bool) {
	s.space()
	start, depth := s.i, 0
scan:
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
				if s.b[s.i] == '\\' {
					s.i++
				}
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
			continue
		case '}', ']':
			if depth == 0 {
				break scan
			}
			depth--
			s.i++
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				break scan
			}
			s.i++
			continue
		default:
			s.i++
			continue
		}
		// A string or a closing bracket that ends the value.
		if depth == 0 {
			break
		}
	}
	return start, s.i <= len(s.b)
}
