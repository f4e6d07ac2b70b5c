package build

// The build record, INSTALL/.abtest-build.json, and what it holds: the
// fingerprint's inputs, the timings, the ccache outcome.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/worktree"
)

// InfoFile is the build record in an install prefix.
const InfoFile = ".abtest-build.json"

// recipe changes whenever the way abtest builds changes, so that old
// installs are rebuilt.
const recipe = "2"

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
	// Source is what the build compiled, whatever its name: the tree
	// (the commit's with the patches on top), any uncommitted change,
	// the build system, type, options but the prefix, the contrib
	// modules and the compiler. Two installs of one Source hold the same
	// programs, so a build for a name abtest makes up (bisect's b-<sha>)
	// can use the other (Options.ReuseFrom).
	Source string `json:"source,omitempty"`
	Inputs Inputs `json:"inputs"`
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
	// Curve is the compile phase as it went: the compile units done
	// (ninja's steps, autotools' object files) at times since it began,
	// a point per 1/128 of them at most. A later build measures its
	// pace against it (Estimate's Reference).
	Curve []Point `json:"curve,omitempty"`
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

// source is the Source of a build in the worktree wt of the inputs in,
// with the options opts of its install prefix install: the tree of the
// worktree's HEAD (the patches are commits on top) in place of the
// commits and patches, the prefix left out of the options.
func (b *Builder) source(ctx context.Context, wt, system, install string, o Options, opts []string, in Inputs) (string, error) {
	c := proc.Cmd{Path: "git", Args: []string{"-C", wt, "rev-parse", "HEAD^{tree}"}, ReadOnly: true}
	tree, err := b.Run.Output(ctx, c)
	if err != nil {
		return "", exitcode.Failure(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "system=%s\ntype=%s\nprofiling=%v\ntree=%s\nchanges=%s\ncompiler=%s\nrecipe=%s\n", system, o.Type, o.Profiling, strings.TrimSpace(tree), in.Changes, in.Compiler, in.Recipe)
	for _, op := range opts {
		fmt.Fprintf(h, "opt=%s\n", strings.ReplaceAll(op, install, "PREFIX"))
	}
	fmt.Fprintf(h, "contrib=%s\n", strings.Join(dedup(o.Contrib), ","))
	return hex.EncodeToString(h.Sum(nil)), nil
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

// ServerVersion is `postgres --version` of install, run as user (nil:
// the caller): the one reader of a server's version.
func ServerVersion(ctx context.Context, run *proc.Runner, install string, user *proc.User) (string, error) {
	out, err := run.Output(ctx, proc.Cmd{Path: filepath.Join(install, "bin", "postgres"), Args: []string{"--version"}, ReadOnly: true,
		User: user, Env: []string{"LD_LIBRARY_PATH=" + LibDir(install)}, Dir: "/"})
	return strings.TrimSpace(out), err
}

// CheckInstall refuses an installation prefix without an executable
// bin/postgres, or, as root, one another account owns or can write
// (CheckTrusted), before a run creates anything for it.
func CheckInstall(install string) error {
	postgres := filepath.Join(install, "bin", "postgres")
	st, err := os.Stat(postgres)
	if err == nil && (!st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0) {
		err = fmt.Errorf("%s is not an executable file", postgres)
	}
	if err != nil {
		return exitcode.BadInputf("not a PostgreSQL installation: %v", err)
	}
	if err := untrusted(install); err != nil {
		return exitcode.BadInputf("%v; %s", err, trustHint)
	}
	return nil
}

// LibDir is install's library directory: lib/<multiarch> when its libpq
// is there (Debian's layout), else lib.
func LibDir(install string) string {
	if m, _ := filepath.Glob(filepath.Join(install, "lib", "*", "libpq.so*")); len(m) > 0 {
		return filepath.Dir(m[0])
	}
	return filepath.Join(install, "lib")
}
