package build

// The commands a build runs: meson setup/configure, ninja and meson
// install for meson trees; configure, make and make install (with the
// contrib modules) for autotools trees; the tools they need.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/worktree"
)

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

// ninjaProgress parses ninja's "[n/N] …" lines.
type ninjaProgress struct {
	p    interface{ Step(done, total int) }
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
