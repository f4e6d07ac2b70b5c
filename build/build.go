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
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// InfoFile is the build record in an install prefix.
const InfoFile = ".abtest-build.json"

// recipe changes whenever the way abtest builds changes, so that old
// installs are rebuilt.
const recipe = "2"

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

// Servers stops what runs an install's binaries; cluster.Manager is one.
type Servers interface {
	// StopUsing stops the servers running the binaries under install
	// and returns their names.
	StopUsing(ctx context.Context, install string) ([]string, error)
}

// ErrInUse: a running process executes binaries of the install prefix a
// build would install over.
var ErrInUse = errors.New("build: install in use")

// Progress is told what the build is doing.
type Progress interface {
	Phase(name string)
	Step(done, total int)
}

// Info is a build's record (INSTALL/.abtest-build.json).
type Info struct {
	Name        string   `json:"name"`
	Worktree    string   `json:"worktree"`
	Install     string   `json:"install"`
	System      string   `json:"system"` // meson or autotools
	Type        Type     `json:"type"`
	Options     []string `json:"options"`
	Profiling   bool     `json:"profiling"`
	Fingerprint string   `json:"fingerprint"`
	Inputs      Inputs   `json:"inputs"`
	// Version is `postgres --version` of the result.
	Version string `json:"version"`
	// CatalogVersion is CATALOG_VERSION_NO of the tree: a data
	// directory of another catalog version cannot be started.
	CatalogVersion string    `json:"catalog_version"`
	BuiltAt        time.Time `json:"built_at"`
	Seconds        Timings   `json:"seconds"`
	CCache         *CCache   `json:"ccache,omitempty"`
	Log            string    `json:"log"`
	// Load is the host's load when the build began: a build's time
	// depends on it, and Estimate scales by it.
	Load *Load `json:"load,omitempty"`
}

// Load is a host's load average over a minute and its online CPUs.
type Load struct {
	Avg1 float64 `json:"avg1"`
	CPUs int     `json:"cpus"`
}

// Inputs are what the fingerprint hashes.
type Inputs struct {
	SHA      string   `json:"sha"`
	Head     string   `json:"head"`
	Patches  []string `json:"patches_sha256"`
	Changes  string   `json:"uncommitted_sha256"`
	Compiler string   `json:"compiler"`
	Recipe   string   `json:"recipe"`
}

// Timings are the seconds each phase took.
type Timings struct {
	Configure float64 `json:"configure"`
	Compile   float64 `json:"compile"`
	Install   float64 `json:"install"`
	Total     float64 `json:"total"`
}

// CCache is a build's ccache outcome.
type CCache struct {
	Hits    int     `json:"hits"`
	Misses  int     `json:"misses"`
	HitRate float64 `json:"hit_rate"`
}

// Result is what Build did.
type Result struct {
	Info    *Info
	Skipped bool
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

// ReadInfo reads the build record of the install prefix dir.
func ReadInfo(dir string) (*Info, error) {
	data, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return nil, err
	}
	var i Info
	if err := json.Unmarshal(data, &i); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, InfoFile), err)
	}
	return &i, nil
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
	if prev, err := ReadInfo(j.install); err == nil && prev.Fingerprint == j.info.Fingerprint && !o.Force && exists(filepath.Join(j.install, "bin", "postgres")) {
		b.Run.Note("build %s: fingerprint %s unchanged, skipping", j.name, text.Short(j.info.Fingerprint))
		return &Result{Info: prev, Skipped: true}, nil
	}
	if err := b.reachable(ctx, j.wt, b.InstallRoot); err != nil {
		return nil, err
	}
	if err := b.prepare(j); err != nil {
		return nil, err
	}
	start := time.Now()
	j.info.Load = b.load()
	stopped, err := b.runSteps(ctx, j)
	if err != nil {
		return nil, err
	}
	if b.Run.DryRun {
		b.Run.Note("write %s", filepath.Join(j.install, InfoFile))
		return &Result{Info: j.info}, nil
	}
	if err := b.record(ctx, j, start); err != nil {
		return nil, err
	}
	return &Result{Info: j.info, Stopped: stopped}, nil
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
	j.info = &Info{
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
		if err := os.WriteFile(j.log, nil, 0o644); err != nil {
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
	if err := b.handOver(j.wt, j.install, j.statsLog, j.ccache); err != nil {
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
	var stopped []string
	installing := false
	for _, s := range steps {
		if s.install && !installing && !b.Run.DryRun {
			installing = true
			var err error
			if stopped, err = b.stopServers(ctx, j.install); err != nil {
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
	}
	return stopped, nil
}

// runStep runs one step and adds its time to its phase's.
func (b *Builder) runStep(ctx context.Context, j *job, s step) error {
	b.phase(s.phase)
	t0 := time.Now()
	c := s.cmd
	if s.progress && b.Progress != nil {
		c.Stdout = &ninjaProgress{p: b.Progress}
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

// runCached runs c, a configure with the shared cache of results cache
// when it is not nil. A configure that fails with a seeded cache runs
// again without it: a precious variable (CC, CFLAGS, …) set otherwise in
// this environment is one reason, and the cache must never be why a
// build fails.
func (b *Builder) runCached(ctx context.Context, j *job, c proc.Cmd, cache *configureCache) error {
	if cache == nil {
		return b.Run.Run(ctx, c)
	}
	if err := b.seedCache(cache); err != nil {
		return exitcode.Failure(fmt.Errorf("building %s: configure cache: %w", j.name, err))
	}
	err := b.Run.Run(ctx, c)
	if err != nil && cache.seed && ctx.Err() == nil {
		appendLog(j.log, "# configure failed with the shared cache "+cache.shared+": again without it")
		cache.seed = false
		if err := b.seedCache(cache); err != nil {
			return exitcode.Failure(fmt.Errorf("building %s: configure cache: %w", j.name, err))
		}
		err = b.Run.Run(ctx, c)
	}
	if err != nil {
		return err
	}
	if err := b.keepCache(cache, j); err != nil {
		return exitcode.Failure(fmt.Errorf("building %s: configure cache: %w", j.name, err))
	}
	if err := b.portableConfigHeader(j); err != nil {
		return exitcode.Failure(fmt.Errorf("building %s: pg_config.h: %w", j.name, err))
	}
	return nil
}

// portableConfigHeader takes the worktree's own arguments, the prefix
// and the cache file, out of CONFIGURE_ARGS in the build's pg_config.h
// (PostgreSQL < 16), leaving the options. Every C file includes
// pg_config.h, so a prefix in it (one per worktree name) made ccache's
// direct mode miss for every file of a second worktree: 1 209 of 1 210
// hits came from the preprocessor mode, which runs the preprocessor
// first (heapam.c: 103 ms against 22 ms for a direct hit, load 6). The
// prefix is still compiled in where it is used (pg_config_paths.h) and
// `pg_config --bindir` and the others report it; only
// `pg_config --configure` no longer lists it. When config.status writes
// the header again (make runs it after a change of configure) the
// prefix is back, which costs direct hits, not correctness.
func (b *Builder) portableConfigHeader(j *job) error {
	path := filepath.Join(j.wt, worktree.BuildDir, "src", "include", "pg_config.h")
	if b.Run.DryRun {
		b.Run.Note("take the prefix out of CONFIGURE_ARGS in %s", path)
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fixed := configureArgsRE.ReplaceAllFunc(data, func(line []byte) []byte {
		s := string(line)
		s = strings.Replace(s, " '--prefix="+j.install+"'", "", 1)
		return []byte(strings.Replace(s, " '--cache-file="+configCache+"'", "", 1))
	})
	if string(fixed) == string(data) {
		return nil
	}
	return b.Run.WriteFileAs(path, fixed, 0o644, b.User)
}

var configureArgsRE = regexp.MustCompile(`(?m)^#define CONFIGURE_ARGS .*$`)

func appendLog(path, line string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

// record completes the build's record (time, ccache outcome, version)
// and writes it into the prefix: last, so that only a successful
// install has one.
func (b *Builder) record(ctx context.Context, j *job, start time.Time) error {
	info := j.info
	info.Seconds.Total = time.Since(start).Seconds()
	info.BuiltAt = time.Now().UTC()
	if j.ccache {
		info.CCache = readStatsLog(j.statsLog)
		_ = os.Remove(j.statsLog)
	}
	vc := proc.Cmd{Path: filepath.Join(j.install, "bin", "postgres"), Args: []string{"--version"}, ReadOnly: true, User: b.User, Dir: "/"}
	if out, err := b.Run.Output(ctx, vc); err == nil {
		info.Version = strings.TrimSpace(out)
	}
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := b.Run.WriteFile(filepath.Join(j.install, InfoFile), append(data, '\n'), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	return nil
}

// stopServers makes sure nothing runs the binaries of install before a
// build installs over them: a server would go on running the replaced
// (deleted) binary, and load the new build's libraries into the old
// server's backends. Servers stops abtest's clusters; any process left
// executing install's binaries is refused, with its pid.
func (b *Builder) stopServers(ctx context.Context, install string) ([]string, error) {
	var stopped []string
	if b.Servers != nil {
		var err error
		if stopped, err = b.Servers.StopUsing(ctx, install); err != nil {
			return stopped, err
		}
	}
	if users := InstallUsers(install); len(users) > 0 {
		return stopped, exitcode.Failure(fmt.Errorf("%w: pid %d runs %s; stop that server before installing over it (abtest switch -w NAME --stop)", ErrInUse, users[0].PID, users[0].Exe))
	}
	return stopped, nil
}

// User is a process that executes a binary of an install prefix.
type User struct {
	PID int
	Exe string
}

// InstallUsers lists the processes executing a binary under install's
// bin directory (a replaced one included: /proc/PID/exe then ends in
// " (deleted)").
func InstallUsers(install string) []User {
	bin, err := filepath.Abs(filepath.Join(install, "bin"))
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	var out []User
	for _, st := range procfs.All() {
		exe, err := procfs.Exe(st.PID)
		if err != nil || !st.Alive() {
			continue
		}
		if strings.HasPrefix(strings.TrimSuffix(exe, " (deleted)"), bin+"/") {
			out = append(out, User{PID: st.PID, Exe: exe})
		}
	}
	return out
}

// handOver gives the build user (User) what its build writes: the build
// directory, the install prefix and the ccache stats log. Trees made by
// an earlier build as root are handed over whole (Lchown: a symbolic link
// inside is changed itself, never its target).
func (b *Builder) handOver(wt, install, statsLog string, ccache bool) error {
	if b.User == nil || b.Run.DryRun {
		return nil
	}
	uid, gid := int(b.User.UID), int(b.User.GID)
	for _, dir := range []string{filepath.Join(wt, worktree.BuildDir), install} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := chownTree(dir, uid, gid); err != nil {
			return err
		}
	}
	if ccache {
		if err := os.Mkdir(b.ccacheDir(), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := chownTree(b.ccacheDir(), uid, gid); err != nil {
			return err
		}
		f, err := os.OpenFile(statsLog, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Chown(uid, gid)
	}
	return nil
}

// reachable checks that the build account can enter each of dirs (or,
// for one not made yet, its nearest existing ancestor): as root, a
// private parent directory otherwise fails the build with "fork/exec
// ../configure: permission denied".
func (b *Builder) reachable(ctx context.Context, dirs ...string) error {
	if b.User == nil {
		return nil
	}
	for _, dir := range dirs {
		if dir, ok := b.Run.CanEnter(ctx, b.User, dir); !ok {
			return exitcode.BadInputf("user %s (builds run as it when abtest is root) cannot enter %s (a parent directory is private): put worktrees and installs (PG_WORKTREES_DIR, PG_INSTALL_DIR) under a directory it can reach, e.g. /var/tmp/abtest", b.User.Name, dir)
		}
	}
	return nil
}

func (b *Builder) ccacheDir() string {
	return filepath.Join(b.InstallRoot, ".ccache")
}

// chownTree gives dir and everything below it to uid:gid, without
// following symbolic links. It walks the whole tree every time: a tree
// handed over once can still get files of another owner (a build run as
// root by an older abtest into an install the server account owns made
// `make install` fail on its chmod), and a walk of an install and a
// build directory (about 11 000 entries) costs milliseconds beside a
// build.
func chownTree(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory abtest made", dir)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return os.Lchown(path, uid, gid)
	})
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

type step struct {
	phase    string
	cmd      proc.Cmd
	install  bool
	progress bool
	// record, when set, is written with recordData after the step
	// succeeds: the options the build directory was configured with, so
	// the next build knows whether to configure again.
	record     string
	recordData string
	// cache, for autotools' configure, is its shared cache of results.
	cache *configureCache
}

// options returns the configuration options for o, in a stable order.
func (b *Builder) options(o Options, meson bool, install string, ccache bool) []string {
	if meson {
		opts := []string{"--prefix=" + install}
		switch o.Type {
		case Release:
			opts = append(opts, "--buildtype=release", "-Dcassert=false", "-Db_ndebug=true")
		case Debug:
			opts = append(opts, "--buildtype=debug", "-Dcassert=true")
		case DebugNoAssert:
			opts = append(opts, "--buildtype=debug", "-Dcassert=false")
		}
		if o.Profiling {
			opts = append(opts, "-Ddebug=true", "-Dc_args=-fno-omit-frame-pointer")
		}
		return append(opts, o.MesonOpts...)
	}
	// --enable-depend: without it make does not know which objects
	// include which headers, and a worktree moved to another commit (or
	// given a patch to a header) would keep stale objects — a build of
	// neither commit, measured as one of them.
	opts := []string{"--prefix=" + install, "--without-icu", "--enable-depend"}
	cflags := "-O2"
	switch o.Type {
	case Debug:
		opts = append(opts, "--enable-debug", "--enable-cassert")
		cflags = "-O0"
	case DebugNoAssert:
		opts = append(opts, "--enable-debug")
		cflags = "-O0"
	}
	if o.Profiling {
		cflags += " -g -fno-omit-frame-pointer"
	}
	opts = append(opts, "CFLAGS="+cflags)
	if ccache {
		opts = append(opts, "CC=ccache gcc")
	}
	return append(opts, o.ConfigureOpts...)
}

// env is the build's environment: ccache's layout and its per-build
// stats log.
func (b *Builder) env(ccache bool, statsLog string) []string {
	if !ccache {
		return []string{"CCACHE_DISABLE=1"}
	}
	root, _ := filepath.Abs(b.WorktreesRoot)
	return []string{
		"CCACHE_BASEDIR=" + root,
		"CCACHE_NOHASHDIR=1",
		"CCACHE_STATSLOG=" + statsLog,
	}
}

func (b *Builder) jobs() string {
	if b.Jobs > 0 {
		return strconv.Itoa(b.Jobs)
	}
	return strconv.Itoa(runtime.NumCPU())
}

// mesonSteps: setup the first time, configure when the options changed,
// then ninja and meson install.
func (b *Builder) mesonSteps(wt, install string, opts []string, o Options, env []string, log string) []step {
	bd := filepath.Join(wt, worktree.BuildDir)
	var steps []step
	cmd := func(args ...string) proc.Cmd {
		return proc.Cmd{Path: args[0], Args: args[1:], Dir: wt, Env: env, Unset: makeVars, Log: log, User: b.User}
	}
	recorded := filepath.Join(bd, ".abtest-options")
	want := strings.Join(opts, "\n")
	switch {
	case !exists(filepath.Join(bd, "build.ninja")):
		setup := []string{"meson", "setup", worktree.BuildDir}
		if exists(filepath.Join(bd, "meson-private")) {
			// A setup that failed half-way leaves state meson refuses
			// to set up over.
			setup = append(setup, "--wipe")
		}
		steps = append(steps, step{phase: "configure", cmd: cmd(append(setup, opts...)...)})
	case readString(recorded) != want:
		// meson configure takes the same -D options; --prefix and
		// --buildtype too.
		steps = append(steps, step{phase: "configure", cmd: cmd(append([]string{"meson", "configure", worktree.BuildDir}, opts...)...)})
	}
	steps = append(steps,
		step{phase: "compile", cmd: cmd("ninja", "-C", worktree.BuildDir), progress: true},
		step{phase: "install", cmd: cmd("meson", "install", "-C", worktree.BuildDir, "--quiet", "--only-changed"), install: true},
	)
	if steps[0].phase == "configure" {
		steps[0].record, steps[0].recordData = recorded, want
	}
	return steps
}

// makeVars are removed from make's environment: when abtest itself runs
// under make (make demo, make test), an inherited MAKELEVEL makes
// PostgreSQL's top-level make believe it is a sub-make and skip the
// generated headers, and MAKEFLAGS would join the outer jobserver.
var makeVars = []string{"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}

// autotoolsSteps: configure (VPATH, in WORKTREE/build) when the options
// changed, make, make install, and the contrib modules. configure runs
// with a cache of its results shared by the builds whose configure
// inputs are the same (configureCache).
func (b *Builder) autotoolsSteps(j *job) []step {
	bd := filepath.Join(j.wt, worktree.BuildDir)
	cmd := func(args ...string) proc.Cmd {
		return proc.Cmd{Path: args[0], Args: args[1:], Dir: bd, Env: j.env, Unset: makeVars, Log: j.log, User: b.User}
	}
	recorded := filepath.Join(bd, ".abtest-options")
	want := strings.Join(j.opts, "\n")
	var steps []step
	if !exists(filepath.Join(bd, "config.status")) || readString(recorded) != want {
		cache := b.configureCache(j)
		args := append([]string{"../configure", "--quiet", "--cache-file=" + configCache}, j.opts...)
		steps = append(steps,
			step{phase: "configure", cmd: proc.Cmd{Path: "mkdir", Args: []string{"-p", bd}, Log: j.log}},
			step{phase: "configure", cmd: cmd(args...), cache: cache, record: recorded, recordData: want},
		)
	}
	steps = append(steps,
		step{phase: "compile", cmd: cmd("make", "-s", "-j", b.jobs())},
		step{phase: "compile", cmd: cmd("make", "-s", "-j", b.jobs(), "-C", "contrib/pg_stat_statements")},
		step{phase: "install", cmd: cmd("make", "-s", "install"), install: true},
	)
	contrib := append([]string{"pg_stat_statements"}, j.o.Contrib...)
	for _, m := range dedup(contrib) {
		steps = append(steps, step{phase: "install", cmd: cmd("make", "-s", "-C", "contrib/"+m, "install"), install: true})
	}
	return steps
}

// configCache is configure's cache file in the build directory, named
// relative to it so that config.status --recheck (which make runs when
// configure changes) finds it too.
const configCache = "config.cache"

// configureCache shares configure's results between the worktrees that
// configure the same way: configure run with a cache of its checks takes
// 6.6 s instead of 32.6 s for PostgreSQL 15 (2 cores, load 5), and writes
// the same files (compared, prefix and paths aside). The cache is keyed by
// everything the checks depend on: the configure script, the options but
// the prefix (no check depends on it), the compiler, the account that
// runs configure, its PATH and the host. Checks that autoconf does not
// cache run every time; a precious variable (CC, CFLAGS, …) that differs
// from the cache's makes configure fail, and it runs again without the
// cache.
type configureCache struct {
	// shared is the cache in the install root; local the build
	// directory's copy configure reads and writes.
	shared, local string
	// seed: shared exists and is copied to local before configure.
	seed bool
}

func (b *Builder) configureCache(j *job) *configureCache {
	h := sha256.New()
	if data, err := os.ReadFile(filepath.Join(j.wt, "configure")); err == nil {
		h.Write(data)
	}
	fmt.Fprintf(h, "\x00compiler=%s\x00", j.info.Inputs.Compiler)
	for _, op := range j.opts {
		if !strings.HasPrefix(op, "--prefix=") {
			fmt.Fprintf(h, "opt=%s\x00", op)
		}
	}
	user := ""
	if b.User != nil {
		user = b.User.Name
	}
	host, _ := os.Hostname()
	fmt.Fprintf(h, "user=%s\x00path=%s\x00host=%s\x00", user, os.Getenv("PATH"), host)
	c := &configureCache{
		shared: filepath.Join(b.InstallRoot, ".configure-cache", hex.EncodeToString(h.Sum(nil))[:32]),
		local:  filepath.Join(j.wt, worktree.BuildDir, configCache),
	}
	c.seed = exists(c.shared)
	return c
}

// seedCache copies the shared configure cache into the build directory,
// or removes a stale copy there: a cache left by an earlier configure of
// other options or another configure script must not answer this one.
func (b *Builder) seedCache(c *configureCache) error {
	if !c.seed {
		return b.Run.RemoveAll(c.local)
	}
	data, err := os.ReadFile(c.shared)
	if err != nil {
		return err
	}
	b.Run.Note("configure: results of %s", c.shared)
	return b.Run.WriteFileAs(c.local, data, 0o644, b.User)
}

// keepCache stores the build directory's configure cache as the shared
// one, without the lines that name this worktree or its prefix (none
// does with PostgreSQL 15; a check that did must not answer for another
// worktree), and removes the local copy: a later config.status --recheck
// then checks from scratch.
func (b *Builder) keepCache(c *configureCache, j *job) error {
	if b.Run.DryRun {
		b.Run.Note("keep %s as %s", c.local, c.shared)
		return nil
	}
	data, err := os.ReadFile(c.local)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a configure that keeps no cache: nothing to share
	}
	if err != nil {
		return err
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, j.wt) && !strings.Contains(line, j.install) {
			kept = append(kept, line)
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.shared), 0o755); err != nil {
		return err
	}
	if err := b.Run.WriteFile(c.shared, []byte(strings.Join(kept, "")), 0o644); err != nil {
		return err
	}
	return os.Remove(c.local)
}

// checkTools fails with exit 3 naming the missing program and its Debian
// package.
func (b *Builder) checkTools(wt string, meson bool) error {
	type tool struct{ name, pkg string }
	tools := []tool{{"cc", "gcc (or build-essential)"}, {"make", "make"}}
	if meson {
		tools = append(tools, tool{"meson", "meson"}, tool{"ninja", "ninja-build"})
	}
	// Release tarballs ship the generated parsers; git trees need bison
	// and flex to make them.
	if !exists(filepath.Join(wt, "src", "backend", "parser", "gram.c")) {
		tools = append(tools, tool{"bison", "bison"}, tool{"flex", "flex"})
	}
	for _, t := range tools {
		if !lookPath(t.name) {
			return exitcode.Failure(fmt.Errorf("%w: %s is not installed; on Debian: apt-get install %s", ErrMissingTool, t.name, t.pkg))
		}
	}
	return nil
}

// inputs gathers what the fingerprint hashes.
func (b *Builder) inputs(ctx context.Context, prov *worktree.Provenance, wt string) (Inputs, error) {
	in := Inputs{SHA: prov.SHA, Recipe: recipe, Patches: []string{}}
	for _, p := range prov.Patches {
		in.Patches = append(in.Patches, p.SHA256)
	}
	git := func(args ...string) (string, error) {
		c := proc.Cmd{Path: "git", Args: append([]string{"-C", wt}, args...), ReadOnly: true}
		return b.Run.Output(ctx, c)
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return in, exitcode.Failure(err)
	}
	in.Head = strings.TrimSpace(head)
	// Uncommitted changes: the diff of tracked files, plus the names and
	// contents of untracked ones.
	h := sha256.New()
	diff, err := git("diff", "HEAD", "--binary")
	if err != nil {
		return in, exitcode.Failure(err)
	}
	io.WriteString(h, diff)
	untracked, err := git("ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return in, exitcode.Failure(err)
	}
	files := strings.Split(strings.TrimRight(untracked, "\x00"), "\x00")
	sort.Strings(files)
	for _, f := range files {
		if f == "" {
			continue
		}
		io.WriteString(h, "\x00"+f+"\x00")
		if data, err := os.ReadFile(filepath.Join(wt, f)); err == nil {
			h.Write(data)
		}
	}
	if diff != "" || untracked != "" {
		in.Changes = hex.EncodeToString(h.Sum(nil))
	}
	cc := proc.Cmd{Path: "cc", Args: []string{"--version"}, ReadOnly: true}
	out, err := b.Run.Output(ctx, cc)
	if err != nil {
		return in, exitcode.Failure(err)
	}
	in.Compiler, _, _ = strings.Cut(out, "\n")
	return in, nil
}

func fingerprint(system string, o Options, opts []string, in Inputs) string {
	h := sha256.New()
	fmt.Fprintf(h, "system=%s\ntype=%s\nprofiling=%v\n", system, o.Type, o.Profiling)
	for _, op := range opts {
		fmt.Fprintf(h, "opt=%s\n", op)
	}
	fmt.Fprintf(h, "contrib=%s\n", strings.Join(dedup(o.Contrib), ","))
	data, _ := json.Marshal(in)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

var catversionRE = regexp.MustCompile(`(?m)^#define\s+CATALOG_VERSION_NO\s+(\d+)`)

// catalogVersion reads CATALOG_VERSION_NO from the tree.
func catalogVersion(wt string) string {
	data, err := os.ReadFile(filepath.Join(wt, "src", "include", "catalog", "catversion.h"))
	if err != nil {
		return ""
	}
	if m := catversionRE.FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}

// readStatsLog counts hits and misses in a ccache stats log: one "# FILE"
// line per compilation followed by its counters.
func readStatsLog(path string) *CCache {
	f, err := os.Open(path)
	if err != nil {
		return &CCache{}
	}
	defer f.Close()
	c := &CCache{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case "direct_cache_hit", "preprocessed_cache_hit":
			c.Hits++
		case "cache_miss":
			c.Misses++
		}
	}
	if n := c.Hits + c.Misses; n > 0 {
		c.HitRate = float64(c.Hits) / float64(n)
	}
	return c
}

// ninjaProgress parses ninja's "[n/N] …" lines.
type ninjaProgress struct {
	p    Progress
	rest []byte
}

var ninjaRE = regexp.MustCompile(`^\[(\d+)/(\d+)\]`)

func (n *ninjaProgress) Write(b []byte) (int, error) {
	data := append(n.rest, b...)
	for {
		i := strings.IndexByte(string(data), '\n')
		if i < 0 {
			break
		}
		if m := ninjaRE.FindSubmatch(data[:i]); m != nil {
			done, _ := strconv.Atoi(string(m[1]))
			total, _ := strconv.Atoi(string(m[2]))
			n.p.Step(done, total)
		}
		data = data[i+1:]
	}
	n.rest = append([]byte(nil), data...)
	return len(b), nil
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
