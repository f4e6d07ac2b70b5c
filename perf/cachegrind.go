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

// Cachegrind is what one cachegrind or callgrind output file (valgrind
// 3.x) says: the instructions executed (event Ir) per function. With
// --cache-sim=no Ir is the only event; other columns are ignored.
//
// Each function's own instructions (its "self" cost) are kept: a profile
// made from them is flat. That is enough to rank what changed. Callgrind's
// call records (a calls= line and the inclusive cost after it) are read
// past, so its self costs add up to its totals like cachegrind's.
type Cachegrind struct {
	// Cmd is the command line valgrind ran (the "cmd:" line).
	Cmd string
	// Total is the whole file's instruction count (callgrind's "totals:"
	// line, else the "summary:" line).
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

// ErrCachegrind: the file is not cachegrind or callgrind output, or its
// counts do not add up to its summary (a file cut short).
var ErrCachegrind = errors.New("perf: cachegrind output")

// ParseCachegrind reads one cachegrind or callgrind output file, with or
// without callgrind's name compression ("fn=(12) name", then "fn=(12)").
func ParseCachegrind(r io.Reader) (*Cachegrind, error) {
	c := &Cachegrind{Funcs: map[Func]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	col := -1
	// npos is the number of position columns before the counts
	// (cachegrind: the line; callgrind: "positions:", line by default).
	npos := 1
	var cur Func
	var sum, summary, totals int64 = 0, -1, -1
	// Compressed names: callgrind's files and functions by id.
	files, fns := map[string]string{}, map[string]string{}
	skipCall := false
	n := 0
	total := func(line, prefix string) (int64, error) {
		f := strings.Fields(strings.TrimPrefix(line, prefix))
		if col < 0 || len(f) <= col {
			return 0, fmt.Errorf("%w: line %d: bad %s %q", ErrCachegrind, n, prefix, line)
		}
		v, err := strconv.ParseInt(f[col], 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%w: line %d: bad %s %q", ErrCachegrind, n, prefix, line)
		}
		return v, nil
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case line == "" || line[0] == '#':
		case strings.HasPrefix(line, "events:"):
			for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				if e == "Ir" {
					col = i
				}
			}
			if col < 0 {
				return nil, fmt.Errorf("%w: line %d: no Ir event in %q", ErrCachegrind, n, line)
			}
		case strings.HasPrefix(line, "positions:"):
			npos = len(strings.Fields(strings.TrimPrefix(line, "positions:")))
		case strings.HasPrefix(line, "cmd:"):
			c.Cmd = strings.TrimSpace(strings.TrimPrefix(line, "cmd:"))
		case strings.HasPrefix(line, "fl="):
			cur = Func{File: compressed(files, line[3:])}
		case strings.HasPrefix(line, "fn="):
			cur.Name = compressed(fns, line[3:])
		case strings.HasPrefix(line, "fi="), strings.HasPrefix(line, "fe="),
			strings.HasPrefix(line, "cfi="), strings.HasPrefix(line, "cfl="):
			// Inlined code's or a callee's file: define its id, keep
			// counting for the function of fl=.
			_, name, _ := strings.Cut(line, "=")
			compressed(files, name)
		case strings.HasPrefix(line, "cfn="):
			compressed(fns, line[4:])
		case strings.HasPrefix(line, "calls="):
			// The next cost line is the call's inclusive cost, which
			// the callee's own lines count already.
			skipCall = true
		case strings.HasPrefix(line, "summary:"):
			v, err := total(line, "summary:")
			if err != nil {
				return nil, err
			}
			summary = v
		case strings.HasPrefix(line, "totals:"):
			v, err := total(line, "totals:")
			if err != nil {
				return nil, err
			}
			totals = v
		case strings.Contains(line, ":") && !strings.ContainsAny(line[:1], "0123456789+-*"):
			// Other header lines (version:, creator:, pid:, desc:, …).
		case strings.Contains(line, "="):
			// ob=, cob=, jump=, jcnd=: objects and jumps carry no
			// instruction counts of their own.
		default:
			// "POSITION… COUNT…": counts of one source line (or
			// instruction); trailing zero counts may be left out.
			if col < 0 || cur.Name == "" {
				return nil, fmt.Errorf("%w: line %d: counts before events:/fn=: %q", ErrCachegrind, n, line)
			}
			if skipCall {
				skipCall = false
				continue
			}
			f := strings.Fields(line)
			if len(f) <= col+npos {
				continue
			}
			v, err := strconv.ParseInt(f[col+npos], 10, 64)
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
	// Callgrind's summary: can be taken before the last counts; its
	// totals: is what the counts add up to.
	switch {
	case totals >= 0:
		c.Total = totals
	case summary >= 0:
		c.Total = summary
	default:
		return nil, fmt.Errorf("%w: no summary: line (file cut short?)", ErrCachegrind)
	}
	if sum != c.Total {
		return nil, fmt.Errorf("%w: functions add up to %d instructions, summary says %d", ErrCachegrind, sum, c.Total)
	}
	return c, nil
}

// compressed resolves callgrind's name compression: "(id) name" defines
// id, "(id)" refers to it; an uncompressed name is itself.
func compressed(ids map[string]string, s string) string {
	if !strings.HasPrefix(s, "(") {
		return s
	}
	id, name, ok := strings.Cut(s[1:], ")")
	if !ok {
		return s
	}
	if name = strings.TrimPrefix(name, " "); name != "" {
		ids[id] = name
		return name
	}
	if name, ok := ids[id]; ok {
		return name
	}
	return s
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
