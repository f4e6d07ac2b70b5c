package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/worktree"
)

// fakeTree makes a worktree of a tiny repository that looks like a
// PostgreSQL tree to the builder (meson.build or configure, catversion.h,
// a generated gram.c so that bison and flex are not needed).
func fakeTree(t *testing.T, meson bool) (*Builder, *worktree.Provenance, string, *strings.Builder) {
	t.Helper()
	return fakeTreeWith(t, meson, nil)
}

// fakeTreeWith is fakeTree with more files (or other contents); an
// executable configure when they have one.
func fakeTreeWith(t *testing.T, meson bool, more map[string]string) (*Builder, *worktree.Provenance, string, *strings.Builder) {
	t.Helper()
	return fakeTreeIn(t, t.TempDir(), meson, more)
}

// fakeTreeIn is fakeTreeWith with the worktrees and installs under root.
func fakeTreeIn(t *testing.T, root string, meson bool, more map[string]string) (*Builder, *worktree.Provenance, string, *strings.Builder) {
	t.Helper()
	files := map[string]string{
		"src/include/catalog/catversion.h": "#define CATALOG_VERSION_NO\t202209061\n",
		"src/backend/parser/gram.c":        "/* generated */\n",
	}
	if meson {
		files["meson.build"] = "project('postgresql')\n"
	} else {
		files["configure"] = "#!/bin/sh\n"
	}
	for f, data := range more {
		files[f] = data
	}
	repo := testenv.NewRepo(t, files)
	if _, ok := more["configure"]; ok {
		testenv.Git(t, repo, "update-index", "--chmod=+x", "configure")
		testenv.Git(t, repo, "commit", "-q", "-m", "executable configure")
	}
	var trace strings.Builder
	run := &proc.Runner{DryRun: true, Trace: &trace}
	wt := &worktree.Manager{Source: repo, Root: filepath.Join(root, "wt"), Run: &proc.Runner{}}
	if _, err := wt.Switch(context.Background(), "lru", "HEAD"); err != nil {
		t.Fatal(err)
	}
	prov, err := wt.Info(context.Background(), "lru")
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{WorktreesRoot: wt.Root, InstallRoot: filepath.Join(root, "install"), Run: run, Jobs: 2}
	if err := os.MkdirAll(b.InstallRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	return b, prov, filepath.Join(wt.Root, "lru"), &trace
}

// TestMesonCommandLines pins the exact meson/ninja commands per build type
// and per change of options: setup the first time, configure when the
// options change, nothing but ninja and install when they do not.
func TestMesonCommandLines(t *testing.T) {
	testenv.RequireTools(t, "meson", "ninja", "cc", "ccache")
	b, prov, dir, trace := fakeTree(t, true)
	ctx := context.Background()
	var out strings.Builder
	step := func(title string, o Options) {
		trace.Reset()
		if _, err := b.Build(ctx, prov, dir, o); err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		out.WriteString("## " + title + "\n" + trace.String() + "\n")
	}
	for _, typ := range Types {
		step("fresh "+string(typ), Options{Type: typ})
	}
	step("profiling, extra option, no ccache", Options{Type: Release, Profiling: true, NoCCache: true, MesonOpts: []string{"-Dllvm=disabled"}})

	// A configured build dir: same options → no configure; other options
	// → meson configure; a half-failed setup → setup --wipe.
	bd := filepath.Join(dir, worktree.BuildDir)
	os.MkdirAll(bd, 0o755)
	os.WriteFile(filepath.Join(bd, "build.ninja"), nil, 0o644)
	install := filepath.Join(b.InstallRoot, "lru")
	os.WriteFile(filepath.Join(bd, ".abtest-options"), []byte(strings.Join(b.options(Options{Type: Release}, true, install, true), "\n")), 0o644)
	step("configured, same options", Options{Type: Release})
	step("configured, options changed to debug", Options{Type: Debug})
	os.Remove(filepath.Join(bd, "build.ninja"))
	os.MkdirAll(filepath.Join(bd, "meson-private"), 0o755)
	step("setup that failed half-way", Options{Type: Release})

	testenv.Golden(t, "meson.txt", scrub(out.String(), b, dir))
}

func TestAutotoolsCommandLines(t *testing.T) {
	testenv.RequireTools(t, "make", "cc", "ccache")
	b, prov, dir, trace := fakeTree(t, false)
	var out strings.Builder
	for _, o := range []Options{{Type: Release}, {Type: Debug, Profiling: true, Contrib: []string{"pg_prewarm"}}, {Type: DebugNoAssert, NoCCache: true, ConfigureOpts: []string{"--with-openssl"}}} {
		trace.Reset()
		if _, err := b.Build(context.Background(), prov, dir, o); err != nil {
			t.Fatal(err)
		}
		out.WriteString("## " + string(o.Type) + "\n" + trace.String() + "\n")
	}
	testenv.Golden(t, "autotools.txt", scrub(out.String(), b, dir))
}

var (
	bytesRE    = regexp.MustCompile(`\(\d+ bytes\)`)
	cacheKeyRE = regexp.MustCompile(`\.configure-cache/[0-9a-f]+`)
)

// scrub replaces the test's temporary paths with stable names, and the
// sizes of files holding them.
func scrub(s string, b *Builder, dir string) string {
	s = bytesRE.ReplaceAllString(s, "(N bytes)")
	// The key hashes the host, the account and PATH.
	s = cacheKeyRE.ReplaceAllString(s, ".configure-cache/KEY")
	s = strings.ReplaceAll(s, dir, "$WORKTREE")
	s = strings.ReplaceAll(s, b.InstallRoot, "$INSTALL_ROOT")
	s = strings.ReplaceAll(s, b.WorktreesRoot, "$WORKTREES")
	return s
}

func TestParseType(t *testing.T) {
	for _, s := range []string{"release", "debug", "debug_noassert"} {
		if got, err := ParseType(s); err != nil || string(got) != s {
			t.Errorf("ParseType(%q) = %v, %v", s, got, err)
		}
	}
	_, err := ParseType("fast")
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "release, debug, debug_noassert") {
		t.Errorf("ParseType(fast) = %v", err)
	}
}

// TestFingerprint: what determines the binaries changes it; nothing else
// does.
func TestFingerprint(t *testing.T) {
	testenv.RequireTools(t, "cc")
	b, prov, dir, _ := fakeTree(t, true)
	b.Run = &proc.Runner{}
	ctx := context.Background()
	fp := func(o Options, p *worktree.Provenance) string {
		in, err := b.inputs(ctx, p, dir)
		if err != nil {
			t.Fatal(err)
		}
		return fingerprint("meson", o, b.options(o, true, "/i", true), in)
	}
	base := fp(Options{Type: Release}, prov)
	if again := fp(Options{Type: Release}, prov); again != base {
		t.Error("fingerprint not stable")
	}
	seen := map[string]string{base: "base"}
	check := func(what, f string) {
		if prev, ok := seen[f]; ok {
			t.Errorf("%s has the same fingerprint as %s", what, prev)
		}
		seen[f] = what
	}
	check("debug", fp(Options{Type: Debug}, prov))
	check("profiling", fp(Options{Type: Release, Profiling: true}, prov))
	check("meson option", fp(Options{Type: Release, MesonOpts: []string{"-Dx=y"}}, prov))
	patched := *prov
	patched.Patches = []worktree.Patch{{SHA256: "abc"}}
	check("patch", fp(Options{Type: Release}, &patched))
	os.WriteFile(filepath.Join(dir, "src/backend/parser/gram.c"), []byte("/* edited */\n"), 0o644)
	check("uncommitted edit", fp(Options{Type: Release}, prov))
	os.WriteFile(filepath.Join(dir, "new.c"), []byte("int x;\n"), 0o644)
	check("untracked file", fp(Options{Type: Release}, prov))
	// abtest's own files do not count.
	os.MkdirAll(filepath.Join(dir, "build"), 0o755)
	os.WriteFile(filepath.Join(dir, "build", "x.o"), []byte("obj"), 0o644)
	if got := fp(Options{Type: Release}, prov); seen[got] != "untracked file" {
		t.Errorf("files in the build dir changed the fingerprint (%s)", seen[got])
	}
}

// TestSource: two worktrees of one tree have one Source whatever their
// commits and prefixes, another tree or build type another; a build with
// ReuseFrom finds an install of its Source under another name of one of
// its prefixes, never one of another prefix (nor of an empty one), never
// through a link, never one whose record names another prefix, and not
// without ReuseFrom or with Force.
func TestSource(t *testing.T) {
	testenv.RequireTools(t, "cc")
	b, prov, _, _ := fakeTree(t, true)
	b.Run = &proc.Runner{}
	ctx := context.Background()
	wt := &worktree.Manager{Source: prov.Source, Root: b.WorktreesRoot, Run: &proc.Runner{}}
	testenv.Commit(t, prov.Source, "empty", nil)
	testenv.Commit(t, prov.Source, "edit", map[string]string{"src/backend/parser/gram.c": "/* other */\n"})
	source := func(name, ref, install string, o Options) string {
		if _, err := wt.Switch(ctx, name, ref); err != nil {
			t.Fatal(err)
		}
		p, err := wt.Info(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(b.WorktreesRoot, name)
		in, err := b.inputs(ctx, p, d)
		if err != nil {
			t.Fatal(err)
		}
		src, err := b.source(ctx, d, "meson", install, o, b.options(o, true, install, true), in)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	release := Options{Type: Release}
	base := source("lru", "HEAD~2", "/i/lru", release)
	if got := source("empty", "HEAD~1", "/i/empty", release); got != base {
		t.Errorf("an empty commit's worktree under another prefix has another source")
	}
	if got := source("edit", "HEAD", "/i/edit", release); got == base {
		t.Errorf("another tree has the same source")
	}
	if got := source("debug", "HEAD~2", "/i/debug", Options{Type: Debug}); got == base {
		t.Errorf("a debug build has the release build's source")
	}

	record := func(dir string, info Info) {
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "bin", "postgres"), nil, 0o755)
		data, _ := json.Marshal(info)
		if err := os.WriteFile(filepath.Join(dir, InfoFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := filepath.Join(t.TempDir(), "linked")
	record(elsewhere, Info{Name: "pg-linked", Install: filepath.Join(b.InstallRoot, "pg-linked"), Source: base})
	if err := os.Symlink(elsewhere, filepath.Join(b.InstallRoot, "pg-linked")); err != nil {
		t.Fatal(err)
	}
	record(filepath.Join(b.InstallRoot, "pg-moved"), Info{Name: "pg-moved", Install: "/somewhere/else", Source: base})
	record(filepath.Join(b.InstallRoot, "user"), Info{Name: "user", Install: filepath.Join(b.InstallRoot, "user"), Source: base})
	j := &job{name: "pg-1", o: Options{ReuseFrom: []string{"pg-"}}, info: &Info{Source: base}}
	if got := b.sameSource(j); got != nil {
		t.Errorf("reused %s: through a link, a record of another prefix, or a name without pg-", got.Name)
	}
	record(filepath.Join(b.InstallRoot, "pg-base"), Info{Name: "pg-base", Install: filepath.Join(b.InstallRoot, "pg-base"), Source: base})
	if got := b.sameSource(j); got == nil || got.Name != "pg-base" {
		t.Errorf("reused %+v, want pg-base", got)
	}
	for _, o := range []Options{{}, {ReuseFrom: []string{"pg-"}, Force: true}, {ReuseFrom: []string{"", "b-"}}} {
		j.o = o
		if got := b.sameSource(j); got != nil {
			t.Errorf("options %+v reused %s", o, got.Name)
		}
	}
	// A user's name, listed (bisect --reuse user): any of the prefixes.
	j.o = Options{ReuseFrom: []string{"b-", "user"}}
	if got := b.sameSource(j); got == nil || got.Name != "user" {
		t.Errorf("ReuseFrom b-, user reused %+v, want user", got)
	}
}

func TestMissingToolNamesPackage(t *testing.T) {
	b, prov, dir, _ := fakeTree(t, true)
	t.Setenv("PATH", t.TempDir())
	_, err := b.Build(context.Background(), prov, dir, Options{Type: Release})
	if !errors.Is(err, ErrMissingTool) || exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), "apt-get install gcc") {
		t.Errorf("Build without cc = %v, want ErrMissingTool exit 3 naming gcc", err)
	}
}

func TestStatsLogAndNinjaProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats")
	os.WriteFile(path, []byte("# a.c\ncache_miss\ndirect_cache_miss\n# b.c\ndirect_cache_hit\nlocal_storage_hit\n# c.c\ndirect_cache_miss\npreprocessed_cache_hit\n# d.c\ndirect_cache_hit\n"), 0o644)
	c := readStatsLog(path)
	if c.Hits != 3 || c.Misses != 1 || c.HitRate != 0.75 {
		t.Errorf("stats = %+v", c)
	}
	var rec recorder
	np := &ninjaProgress{p: &rec}
	np.Write([]byte("[1/20] Compiling C object a.o\n[2/2"))
	np.Write([]byte("0] Compiling b\nFAILED: x\n[20/20] Linking\n"))
	if strings.Join(rec.steps, " ") != "1/20 2/20 20/20" {
		t.Errorf("steps = %v", rec.steps)
	}
}

type recorder struct{ steps []string }

func (r *recorder) Phase(string)                   {}
func (r *recorder) Estimate(time.Duration, string) {}
func (r *recorder) Step(done, total int) {
	r.steps = append(r.steps, fmt.Sprintf("%d/%d", done, total))
}

// TestNoInstallOverRunningBinaries: Build never installs over binaries a
// process executes: Servers is asked to stop them first, and whatever
// still runs them is refused with its pid (exit 3).
func TestNoInstallOverRunningBinaries(t *testing.T) {
	install := t.TempDir()
	bin := filepath.Join(install, "bin")
	os.MkdirAll(bin, 0o755)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	data, _ := os.ReadFile(sleep)
	os.WriteFile(filepath.Join(bin, "postgres"), data, 0o755)
	cmd := exec.Command(filepath.Join(bin, "postgres"), "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	b := &Builder{Run: &proc.Runner{}}
	_, err = b.stopServers(context.Background(), install)
	if !errors.Is(err, ErrInUse) || exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Errorf("stopServers with a running binary = %v, want ErrInUse naming pid %d", err, cmd.Process.Pid)
	}
	b.Servers = killer{cmd}
	stopped, err := b.stopServers(context.Background(), install)
	if err != nil || len(stopped) != 1 {
		t.Errorf("stopServers with Servers = %v, %v", stopped, err)
	}
}

// killer stops the one process it was given, as cluster.Manager stops the
// clusters of an install.
type killer struct{ cmd *exec.Cmd }

func (k killer) StopUsing(ctx context.Context, install string) ([]string, error) {
	k.cmd.Process.Kill()
	k.cmd.Wait()
	return []string{"sleeper"}, nil
}

// fakeConfigure notes in ../runs whether it found its cache seeded (a
// line "ac_cv_seen=yes"), fails on a cache holding "bad", and writes a
// cache with one line naming its own build directory.
const fakeConfigure = `#!/bin/sh
for a; do case $a in --cache-file=*) cache=${a#--cache-file=};; esac; done
if grep -q bad "$cache" 2>/dev/null; then echo "changes in the environment can compromise the build" >&2; exit 1; fi
if grep -q ac_cv_seen=yes "$cache" 2>/dev/null; then echo cached >>../runs; else echo fresh >>../runs; fi
printf 'ac_cv_seen=yes\nac_cv_path_here=%s\n' "$PWD" >"$cache"
args=; for a; do args="$args '$a'"; done
mkdir -p src/include && printf '#define A 1\n#define CONFIGURE_ARGS "%s"\n' "$args" >src/include/pg_config.h
`

// TestConfigureCacheShared: configure's results are shared between the
// worktrees that configure the same way (another prefix only), never
// with one whose options or configure script differ; a seeded configure
// that fails runs again without the cache; lines naming a worktree are
// not shared.
func TestConfigureCacheShared(t *testing.T) {
	root := t.TempDir()
	b := &Builder{WorktreesRoot: filepath.Join(root, "wt"), InstallRoot: filepath.Join(root, "install"), Run: &proc.Runner{}}
	os.MkdirAll(b.InstallRoot, 0o755)
	configure := func(name, script string, opts ...string) string {
		t.Helper()
		wt := filepath.Join(b.WorktreesRoot, name)
		os.MkdirAll(wt, 0o755)
		os.WriteFile(filepath.Join(wt, "configure"), []byte(script), 0o755)
		install := filepath.Join(b.InstallRoot, name)
		j := &job{name: name, wt: wt, install: install, log: filepath.Join(root, name+".log"),
			opts: append([]string{"--prefix=" + install}, opts...), info: &Info{Inputs: Inputs{Compiler: "cc 1"}}}
		os.WriteFile(j.log, nil, 0o644)
		for _, s := range b.autotoolsSteps(j) {
			if s.phase != "configure" {
				break
			}
			if err := b.runStep(context.Background(), j, s); err != nil {
				t.Fatalf("configure %s: %v", name, err)
			}
		}
		if exists(filepath.Join(wt, "build", configCache)) {
			t.Errorf("%s: config.cache left in the build directory", name)
		}
		// The prefix (one per worktree) out of pg_config.h, which every
		// file includes: ccache's direct mode then hits across worktrees.
		h := readString(filepath.Join(wt, "build", "src", "include", "pg_config.h"))
		if want := "#define A 1\n#define CONFIGURE_ARGS \" '--quiet' " + strings.Join(quoteAll(opts), " ") + "\"\n"; h != want {
			t.Errorf("%s: pg_config.h =\n%s\nwant\n%s", name, h, want)
		}
		return strings.TrimSpace(readString(filepath.Join(wt, "runs")))
	}
	if got := configure("a", fakeConfigure, "CFLAGS=-O2"); got != "fresh" {
		t.Errorf("first worktree: %s, want fresh", got)
	}
	if got := configure("b", fakeConfigure, "CFLAGS=-O2"); got != "cached" {
		t.Errorf("second worktree, same configure and options: %s, want cached", got)
	}
	if got := configure("c", fakeConfigure, "CFLAGS=-O0"); got != "fresh" {
		t.Errorf("other options: %s, want fresh", got)
	}
	if got := configure("d", fakeConfigure+"# changed\n", "CFLAGS=-O2"); got != "fresh" {
		t.Errorf("other configure script: %s, want fresh", got)
	}
	caches, _ := filepath.Glob(filepath.Join(b.InstallRoot, ".configure-cache", "*"))
	if len(caches) != 3 {
		t.Fatalf("shared caches = %v, want one per distinct configure", caches)
	}
	for _, c := range caches {
		if data := readString(c); strings.Contains(data, b.WorktreesRoot) || !strings.Contains(data, "ac_cv_seen=yes") {
			t.Errorf("%s = %q: want the results without the worktree's paths", c, data)
		}
		// A cache configure refuses: configure runs again without it.
		os.WriteFile(c, []byte("bad\n"), 0o644)
	}
	if got := configure("e", fakeConfigure, "CFLAGS=-O2"); got != "fresh" {
		t.Errorf("refused cache: %s, want fresh", got)
	}
	if log := readString(filepath.Join(root, "e.log")); !strings.Contains(log, "again without it") {
		t.Errorf("log of a configure run again without its cache: %q", log)
	}
	if got := configure("f", fakeConfigure, "CFLAGS=-O2"); got != "cached" {
		t.Errorf("after a refused cache was replaced: %s, want cached", got)
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + s + "'"
	}
	return out
}

// TestBuildUserMustReachTheTrees: as root, builds run as the server's
// account; a worktree or install root under a private directory is
// refused up front in one line (exit 2) instead of failing in configure
// with "fork/exec ../configure: permission denied".
func TestBuildUserMustReachTheTrees(t *testing.T) {
	name := testenv.ServerUser(t)
	if name == "" {
		t.Skip("builds run as another account only when the tests are root")
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{User: u, Run: &proc.Runner{}}
	ctx := context.Background()
	shared := testenv.SharedTempDir(t)
	if err := b.reachable(ctx, shared, filepath.Join(shared, "install", "not-yet")); err != nil {
		t.Errorf("a directory the account can enter: %v", err)
	}
	private := t.TempDir() // 0700, root's
	err = b.reachable(ctx, shared, filepath.Join(private, "install"))
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "cannot enter "+private+" ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a private install root: %v", err)
	}
}

// TestChownTreeWhileAnotherBuildWrites: ccache's directory is shared by
// concurrent builds, and ccache writes temporary files there and renames
// or removes them. Handing the tree over must step past an entry that
// goes away under the walk instead of failing the build.
func TestChownTreeWhileAnotherBuildWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another account needs root")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "a")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := filepath.Join(sub, fmt.Sprintf("tmp%d", i%64))
			os.WriteFile(name, nil, 0o644)
			os.Remove(name)
		}
	}()
	var err error
	for i := 0; i < 2000 && err == nil; i++ {
		err = chownTree(dir, 65534, 65534+i%2)
	}
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("chownTree beside a writer: %v", err)
	}
}
