package build

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/worktree"
)

// record writes a build record (and a postgres binary) for install name.
func record(t *testing.T, root string, i Info) {
	t.Helper()
	i.Install = filepath.Join(root, i.Name)
	if err := os.MkdirAll(filepath.Join(i.Install, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(i.Install, "bin", "postgres"), nil, 0o755)
	data, _ := json.Marshal(i)
	if err := os.WriteFile(filepath.Join(i.Install, InfoFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEstimate: an installed fingerprint is cached (0 s, unless
// --force); a commit ccache compiled before is warm, by the last warm
// build of this tree, else of this machine; another is cold; without
// records, the stated defaults; a build that compiled nothing is no
// sample.
func TestEstimate(t *testing.T) {
	testenv.RequireTools(t, "ccache")
	root := t.TempDir()
	b := &Builder{InstallRoot: root, Load: func() *Load { return &Load{Avg1: 2, CPUs: 2} }}
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	// No records: the references (quiet, 2 CPUs) scaled by load 2 on 2
	// CPUs: ×2.
	if e := b.Estimate("x", "sha1", "", Options{}, true, false); e.Kind != Warm || e.Duration != 36800*time.Millisecond || e.Reference != &ReferenceWarm ||
		e.From != "reference, not this machine: no warm build recorded here; a warm build of 18s on a 2-CPU VM, ×2.0 for load 2.0 now against 0.0 then" {
		t.Errorf("no records, the commit compiled earlier in the plan: %+v", e)
	}
	if e := b.Estimate("x", "sha1", "", Options{}, false, false); e.Kind != Cold || e.Duration != 245200*time.Millisecond || e.Reference != &ReferenceCold || !strings.HasPrefix(e.From, "reference, not this machine: no cold build recorded here; a cold build of 2m03s") {
		t.Errorf("no records: %+v", e)
	}
	// On 8 idle CPUs the reference is 4 times faster.
	eight := &Builder{InstallRoot: root, Load: func() *Load { return &Load{Avg1: 0, CPUs: 8} }}
	if e := eight.Estimate("x", "sha1", "", Options{}, false, false); e.Duration != 30650*time.Millisecond || !strings.HasSuffix(e.From, "and 8 CPUs against 2") {
		t.Errorf("no records, 8 CPUs: %+v", e)
	}
	record(t, root, Info{Name: "a", Fingerprint: strings.Repeat("f", 64), Inputs: Inputs{SHA: "sha1"}, BuiltAt: day,
		Seconds: Timings{Total: 250}, CCache: &CCache{Misses: 100}})
	record(t, root, Info{Name: "b", Fingerprint: strings.Repeat("e", 64), Inputs: Inputs{SHA: "sha1"}, BuiltAt: day.Add(time.Hour),
		Seconds: Timings{Total: 40}, CCache: &CCache{Hits: 99, Misses: 1, HitRate: 0.99}})
	record(t, root, Info{Name: "d", Inputs: Inputs{SHA: "sha3"}, BuiltAt: day.Add(3 * time.Hour),
		Seconds: Timings{Total: 14}, CCache: &CCache{Hits: 10, HitRate: 1}}) // a rebuild in place: no sample
	record(t, root, Info{Name: "c", Inputs: Inputs{SHA: "sha1"}, BuiltAt: day.Add(2 * time.Hour),
		Seconds: Timings{Total: 9}, CCache: &CCache{}})
	for _, tc := range []struct {
		name, sha, fp string
		o             Options
		kind          string
		d             time.Duration
		from          string
	}{
		{"a", "sha1", strings.Repeat("f", 64), Options{}, Cached, 0, "fingerprint ffffffff installed"},
		{"a", "sha1", strings.Repeat("f", 64), Options{Force: true}, Warm, 40 * time.Second, "the median of 1 warm builds on this machine"},
		{"b", "sha1", "", Options{}, Warm, 40 * time.Second, "the last warm build of this tree, 2026-11-30"},
		{"a", "sha2", "", Options{}, Cold, 250 * time.Second, "the last cold build of this tree, 2026-11-30"},
		{"z", "sha2", "", Options{}, Cold, 250 * time.Second, "the median of 1 cold builds on this machine"},
		{"z", "sha1", "", Options{NoCCache: true}, Cold, 250 * time.Second, "the median of 1 cold builds on this machine"},
	} {
		e := b.Estimate(tc.name, tc.sha, tc.fp, tc.o, false, false)
		if e.Kind != tc.kind || e.Duration != tc.d || e.From != tc.from || e.Reference != nil {
			t.Errorf("%s at %s %+v: %+v, want %s %s %q", tc.name, tc.sha, tc.o, e, tc.kind, tc.d, tc.from)
		}
	}
	// A record with its load is scaled by the load now: (2+2)/2 against
	// (0+2)/2.
	record(t, root, Info{Name: "e", Inputs: Inputs{SHA: "sha4"}, BuiltAt: day, Seconds: Timings{Total: 100}, Load: &Load{Avg1: 0, CPUs: 2}})
	if e := b.Estimate("e", "sha4", "", Options{}, false, false); e.Kind != Cold || e.Duration != 200*time.Second || !strings.HasSuffix(e.From, ", ×2.0 for load 2.0 now against 0.0 then") {
		t.Errorf("scaled by load: %+v", e)
	}
	// A record with the curve of its units is the reference the build
	// measures against.
	curve := []Point{{Units: 600, Seconds: 30}, {Units: 1200, Seconds: 90}}
	record(t, root, Info{Name: "f", Inputs: Inputs{SHA: "sha5"}, BuiltAt: day, Seconds: Timings{Compile: 95, Install: 5, Total: 110}, Curve: curve})
	if e := b.Estimate("f", "sha5", "", Options{}, false, false); e.Reference == nil || e.Reference.Units != 1200 || len(e.Reference.Curve) != 2 ||
		e.Reference.Seconds.Compile != 95 || e.Reference.name() != "the last cold build of this tree" {
		t.Errorf("a record with a curve: %+v, reference %+v", e, e.Reference)
	}
	// A rebuild in place without ccache (10 units, where a whole tree
	// had 1200) says nothing of a build of its tree.
	record(t, root, Info{Name: "g", Inputs: Inputs{SHA: "sha6"}, BuiltAt: day.Add(time.Hour), Seconds: Timings{Compile: 2, Total: 5}, Curve: []Point{{Units: 10, Seconds: 2}}})
	if e := b.Estimate("g", "sha6", "", Options{}, false, false); !strings.HasPrefix(e.From, "the median of ") || e.Duration == 10*time.Second {
		t.Errorf("a rebuild in place: %+v", e)
	}
	// Unless the build is one in place too: then it goes by such
	// rebuilds, of this tree (g's 5 s), else of this machine (the median
	// of d's 14 s, c's 9 s, which compiled nothing, and g's 5 s); none
	// recorded its load. Forced, it is a whole tree.
	for _, tc := range []struct {
		name string
		o    Options
		kind string
		d    time.Duration
		from string
	}{
		{"g", Options{}, InPlace, 5 * time.Second, "the last rebuild in place of this tree, 2026-11-30"},
		{"z", Options{}, InPlace, 9 * time.Second, "the median of 3 rebuilds in place on this machine"},
		{"g", Options{Force: true}, Cold, 0, ""},
	} {
		e := b.Estimate(tc.name, "sha6", "", tc.o, false, true)
		if e.Kind != tc.kind || tc.d > 0 && (e.Duration != tc.d || !strings.HasPrefix(e.From, tc.from) || e.Reference != nil) {
			t.Errorf("%s in place %+v: %+v, want %s %s %q", tc.name, tc.o, e, tc.kind, tc.d, tc.from)
		}
	}
	os.RemoveAll(filepath.Join(root, "g"))
	os.RemoveAll(filepath.Join(root, "f"))
	os.RemoveAll(filepath.Join(root, "e"))
	os.RemoveAll(filepath.Join(root, "b"))
	if e := b.Estimate("z", "sha1", "", Options{}, false, false); e.Kind != Warm || e.Duration != 36800*time.Millisecond {
		t.Errorf("no warm record: %+v", e)
	}
	// In place with no such rebuild recorded (c and d compiled nothing
	// or little, and go): what a whole tree would take, said so.
	os.RemoveAll(filepath.Join(root, "c"))
	os.RemoveAll(filepath.Join(root, "d"))
	if e := b.Estimate("z", "sha1", "", Options{}, false, true); e.Kind != InPlace || e.Duration != 36800*time.Millisecond || e.Reference != nil ||
		!strings.HasPrefix(e.From, "no rebuild in place recorded here; as a whole warm tree, reference, not this machine") {
		t.Errorf("in place, no record of one: %+v", e)
	}
}

// TestFullBySystem: a record is a whole-tree build against the records
// of its build system counted the same way. A machine without ccache
// that builds PostgreSQL 15 (autotools, 1211 object files) and 16
// (meson, 2400 ninja steps) keeps its PostgreSQL 15 builds; a rebuild
// in place is dropped whatever its system; ccache's counts of one
// system are not compared with the curves of the other.
func TestFullBySystem(t *testing.T) {
	curve := func(system string, units int) *Info {
		return &Info{Name: fmt.Sprintf("%s-%d", system, units), System: system, Curve: []Point{{Units: units, Seconds: 1}}}
	}
	cached := func(system string, n int) *Info {
		return &Info{Name: fmt.Sprintf("%s-ccache-%d", system, n), System: system, CCache: &CCache{Hits: n}}
	}
	records := []*Info{
		curve("autotools", 1211), curve("meson", 2400), curve("meson", 10), curve("autotools", 30),
		curve("meson", 2390), curve("autotools", 1100), cached("autotools", 1212), cached("meson", 700),
		cached("meson", 60), {Name: "silent", System: "meson"},
	}
	var got []string
	for _, r := range full(records) {
		got = append(got, r.Name)
	}
	want := "autotools-1211 meson-2400 meson-2390 autotools-1100 autotools-ccache-1212 meson-ccache-700 silent"
	if strings.Join(got, " ") != want {
		t.Errorf("full = %s\nwant   %s", strings.Join(got, " "), want)
	}
}

func TestDescribe(t *testing.T) {
	sha := "116bfafc77538a002ba31b4bc33d728e6b65e0f9"
	for _, tc := range []struct {
		prov worktree.Provenance
		want string
	}{
		{worktree.Provenance{Ref: "base", SHA: sha}, "base 116bfafc"},
		{worktree.Provenance{Ref: sha, SHA: sha, Patches: []worktree.Patch{{File: "/x/a.patch"}, {File: "b.diff"}}}, "116bfafc + a.patch + b.diff"},
	} {
		if got := Describe(&tc.prov); got != tc.want {
			t.Errorf("Describe(%+v) = %q, want %q", tc.prov, got, tc.want)
		}
	}
}
