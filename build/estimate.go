package build

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// Estimate is what a build is expected to take, and why.
type Estimate struct {
	// Kind is Cached (the fingerprint is installed: nothing to build),
	// InPlace (a configured build directory compiles what changed), Warm
	// (ccache has compiled this commit before) or Cold.
	Kind     string
	Duration time.Duration
	// From says where Duration comes from.
	From string
	// Reference is the build Duration comes from: another machine's when
	// this machine has no record of a build of the kind, else the record's
	// when it has the curve of its compile units; nil otherwise. A build
	// shown (BuildShown) measures its first compile units against it and
	// says again.
	Reference *Reference
}

// Kinds of Estimate.
const (
	Cached  = "cached"
	InPlace = "in place"
	Warm    = "warm"
	Cold    = "cold"
)

// Reference is a build an estimate comes from: of another machine
// before this machine has measured anything, else a record of this one.
type Reference struct {
	// Machine says where it was measured.
	Machine string
	Seconds Timings
	Load    Load
	// Units is the compilations of the whole build (ccache's hits and
	// misses): what its first compile units are a part of.
	Units int
	// Curve is the compile units done along its compile phase (Point);
	// without it the units are taken to cost alike.
	Curve []Point
	// Name says the build in a phrase ("the reference" when empty).
	Name string
}

func (r *Reference) name() string {
	if r.Name == "" {
		return "the reference"
	}
	return r.Name
}

// referenceOf is the reference a record gives, named name; nil when it
// has no curve to measure against.
func referenceOf(r *Info, name string) *Reference {
	if len(r.Curve) == 0 {
		return nil
	}
	ref := &Reference{Machine: "this machine", Seconds: r.Seconds, Units: r.Curve[len(r.Curve)-1].Units, Curve: r.Curve, Name: name}
	if r.Load != nil {
		ref.Load = *r.Load
	}
	return ref
}

// Reference builds for a machine with no record of a build of the kind:
// the make demo builds of Debian's PostgreSQL 15.18 (autotools) on this
// project's first 2-core VM, alone on it: cold 122.6 s (configure 12.6 s,
// compile 107.1 s, install 2.9 s; 1212 compilations, 0.1 % ccache hits),
// a second worktree of the same commit with a one-file patch 18.4 s
// (98.6 % hits). Other machines of the kind are slower: a cold build of
// the same tree took 4 m 52 s on one (issue 27), where this reference
// said 2 m 23 s. So an estimate from a reference is only the figure
// before anything is measured: it is scaled by the CPUs and the load of
// the machine now, and a build replaces it once its first compile units
// are timed (measure).
//
// The units do not cost alike: src/port's and src/common's come first
// and are small, the backend's are bigger. ReferenceCold's curve is the
// shape of a whole cold build of the same tree on issue 27's machine
// (the times of its 1211 object files: an eighth of them in 5 % of the
// time, a quarter in 14 %, half in 45 %), scaled to the reference's
// compile phase, so that a build's first eighth is compared with the
// reference's first eighth and not with an eighth of its time.
var (
	ReferenceCold = Reference{Machine: "a 2-CPU VM", Seconds: Timings{Configure: 12.6, Compile: 107.1, Install: 2.9, Total: 122.6}, Load: Load{CPUs: 2}, Units: 1212,
		Curve: []Point{{38, 1.8}, {76, 3.1}, {114, 4.4}, {151, 5.8}, {189, 6.9}, {227, 8.9}, {265, 11.2}, {303, 14.7}, {341, 19.0}, {378, 20.8},
			{416, 24.2}, {454, 32.5}, {492, 36.8}, {530, 42.2}, {568, 44.4}, {607, 48.2}, {644, 53.2}, {682, 57.4}, {720, 60.0}, {758, 61.7},
			{796, 65.1}, {834, 69.1}, {871, 72.7}, {909, 77.2}, {947, 81.8}, {985, 83.5}, {1023, 85.0}, {1061, 94.6}, {1098, 97.6}, {1136, 99.7},
			{1174, 102.0}, {1212, 107.1}}}
	ReferenceWarm = Reference{Machine: "a 2-CPU VM", Seconds: Timings{Total: 18.4, Install: 2.9}, Load: Load{CPUs: 2}, Units: 1212}
)

// String says the kind, the duration and where it comes from.
func (e Estimate) String() string {
	if e.Kind == Cached {
		return e.Kind + " (" + e.From + ")"
	}
	return fmt.Sprintf("%s, about %s (%s)", e.Kind, e.Duration.Round(time.Second), e.From)
}

// Records reads the build record of every install prefix under root,
// newest first.
func Records(root string) []*Info {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", InfoFile))
	var out []*Info
	for _, f := range dirs {
		if i, err := ReadInfo(filepath.Dir(f)); err == nil {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].BuiltAt.After(out[b].BuiltAt) })
	return out
}

// Fingerprint is the fingerprint Build would give the worktree prov
// with options o; it changes nothing.
func (b *Builder) Fingerprint(ctx context.Context, prov *worktree.Provenance, wtDir string, o Options) (string, error) {
	j, err := b.plan(ctx, prov, wtDir, o)
	if err != nil {
		return "", err
	}
	return j.info.Fingerprint, nil
}

// Reuses is the estimate of a build that Build would not make because
// an install of its source is there under another name (Options.ReuseFrom);
// ok is false when it would build or find its own install current. It
// changes nothing.
func (b *Builder) Reuses(ctx context.Context, prov *worktree.Provenance, wtDir string, o Options) (e Estimate, ok bool) {
	j, err := b.plan(ctx, prov, wtDir, o)
	if err != nil {
		return e, false
	}
	if _, own := installed(j); own {
		return e, false
	}
	if other := b.sameSource(j); other != nil {
		return Estimate{Kind: Cached, From: reusing(other)}, true
	}
	return e, false
}

// Estimate estimates the build name of commit sha. fingerprint, when
// known, is what the build's fingerprint will be: when it is installed
// there is nothing to build. Otherwise the build is warm when ccache is
// on and a build of this machine compiled sha before (or will have, by
// then: compiled, an earlier build of the same plan), else cold; its
// duration is that of the last whole-tree build of the kind of this tree
// (install name), else the median of those of this machine, else a
// stated default. inPlace says the tree's build directory is configured
// (the matrix resets a worktree in place, keeping it): such a build
// compiles what changed, and takes what the last rebuild in place of
// this tree took, else the median of this machine's; with none
// recorded, what a whole tree would, as it says (too much: a PostgreSQL
// 15 rebuild for a one-file patch took 37.7 s where a warm whole tree
// took 115.6).
func (b *Builder) Estimate(name, sha, fingerprint string, o Options, compiled, inPlace bool) Estimate {
	records := Records(b.InstallRoot)
	for _, r := range records {
		if r.Name == name && fingerprint != "" && r.Fingerprint == fingerprint && !o.Force && exists(filepath.Join(r.Install, "bin", "postgres")) {
			return Estimate{Kind: Cached, From: "fingerprint " + text.Short(fingerprint) + " installed"}
		}
	}
	if !inPlace || o.Force {
		return b.whole(name, sha, o, compiled, records)
	}
	if e, ok := b.inPlace(name, records); ok {
		return e
	}
	e := b.whole(name, sha, o, compiled, records)
	e.Kind, e.From, e.Reference = InPlace, "no rebuild in place recorded here; as a whole "+e.Kind+" tree, "+e.From, nil
	return e
}

// whole estimates a build of the whole tree (Estimate).
func (b *Builder) whole(name, sha string, o Options, compiled bool, records []*Info) Estimate {
	kind := Cold
	if !o.NoCCache && lookPath("ccache") {
		if compiled {
			kind = Warm
		}
		for _, r := range records {
			if r.Inputs.SHA == sha && r.CCache != nil {
				kind = Warm
				break
			}
		}
	}
	var same *Info
	var all []*Info
	for _, r := range full(records) {
		if recordKind(r) != kind || r.Seconds.Total <= 0 {
			continue
		}
		if r.Name == name && same == nil {
			same = r
		}
		all = append(all, r)
	}
	switch {
	case same != nil:
		e := b.scaled(Estimate{Kind: kind, From: "the last " + kind + " build of this tree, " + same.BuiltAt.Format(time.DateOnly)}, same)
		e.Reference = referenceOf(same, "the last "+kind+" build of this tree")
		return e
	case len(all) > 0:
		sort.Slice(all, func(a, b int) bool { return all[a].Seconds.Total < all[b].Seconds.Total })
		median := all[len(all)/2]
		e := b.scaled(Estimate{Kind: kind, From: fmt.Sprintf("the median of %d %s builds on this machine", len(all), kind)}, median)
		e.Reference = referenceOf(median, "the median "+kind+" build")
		return e
	}
	ref := &ReferenceCold
	if kind == Warm {
		ref = &ReferenceWarm
	}
	e := b.scaled(Estimate{Kind: kind, From: fmt.Sprintf("reference, not this machine: no %s build recorded here; a %s build of %s on %s",
		kind, kind, progress.Dur(seconds(ref.Seconds.Total)), ref.Machine)}, &Info{Seconds: ref.Seconds, Load: &ref.Load})
	e.Reference = ref
	return e
}

// inPlace estimates a rebuild in place of the tree name from the
// records of such rebuilds (those full leaves out): this tree's last,
// else the median of this machine's. It has no reference to learn the
// machine from as it runs: its compile units are the few that changed.
func (b *Builder) inPlace(name string, records []*Info) (Estimate, bool) {
	whole := map[*Info]bool{}
	for _, r := range full(records) {
		whole[r] = true
	}
	var all []*Info
	for _, r := range records {
		if !whole[r] && r.Seconds.Total > 0 {
			if r.Name == name {
				return b.scaled(Estimate{Kind: InPlace, From: "the last rebuild in place of this tree, " + r.BuiltAt.Format(time.DateOnly)}, r), true
			}
			all = append(all, r)
		}
	}
	if len(all) == 0 {
		return Estimate{}, false
	}
	sort.Slice(all, func(a, b int) bool { return all[a].Seconds.Total < all[b].Seconds.Total })
	return b.scaled(Estimate{Kind: InPlace, From: fmt.Sprintf("the median of %d rebuilds in place on this machine", len(all))}, all[len(all)/2]), true
}

// Configured says whether the worktree wt's build directory is
// configured, so that a build there compiles only what changed.
func Configured(wt string) bool {
	bd := filepath.Join(wt, worktree.BuildDir)
	return exists(filepath.Join(bd, "config.status")) || exists(filepath.Join(bd, "build.ninja"))
}

// scaled is e with the duration of record r, scaled by the load now
// against the load r was built under, when r has it. A build runs as
// many jobs as CPUs; with L other runnable tasks on C CPUs it gets
// C/(L+C) of them, so its time goes as (L+C)/C: a PostgreSQL 15 tree
// from ccache took 14 s on 2 CPUs at a low load and 127 s at load 14
// (model: 8×). A record of another number of CPUs (a reference) is
// scaled by the ratio of CPUs too, as if the whole build were parallel.
func (b *Builder) scaled(e Estimate, r *Info) Estimate {
	e.Duration = seconds(r.Seconds.Total)
	now := b.load()
	if r.Load == nil || now == nil || r.Load.CPUs < 1 || now.CPUs < 1 {
		return e
	}
	slow := func(l *Load) float64 { return (l.Avg1 + float64(l.CPUs)) / float64(l.CPUs) }
	f := slow(now) / slow(r.Load)
	var cpus string
	if now.CPUs != r.Load.CPUs {
		f *= float64(r.Load.CPUs) / float64(now.CPUs)
		cpus = fmt.Sprintf(" and %d CPUs against %d", now.CPUs, r.Load.CPUs)
	}
	e.Duration = time.Duration(float64(e.Duration) * f)
	e.From += fmt.Sprintf(", ×%.1f for load %.1f now against %.1f then%s", f, now.Avg1, r.Load.Avg1, cpus)
	return e
}

func (b *Builder) load() *Load {
	if b.Load != nil {
		return b.Load()
	}
	h := host.Read("/")
	if h.OnlineCPUs < 1 {
		return nil
	}
	// The load average lags: right after a build it says the machine is
	// busy while it is idle. The smaller of it and the tasks running
	// now (over 100 ms) is the competition a build starting now meets.
	return &Load{Avg1: min(h.Load1, host.Runnable("/", 6, 20*time.Millisecond)), CPUs: h.OnlineCPUs}
}

// full keeps the records of whole-tree builds: those that compiled at
// least 80 % of the most a record of the same build system compiled,
// counted the same way. A rebuild in place compiles what changed only
// (14 s against 135 s for a whole PostgreSQL 15 tree from ccache, both
// warm), which says nothing of a build in a fresh worktree. What a
// record compiled is its ccache counts, else the units of its curve
// (ninja's steps for meson, object files for autotools: a meson tree
// has more steps than an autotools tree has object files); records
// with neither are kept.
func full(records []*Info) []*Info {
	type counted struct{ system, by string }
	most := map[counted]int{}
	for _, r := range records {
		n, by := compiled(r)
		k := counted{r.System, by}
		most[k] = max(most[k], n)
	}
	var out []*Info
	for _, r := range records {
		if n, by := compiled(r); n < 0 || 10*n >= 8*most[counted{r.System, by}] {
			out = append(out, r)
		}
	}
	return out
}

// compiled is the compilations of a record and what counted them
// ("ccache" or "curve"); -1 when it does not say.
func compiled(r *Info) (int, string) {
	switch {
	case r.CCache != nil:
		return r.CCache.Hits + r.CCache.Misses, "ccache"
	case len(r.Curve) > 0:
		return r.Curve[len(r.Curve)-1].Units, "curve"
	}
	return -1, ""
}

// recordKind is whether a recorded build was warm (most compilations
// ccache hits) or cold; "" for a build that compiled nothing (a rebuild
// of an unchanged tree says nothing about either).
func recordKind(r *Info) string {
	switch {
	case r.CCache == nil:
		return Cold
	case r.CCache.Hits+r.CCache.Misses == 0:
		return ""
	case r.CCache.HitRate >= 0.5:
		return Warm
	}
	return Cold
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
