package build

// configure's shared cache of results (autotools trees), and the
// prefix taken out of pg_config.h so that ccache's direct mode hits
// across worktrees.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/worktree"
)

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
	if f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
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
	if err := safefile.MkdirAll(filepath.Dir(c.shared), 0o755); err != nil {
		return err
	}
	if err := b.Run.WriteFile(c.shared, []byte(strings.Join(kept, "")), 0o644); err != nil {
		return err
	}
	return os.Remove(c.local)
}
