package perf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/google/pprof/profile"
)

// testdata/cachegrind.true.out is real output of valgrind 3.19:
// valgrind --tool=cachegrind --cache-sim=no /bin/true.
func TestParseCachegrindReal(t *testing.T) {
	f, err := os.Open("testdata/cachegrind.true.out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ParseCachegrind(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 130003 || c.Cmd != "/bin/true" {
		t.Errorf("total %d cmd %q, want 130003 /bin/true", c.Total, c.Cmd)
	}
	// 128 2, 134 3, … under __libc_start_main in csu/libc-start.c.
	if v := c.Funcs[Func{File: "./csu/../csu/libc-start.c", Name: "__libc_start_main@@GLIBC_2.34"}]; v <= 0 {
		t.Errorf("__libc_start_main: %d instructions", v)
	}
	var sum int64
	for _, v := range c.Funcs {
		sum += v
	}
	if sum != c.Total {
		t.Errorf("functions sum to %d, total %d", sum, c.Total)
	}
}

// testdata/callgrind.true.out is real output of valgrind 3.19:
// valgrind --tool=callgrind /bin/true (names compressed, calls= records
// with inclusive costs that must not be counted twice).
func TestParseCallgrindReal(t *testing.T) {
	f, err := os.Open("testdata/callgrind.true.out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ParseCachegrind(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 128811 || c.Cmd != "/bin/true" {
		t.Errorf("total %d cmd %q, want 128811 /bin/true", c.Total, c.Cmd)
	}
	// Defined compressed as a callee (cfn=(504) …), then referred to as
	// fn=(504).
	if v := c.Funcs[Func{File: "./csu/../csu/libc-start.c", Name: "__libc_start_main@@GLIBC_2.34"}]; v <= 0 {
		t.Errorf("__libc_start_main: %d instructions; functions: %d", v, len(c.Funcs))
	}
	for f := range c.Funcs {
		// Valgrind's own "(below main)" is a name, "(12)" an id.
		if compressedID.MatchString(f.Name) || compressedID.MatchString(f.File) {
			t.Errorf("unresolved compressed name %+v", f)
		}
	}
}

var compressedID = regexp.MustCompile(`^\([0-9]+\)`)

// Callgrind's summary: may be taken before the last counts; totals: is
// what they add up to, and a call's inclusive cost is not self cost.
func TestParseCallgrindTotals(t *testing.T) {
	in := "positions: instr line\nevents: Ir\nsummary: 10\nfl=(1) a.c\nfn=(1) f\n0x10 1 3\ncfl=(1)\ncfn=(2) g\ncalls=1 0x20 5\n0x11 1 100\nfn=(2)\n0x20 5 8\ntotals: 11\n"
	c, err := ParseCachegrind(strings.NewReader(in))
	if err != nil || c.Total != 11 || c.Funcs[Func{"a.c", "f"}] != 3 || c.Funcs[Func{"a.c", "g"}] != 8 {
		t.Errorf("callgrind file: %+v, %v", c, err)
	}
}

func TestParseCachegrindErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no events":  "fl=a.c\nfn=f\n1 2\nsummary: 2\n",
		"no summary": "events: Ir\nfl=a.c\nfn=f\n1 2\n",
		"cut short":  "events: Ir\nfl=a.c\nfn=f\n1 2\nsummary: 5\n",
		"no Ir":      "events: Dr Dw\n",
		"bad count":  "events: Ir\nfl=a.c\nfn=f\n1 x\nsummary: 0\n",
	} {
		if _, err := ParseCachegrind(strings.NewReader(in)); !errors.Is(err, ErrCachegrind) {
			t.Errorf("%s: err = %v, want ErrCachegrind", name, err)
		}
	}
	// Cache simulation on: Ir is one column of several; missing trailing
	// columns are zeros.
	c, err := ParseCachegrind(strings.NewReader("events: Dr Ir Dw\nfl=a.c\nfn=f\n1 5 7 1\n2 5\n3 0 2\nsummary: 5 9 1\n"))
	if err != nil || c.Total != 9 || c.Funcs[Func{"a.c", "f"}] != 9 {
		t.Errorf("multi-event file: %+v, %v", c, err)
	}
}

func cg(total int64, funcs map[string]int64) *Cachegrind {
	c := &Cachegrind{Total: total, Funcs: map[Func]int64{}}
	for n, v := range funcs {
		c.Funcs[Func{"postgres.c", n}] = v
	}
	return c
}

// TestInstructionProfileCompare: the difference of a long and a short run
// becomes a profile, and Compare of a base and a slowed commit ranks the
// slowed function first.
func TestInstructionProfileCompare(t *testing.T) {
	const n = 1000
	short := cg(0, map[string]int64{"main": 50, "exec_simple_query": 2000 * n / 1000, "palloc": 300 * n / 1000, "startup": 9000})
	long := cg(0, map[string]int64{"main": 50, "exec_simple_query": 2 * 2000 * n / 1000, "palloc": 2 * 300 * n / 1000, "startup": 9000})
	base := long.Sub(short)
	if _, ok := base.Funcs[Func{"postgres.c", "startup"}]; ok || base.Funcs[Func{"postgres.c", "exec_simple_query"}] != 2000 {
		t.Fatalf("difference: %+v", base.Funcs)
	}
	slowShort := cg(0, map[string]int64{"main": 50, "exec_simple_query": 2500, "palloc": 300, "startup": 9000})
	slowLong := cg(0, map[string]int64{"main": 50, "exec_simple_query": 5000, "palloc": 500, "startup": 9000})
	slow := slowLong.Sub(slowShort)

	pb, ps := InstructionProfile(base, n), InstructionProfile(slow, n)
	for _, p := range []*profile.Profile{pb, ps} {
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := profile.Parse(&buf)
		if err != nil || back.SampleType[0].Type != "instructions" || back.Comments[0] != "transactions=1000" {
			t.Fatalf("round trip: %v %v", back, err)
		}
	}
	d := profiles.Compare(pb, ps, n, n)
	if d[0].Name != "exec_simple_query" || d[0].Diff != 0.5 || d[0].Z != 0 {
		t.Errorf("first delta %+v, want exec_simple_query +0.5/tx with Z 0", d[0])
	}
	if last := d[len(d)-1]; last.Name != "palloc" || math.Abs(last.Diff+0.1) > 1e-12 {
		t.Errorf("last delta %+v, want palloc -0.1/tx", last)
	}
	if _, err := profiles.Diff(pb, ps, n, n); err != nil {
		t.Fatal(err)
	}
	// A function only the base has still shows, negated.
	neg := cg(0, map[string]int64{"a": 5}).Sub(cg(0, map[string]int64{"a": 5, "b": 3}))
	if len(neg.Funcs) != 1 || neg.Funcs[Func{"postgres.c", "b"}] != -3 {
		t.Errorf("sub with a missing function: %+v", neg.Funcs)
	}
}
