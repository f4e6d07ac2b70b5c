package perf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Cachegrind is what one cachegrind output file (valgrind
// --tool=cachegrind, format of valgrind 3.x) says: the instructions
// executed (event Ir) per function. With --cache-sim=no Ir is the only
// event; with the cache simulation on, the other columns are ignored.
//
// Cachegrind counts each function's own instructions (its "self" cost):
// it keeps no call graph, so a profile made from it is flat. That is
// enough to rank what changed, and cachegrind with the cache simulation
// off runs about twice as fast as callgrind.
type Cachegrind struct {
	// Cmd is the command line valgrind ran (the "cmd:" line).
	Cmd string
	// Total is the whole file's instruction count (its "summary:" line).
	Total int64
	// Funcs holds the instructions of each function; a function
	// valgrind could not name (no symbols) is "???".
	Funcs map[Func]int64
}

// Func names a function the way cachegrind does: its source file (or
// "???") and its name; two static functions of one name in different
// files are different functions.
type Func struct {
	File string
	Name string
}

// ErrCachegrind: the file is not cachegrind output, or its counts do not
// add up to its summary (a file cut short).
var ErrCachegrind = errors.New("perf: cachegrind output")

// ParseCachegrind reads one cachegrind output file.
func ParseCachegrind(r io.Reader) (*Cachegrind, error) {
	c := &Cachegrind{Funcs: map[Func]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	col := -1
	var cur Func
	var sum int64
	haveSummary := false
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "events:"):
			for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				if e == "Ir" {
					col = i
				}
			}
			if col < 0 {
				return nil, fmt.Errorf("%w: line %d: no Ir event in %q", ErrCachegrind, n, line)
			}
		case strings.HasPrefix(line, "cmd:"):
			c.Cmd = strings.TrimSpace(strings.TrimPrefix(line, "cmd:"))
		case strings.HasPrefix(line, "desc:"):
		case strings.HasPrefix(line, "fl="):
			cur = Func{File: line[3:]}
		case strings.HasPrefix(line, "fn="):
			cur.Name = line[3:]
		case strings.HasPrefix(line, "summary:"):
			f := strings.Fields(strings.TrimPrefix(line, "summary:"))
			if col < 0 || len(f) <= col {
				return nil, fmt.Errorf("%w: line %d: bad summary %q", ErrCachegrind, n, line)
			}
			v, err := strconv.ParseInt(f[col], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: line %d: bad summary %q", ErrCachegrind, n, line)
			}
			c.Total, haveSummary = v, true
		default:
			// "LINE COUNT…": counts of one source line; trailing zero
			// counts may be left out.
			if col < 0 || cur.Name == "" {
				return nil, fmt.Errorf("%w: line %d: counts before events:/fn=: %q", ErrCachegrind, n, line)
			}
			f := strings.Fields(line)
			if len(f) <= col+1 {
				continue
			}
			v, err := strconv.ParseInt(f[col+1], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: line %d: bad count %q", ErrCachegrind, n, line)
			}
			c.Funcs[cur] += v
			sum += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if col < 0 {
		return nil, fmt.Errorf("%w: no events: line", ErrCachegrind)
	}
	if !haveSummary {
		return nil, fmt.Errorf("%w: no summary: line (file cut short?)", ErrCachegrind)
	}
	if sum != c.Total {
		return nil, fmt.Errorf("%w: functions add up to %d instructions, summary says %d", ErrCachegrind, sum, c.Total)
	}
	return c, nil
}

// Add adds o's counts to c: the backends of one run, summed.
func (c *Cachegrind) Add(o *Cachegrind) {
	if c.Funcs == nil {
		c.Funcs = map[Func]int64{}
	}
	c.Total += o.Total
	for f, v := range o.Funcs {
		c.Funcs[f] += v
	}
}

// Sub returns c minus base, function by function: the instructions of
// the transactions a longer run had beyond a shorter one. Functions whose
// difference is zero are left out; a difference can be negative (a
// function the shorter run happened to call more often).
func (c *Cachegrind) Sub(base *Cachegrind) *Cachegrind {
	d := &Cachegrind{Cmd: c.Cmd, Total: c.Total - base.Total, Funcs: map[Func]int64{}}
	for f, v := range c.Funcs {
		if v -= base.Funcs[f]; v != 0 {
			d.Funcs[f] = v
		}
	}
	for f, v := range base.Funcs {
		if _, ok := c.Funcs[f]; !ok && v != 0 {
			d.Funcs[f] = -v
		}
	}
	return d
}

// InstructionProfile turns per-function instruction counts into a pprof
// profile with one sample per function, of sample type
// instructions/count: pprof, flame-graph viewers and Compare read it.
// transactions, when positive, is recorded in a comment
// ("transactions=N") for readers that normalise per transaction.
//
// The profile's Period is 0: its values are exact counts, not samples,
// so Compare gives them no sampling error (Z = 0).
func InstructionProfile(c *Cachegrind, transactions int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"},
	}
	if transactions > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("transactions=%d", transactions))
	}
	funcs := make([]Func, 0, len(c.Funcs))
	for f := range c.Funcs {
		funcs = append(funcs, f)
	}
	sort.Slice(funcs, func(i, j int) bool {
		if funcs[i].Name != funcs[j].Name {
			return funcs[i].Name < funcs[j].Name
		}
		return funcs[i].File < funcs[j].File
	})
	for i, f := range funcs {
		id := uint64(i + 1)
		fn := &profile.Function{ID: id, Name: f.Name, SystemName: f.Name, Filename: f.File}
		loc := &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{c.Funcs[f]}})
	}
	return p
}
