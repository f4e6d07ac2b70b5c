// Package build turns a worktree into an installed PostgreSQL under
// $PG_INSTALL_DIR/NAME: meson/ninja for trees with meson.build
// (PostgreSQL ≥ 16), configure/make for older ones.
//
// The build directory is WORKTREE/build and ccache's base_dir is the
// worktrees root, with hash_dir off: then every worktree compiles the same
// relative paths and a second worktree of a nearby commit is mostly cache
// hits. (Measured with PostgreSQL 18.3 on 2 cores: 211 s cold, 29.5 s for
// a one-line change in a second worktree; a build directory outside the
// worktree gave 0 cross-worktree hits.) Each build's hit rate comes from a
// per-build ccache stats log, so concurrent builds do not mix.
//
// A build is skipped when its fingerprint is unchanged: the resolved sha,
// the patches' sha256, any uncommitted change in the worktree, the build
// type and options, and the compiler's version. The fingerprint and the
// timings are stored in INSTALL/.abtest-build.json, written only after a
// successful install, so a failed build never passes for a good one.
package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// Type is a build type.
type Type string

// The build types.
const (
	Release       Type = "release"
	Debug         Type = "debug"
	DebugNoAssert Type = "debug_noassert"
)

// Types lists the valid build types.
var Types = []Type{Release, Debug, DebugNoAssert}

// ParseType parses a -b value.
func ParseType(s string) (Type, error) {
	for _, t := range Types {
		if string(t) == s {
			return t, nil
		}
	}
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return "", exitcode.BadInputf("unknown build type %q: use one of %s", s, strings.Join(names, ", "))
}

// ErrMissingTool: a program the build needs is not installed.
var ErrMissingTool = errors.New("build: missing tool")

// ErrFailed: the build failed.
var ErrFailed = errors.New("build: failed")

// Options say how to build.
type Options struct {
	Type Type
	// MesonOpts are extra meson options (-Dfoo=bar), for meson trees.
	MesonOpts []string
	// ConfigureOpts are extra configure options, for autotools trees.
	ConfigureOpts []string
	// Profiling keeps frame pointers and symbols so perf call graphs work.
	Profiling bool
	// NoCCache builds without ccache even when it is installed.
	NoCCache bool
	// Contrib lists contrib modules to install besides pg_stat_statements
	// (autotools; meson installs all of contrib).
	Contrib []string
	// Force rebuilds even when the fingerprint is unchanged.
	Force bool
	// ReuseFrom are name prefixes (bisect's "b-", nightly's "n-", and
	// those a user names with bisect --reuse or nightly's reuse_from): a
	// build of a name with no install of its fingerprint uses an install
	// of the same Source whose name has one of them instead of building.
	// By default only names abtest makes up and nobody switches to: an
	// install a user can rebuild (a worktree's) is held by the servers
	// run from it (a nightly's server on a test's wire-x made the test's
	// rebuild of wire-x fail, "install in use"), so a user opts in by
	// name. Nothing is written to the other install.
	ReuseFrom []string
}

// Builder builds worktrees into install prefixes.
type Builder struct {
	// WorktreesRoot is ccache's base_dir.
	WorktreesRoot string
	// InstallRoot holds one prefix per name.
	InstallRoot string
	Run         *proc.Runner
	// Progress receives phases and steps; nil discards them.
	Progress Progress
	// learn, when set (BuildShown, from an Estimate of a reference),
	// makes the build time its first compile units and tell Progress
	// the estimate they give.
	learn *Reference
	// Servers stops the servers that run the prefix's binaries before
	// anything is installed over them (a *cluster.Manager). Whether or
	// not it is set, Build refuses to install over binaries a running
	// process executes (ErrInUse).
	Servers Servers
	// Jobs is make's -j; zero means the number of CPUs (ninja picks its
	// own).
	Jobs int
	// Load reads the host's load; nil means /proc/loadavg and the online
	// CPUs (internal/host).
	Load func() *Load
	// User, when set, runs configure, meson, make and ninja (and so
	// whatever a patch's build scripts do) and the built binaries: set
	// it to the server's account when abtest runs as root. The build
	// directory and the install prefix are then made that account's
	// (chown -R, never through a symbolic link); ccache uses that
	// account's cache directory.
	User *proc.User
}

// Progress is told what the build is doing.
type Progress interface {
	Phase(name string)
	Step(done, total int)
	// Estimate tells what the whole build is now expected to take, and
	// why: measured on this machine.
	Estimate(d time.Duration, from string)
}

// Result is what Build did.
type Result struct {
	Info    *Info
	Skipped bool
	// Reused: Info is another name's install of the same Source
	// (Options.ReuseFrom).
	Reused bool
	// Stopped names the servers (clusters) Servers stopped before the
	// install; the next cluster Start brings each back on the new build.
	Stopped []string
}

// InstallDir returns the prefix of name.
func (b *Builder) InstallDir(name string) (string, error) {
	return safepath.Under(b.InstallRoot, name)
}

// LogPath returns the build log of name: beside the prefix, so that an
// install over the prefix never removes it.
func (b *Builder) LogPath(name string) string {
	return filepath.Join(b.InstallRoot, name+".build.log")
}

func (b *Builder) phase(name string) {
	if b.Progress != nil && !b.Run.DryRun {
		b.Progress.Phase(name)
	}
}

// Build builds the worktree prov (as returned by worktree.Manager.Info)
// into $PG_INSTALL_DIR/NAME, or skips it when the fingerprint is
// unchanged.
func (b *Builder) Build(ctx context.Context, prov *worktree.Provenance, wtDir string, o Options) (*Result, error) {
	j, err := b.plan(ctx, prov, wtDir, o)
	if err != nil {
		return nil, err
	}
	// Before anything runs as the build account or from the install:
	// what another account put there is refused, not adopted (handOver
	// refuses the same in the build and ccache directories).
	if err := b.checkOwners(j.install); err != nil {
		return nil, err
	}
	unlock, err := b.lock(ctx, j.name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if prev, ok := installed(j); ok {
		b.Run.Note("build %s: fingerprint %s unchanged, skipping", j.name, text.Short(j.info.Fingerprint))
		// An install an older abtest left the build account's is
		// sealed where it is found.
		if err := b.seal(j.install); err != nil {
			return nil, err
		}
		return &Result{Info: prev, Skipped: true}, nil
	}
	// Then the source's lock: a build that may reuse another name's
	// install of this source waits for one under way.
	unlockSource, err := b.lock(ctx, "source-"+j.info.Source[:16])
	if err != nil {
		return nil, err
	}
	defer unlockSource()
	if other := b.sameSource(j); other != nil {
		b.Run.Note("build %s: %s, using it", j.name, reusing(other))
		return &Result{Info: other, Skipped: true, Reused: true}, nil
	}
	if err := b.reachable(ctx, j.wt, b.InstallRoot); err != nil {
		return nil, err
	}
	if err := b.prepare(j); err != nil {
		return nil, err
	}
	start := time.Now()
	j.info.Load = b.load()
	if !b.Run.DryRun {
		j.measure = &measure{start: start}
		if b.learn != nil && b.Progress != nil {
			j.measure.ref, j.measure.p = b.learn, b.Progress
		}
	}
	stopped, err := b.install(ctx, j, start)
	if j.unsealed {
		// On every way out, a failed install step's included: no
		// server may start from an install the build account can write.
		if serr := b.seal(j.install); err == nil {
			err = serr
		}
	}
	if err != nil {
		return nil, err
	}
	if b.Run.DryRun {
		return &Result{Info: j.info}, nil
	}
	return &Result{Info: j.info, Stopped: stopped}, nil
}

// install runs j's steps and writes its record.
func (b *Builder) install(ctx context.Context, j *job, start time.Time) ([]string, error) {
	stopped, err := b.runSteps(ctx, j)
	if err != nil {
		return nil, err
	}
	if b.Run.DryRun {
		b.Run.Note("write %s", filepath.Join(j.install, InfoFile))
		return nil, nil
	}
	return stopped, b.record(ctx, j, start)
}

// lock holds name's install, an flock on InstallRoot/.NAME.build.lock,
// from the fingerprint's check to the record: two abtest processes that
// need one build (two bisects of one range, sharing an install root)
// build it once, the second after waiting for the first, and never both
// into one prefix at once.
func (b *Builder) lock(ctx context.Context, name string) (unlock func(), err error) {
	if b.Run.DryRun {
		return func() {}, nil
	}
	if err := safefile.MkdirAll(b.InstallRoot, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	path := filepath.Join(b.InstallRoot, "."+name+".build.lock")
	unlock, err = flock.Wait(ctx, path, func(holder string) {
		b.phase("wait for pid " + holder + ", which builds it")
	})
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("locking %s: %w", path, err))
	}
	return unlock, nil
}

// Current reports whether Build would skip the worktree prov with
// options o: its install holds a build of the same fingerprint. It
// changes nothing.
func (b *Builder) Current(ctx context.Context, prov *worktree.Provenance, wtDir string, o Options) (bool, error) {
	j, err := b.plan(ctx, prov, wtDir, o)
	if err != nil {
		return false, err
	}
	_, ok := installed(j)
	return ok, nil
}

// sameSource returns the record of an install of j's Source under a
// name of a prefix of Options.ReuseFrom, when j may reuse one (its own
// install has no build of its fingerprint: Build checks first).
func (b *Builder) sameSource(j *job) *Info {
	if len(j.o.ReuseFrom) == 0 || j.o.Force {
		return nil
	}
	for _, r := range Records(b.InstallRoot) {
		if r.Source != j.info.Source || !reusable(r.Name, j.o.ReuseFrom) || r.Install != filepath.Join(b.InstallRoot, r.Name) {
			continue
		}
		// The prefix itself, not a link to one elsewhere, and sealed:
		// its own build seals it, and another name's build does not
		// change it (a build of it may be under way).
		if fi, err := os.Lstat(r.Install); err == nil && fi.IsDir() && exists(filepath.Join(r.Install, "bin", "postgres")) && b.sealed(r.Install) {
			return r
		}
	}
	return nil
}

// CheckReusePrefixes checks the name prefixes a user adds to ReuseFrom
// (bisect --reuse, nightly's reuse_from): each the start of a valid
// install name, none empty (that would name every install).
func CheckReusePrefixes(prefixes []string) error {
	for _, p := range prefixes {
		if err := safepath.CheckName(p); err != nil {
			return exitcode.BadInputf("reuse %q: give the start of the names of installs to reuse, e.g. pg- (%v)", p, err)
		}
	}
	return nil
}

// reusable says whether name has one of the prefixes (none empty: an
// empty prefix would name every install).
func reusable(name string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return p != "" && strings.HasPrefix(name, p) })
}

// installed returns the record of j's install when it holds j's build.
func installed(j *job) (*Info, bool) {
	prev, err := ReadInfo(j.install)
	return prev, err == nil && prev.Fingerprint == j.info.Fingerprint && !j.o.Force && exists(filepath.Join(j.install, "bin", "postgres"))
}

// job is one build under way.
type job struct {
	name, wt, install string
	meson             bool
	o                 Options
	ccache            bool
	// opts are the configure (or meson setup) options.
	opts          []string
	log, statsLog string
	env           []string
	// info is the record written once the build succeeded.
	info *Info
	// measure, when set, times the compile units.
	measure *measure
	// unitsPoll, when set, ends the count of the compile units
	// (measure.pollUnits).
	unitsPoll func()
	// unsealed: the install was handed to the build account (unseal)
	// and must be sealed again.
	unsealed bool
}

// stopUnits ends the count of the compile units, if any, once it has
// counted them.
func (j *job) stopUnits() {
	if j.unitsPoll != nil {
		j.unitsPoll()
		j.unitsPoll = nil
	}
}

// plan decides how to build: the build system, the options and the
// fingerprint, checking the tools first.
func (b *Builder) plan(ctx context.Context, prov *worktree.Provenance, wtDir string, o Options) (*job, error) {
	install, err := b.InstallDir(prov.Name)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	if o.Type == "" {
		o.Type = Release
	}
	j := &job{name: prov.Name, wt: wtDir, install: install, o: o, log: b.LogPath(prov.Name)}
	j.meson = exists(filepath.Join(wtDir, "meson.build"))
	system := "autotools"
	if j.meson {
		system = "meson"
	}
	if err := b.checkTools(wtDir, j.meson); err != nil {
		return nil, err
	}
	j.ccache = !o.NoCCache && lookPath("ccache")
	inputs, err := b.inputs(ctx, prov, wtDir)
	if err != nil {
		return nil, err
	}
	j.opts = b.options(o, j.meson, install, j.ccache)
	src, err := b.source(ctx, wtDir, system, install, o, j.opts, inputs)
	if err != nil {
		return nil, err
	}
	j.info = &Info{Source: src,
		Name: j.name, Worktree: wtDir, Install: install, System: system, Type: o.Type,
		Options: j.opts, Profiling: o.Profiling, Fingerprint: fingerprint(system, o, j.opts, inputs), Inputs: inputs, Log: j.log,
		CatalogVersion: catalogVersion(wtDir),
	}
	return j, nil
}

// prepare makes the install root, a fresh log, the build's environment
// and hands the build's directories to User.
func (b *Builder) prepare(j *job) error {
	if err := b.Run.MkdirAll(b.InstallRoot, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	if !b.Run.DryRun {
		// One log per build: the previous one is replaced.
		if err := safefile.WriteFile(j.log, nil, 0o644); err != nil {
			return exitcode.Failure(err)
		}
	}
	j.statsLog = filepath.Join(b.InstallRoot, "."+j.name+".ccache-stats")
	_ = os.Remove(j.statsLog)
	j.env = b.env(j.ccache, j.statsLog)
	if b.User != nil && j.ccache {
		// The caller's cache (root's home) is not the build user's to
		// write: a cache of its own beside the installs.
		j.env = append(j.env, "CCACHE_DIR="+b.ccacheDir())
	}
	if err := b.handOver(j.wt, j.statsLog, j.ccache); err != nil {
		if errors.Is(err, ErrForeign) {
			return err
		}
		return exitcode.Failure(fmt.Errorf("building %s: %w", j.name, err))
	}
	return nil
}

// runSteps runs the build's steps, stopping the servers that run the
// prefix's binaries before the first install step, and returns their
// names.
func (b *Builder) runSteps(ctx context.Context, j *job) ([]string, error) {
	var steps []step
	if j.meson {
		steps = b.mesonSteps(j.wt, j.install, j.opts, j.o, j.env, j.log)
	} else {
		steps = b.autotoolsSteps(j)
	}
	// One count of the units for the compile steps of a build that does
	// not tell them (autotools: make, then make -C contrib/…), ended
	// after the last, before the record reads the curve.
	last := -1
	for i, s := range steps {
		if s.phase == "compile" {
			last = i
		}
	}
	defer j.stopUnits()
	var stopped []string
	installing := false
	for i, s := range steps {
		if s.install && !installing && !b.Run.DryRun {
			installing = true
			var err error
			if stopped, err = b.stopServers(ctx, j.install); err != nil {
				return nil, err
			}
			// Handed to the build account only now, with nothing
			// running from it; sealed again after (Build).
			j.unsealed = true
			if err := b.unseal(j.install); err != nil {
				return nil, err
			}
		}
		// The old record goes before anything is installed over the
		// prefix: a half-installed prefix must not pass the fingerprint
		// check.
		if s.install {
			if err := b.Run.RemoveAll(filepath.Join(j.install, InfoFile)); err != nil {
				return nil, exitcode.Failure(err)
			}
		}
		if err := b.runStep(ctx, j, s); err != nil {
			return nil, err
		}
		if i == last {
			j.stopUnits()
		}
	}
	return stopped, nil
}

// runStep runs one step and adds its time to its phase's.
func (b *Builder) runStep(ctx context.Context, j *job, s step) error {
	b.phase(s.phase)
	t0 := time.Now()
	c := s.cmd
	var steps interface{ Step(done, total int) } = b.Progress
	if m := j.measure; m != nil && s.phase == "compile" {
		m.compiling(t0)
		if s.progress {
			steps = stepsMeasured{p: b.Progress, m: m}
		} else if j.unitsPoll == nil {
			total := 0
			if m.ref != nil {
				total = m.ref.Units
			}
			j.unitsPoll = m.pollUnits(ctx, filepath.Join(j.wt, worktree.BuildDir), total)
		}
	}
	if s.progress && steps != nil {
		c.Stdout = &ninjaProgress{p: steps}
	}
	if err := b.runCached(ctx, j, c, s.cache); err != nil {
		return b.failure(j.name, s.phase, j.log, err)
	}
	if s.record != "" {
		if err := b.Run.WriteFile(s.record, []byte(s.recordData), 0o644); err != nil {
			return exitcode.Failure(err)
		}
	}
	d := time.Since(t0).Seconds()
	switch s.phase {
	case "configure":
		j.info.Seconds.Configure += d
	case "compile":
		j.info.Seconds.Compile += d
	case "install":
		j.info.Seconds.Install += d
	}
	return nil
}

// record completes the build's record (time, ccache outcome, version)
// and writes it into the prefix: last, so that only a successful
// install has one.
func (b *Builder) record(ctx context.Context, j *job, start time.Time) error {
	info := j.info
	info.Seconds.Total = time.Since(start).Seconds()
	info.BuiltAt = time.Now().UTC()
	if j.measure != nil {
		info.Curve = j.measure.measured()
	}
	if j.ccache {
		info.CCache = readStatsLog(j.statsLog)
		_ = os.Remove(j.statsLog)
	}
	if v, err := ServerVersion(ctx, b.Run, j.install, b.User); err == nil {
		info.Version = v
	}
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := b.Run.WriteFile(filepath.Join(j.install, InfoFile), append(data, '\n'), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	return nil
}

// failure makes a build error: exit 3, the phase, the log path, and the
// last 20 lines of the log (compilers and ninja write errors to stdout,
// so the log, not stderr, has them).
func (b *Builder) failure(name, phase, log string, err error) error {
	var pe *proc.Error
	if errors.As(err, &pe) {
		if tail := proc.TailFile(log, 20); len(tail) > 0 {
			pe.Tail = tail
		}
		if errors.Is(pe.Err, context.Canceled) {
			return err
		}
	}
	return exitcode.Failure(fmt.Errorf("%w: %s: %s: %w", ErrFailed, name, phase, err))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func readString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
