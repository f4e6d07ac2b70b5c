// Package perf records CPU profiles of a cluster with Linux perf and turns
// them into pprof profiles (profile.proto), so that `go tool pprof`, every
// pprof viewer and abtest's own report read them: `perf record -g` on the
// postmaster and its children (backends started during the window inherit
// the counters), then `perf script` parsed into samples, locations,
// functions and mappings.
//
// Where the hardware cycles event is missing (common in VMs) perf falls
// back to the cpu-clock software event; where perf is missing or the
// kernel forbids it, Check says why, once, and callers go on without
// profiles.
package perf

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Frame is one entry of a call chain, innermost first.
type Frame struct {
	Addr uint64
	// Func is the symbol without its +0x offset; "[unknown]" when perf
	// could not resolve it.
	Func string
	// DSO is the binary or library ("[kernel.kallsyms]" for the kernel).
	DSO string
	// Inlined marks a frame perf reports as inlined into the next one.
	Inlined bool
}

// Event is one sample of perf script.
type Event struct {
	Comm   string
	PID    int
	TID    int
	Time   float64
	Period int64
	Name   string
	Stack  []Frame
}

// ParseScript reads `perf script` output (perf 5.x/6.x default fields,
// with or without [cpu], pid/tid): a header line per sample, its call
// chain indented below it, a blank line between samples. Lines it cannot
// read are counted in bad and skipped.
func ParseScript(r io.Reader) (events []Event, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var cur *Event
	flush := func() {
		if cur != nil {
			events = append(events, *cur)
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur == nil {
				bad++
				continue
			}
			f, ok := parseFrame(line)
			if !ok {
				bad++
				continue
			}
			cur.Stack = append(cur.Stack, f)
			continue
		}
		flush()
		e, ok := parseHeader(line)
		if !ok {
			bad++
			continue
		}
		cur = &e
	}
	flush()
	return events, bad, sc.Err()
}

// parseHeader reads "comm pid[/tid] [cpu] time: period event:".
func parseHeader(line string) (Event, bool) {
	f := strings.Fields(line)
	// Find the time field: the first token ending with ':' that parses
	// as a float; everything after is period and event.
	ti := -1
	for i, t := range f {
		if strings.HasSuffix(t, ":") {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(t, ":"), 64); err == nil && i >= 1 {
				ti = i
				break
			}
		}
	}
	if ti < 1 || ti+1 >= len(f) {
		return Event{}, false
	}
	e := Event{}
	e.Time, _ = strconv.ParseFloat(strings.TrimSuffix(f[ti], ":"), 64)
	rest := f[ti+1:]
	if p, err := strconv.ParseInt(rest[0], 10, 64); err == nil && p > 0 {
		e.Period = p
		rest = rest[1:]
	} else {
		e.Period = 1
	}
	if len(rest) > 0 {
		e.Name = strings.TrimSuffix(rest[0], ":")
	}
	before := f[:ti]
	if n := len(before); n > 1 && strings.HasPrefix(before[n-1], "[") && strings.HasSuffix(before[n-1], "]") {
		before = before[:n-1] // [cpu]
	}
	if len(before) < 2 {
		return Event{}, false
	}
	pidTid := before[len(before)-1]
	pidS, tidS, hasTid := strings.Cut(pidTid, "/")
	pid, err := strconv.Atoi(pidS)
	if err != nil || pid < 0 {
		return Event{}, false
	}
	e.PID, e.TID = pid, pid
	if hasTid {
		if e.TID, err = strconv.Atoi(tidS); err != nil {
			return Event{}, false
		}
	}
	e.Comm = strings.Join(before[:len(before)-1], " ")
	return e, true
}

// parseFrame reads "\taddr sym+0xoff (dso)".
func parseFrame(line string) (Frame, bool) {
	s := strings.TrimSpace(line)
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 {
		return Frame{}, false
	}
	addr, err := strconv.ParseUint(s[:sp], 16, 64)
	if err != nil {
		return Frame{}, false
	}
	rest := strings.TrimSpace(s[sp+1:])
	f := Frame{Addr: addr}
	if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
		f.DSO = rest[i+2 : len(rest)-1]
		rest = rest[:i]
	}
	if f.DSO == "inlined" {
		f.Inlined, f.DSO = true, ""
	}
	sym := strings.TrimSpace(rest)
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		sym = sym[:i]
	}
	if sym == "" {
		sym = "[unknown]"
	}
	f.Func = sym
	return f, true
}

// Profile converts events into a pprof profile with one sample type,
// cpu nanoseconds (each sample's period), and periodNS, the nominal
// sampling period, as its period. Unresolved
// frames are named after their binary, so that a flat profile still says
// where the time went.
func Profile(events []Event, periodNS int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     periodNS,
	}
	mappings := map[string]*profile.Mapping{}
	functions := map[string]*profile.Function{}
	type locKey struct {
		addr uint64
		dso  string
		fn   string
	}
	locations := map[locKey]*profile.Location{}
	mapping := func(dso string) *profile.Mapping {
		if m, ok := mappings[dso]; ok {
			return m
		}
		m := &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: dso, HasFunctions: true}
		if strings.HasPrefix(dso, "[kernel") {
			m.Start, m.Limit = 0, ^uint64(0)
		}
		p.Mapping = append(p.Mapping, m)
		mappings[dso] = m
		return m
	}
	function := func(name, dso string) *profile.Function {
		key := name + "\x00" + dso
		if f, ok := functions[key]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: dso}
		p.Function = append(p.Function, f)
		functions[key] = f
		return f
	}
	var minT, maxT float64
	for i, e := range events {
		if i == 0 || e.Time < minT {
			minT = e.Time
		}
		if e.Time > maxT {
			maxT = e.Time
		}
		var locs []*profile.Location
		var pendingInline []profile.Line
		for _, fr := range e.Stack {
			name := fr.Func
			if name == "[unknown]" && fr.DSO != "" {
				name = "[unknown] " + shortDSO(fr.DSO)
			}
			if fr.Inlined {
				pendingInline = append(pendingInline, profile.Line{Function: function(name, fr.DSO)})
				continue
			}
			key := locKey{fr.Addr, fr.DSO, name}
			loc, ok := locations[key]
			if !ok {
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Address: fr.Addr}
				if fr.DSO != "" {
					loc.Mapping = mapping(fr.DSO)
				}
				// pprof lists a location's lines innermost first: the
				// inlined callees, then the function they sit in.
				loc.Line = append(append([]profile.Line(nil), pendingInline...), profile.Line{Function: function(name, fr.DSO)})
				p.Location = append(p.Location, loc)
				locations[key] = loc
			}
			pendingInline = nil
			locs = append(locs, loc)
		}
		if len(locs) == 0 {
			locs = []*profile.Location{{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: function("[no stack] "+e.Comm, "")}}}}
			p.Location = append(p.Location, locs[0])
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: locs,
			Value:    []int64{e.Period},
			Label:    map[string][]string{"comm": {e.Comm}},
			NumLabel: map[string][]int64{"pid": {int64(e.PID)}},
		})
	}
	if maxT > minT {
		p.DurationNanos = int64((maxT - minT) * 1e9)
	}
	return p
}

func shortDSO(dso string) string {
	if i := strings.LastIndexByte(dso, '/'); i >= 0 {
		return dso[i+1:]
	}
	return dso
}
