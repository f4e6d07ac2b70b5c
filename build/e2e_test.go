package build_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/demo"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// TestFromSourcePG15 builds the PostgreSQL 15 tree (autotools) for real:
// the install runs, has pg_stat_statements, an unchanged rebuild is
// skipped, a second worktree with a one-line patch is mostly ccache hits,
// and a compile error leaves the previous install intact.
func TestFromSourcePG15(t *testing.T) {
	testenv.RequireTools(t, "cc", "make", "ccache")
	e := testbuild.PG15(t)
	ctx := context.Background()
	base := e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release})
	if u := e.B.User; u != nil && owner(t, filepath.Join(e.Worktrees, "pg15-base", "build", "config.status")) != u.UID {
		// A cache made before builds ran as the server's account: built
		// again from scratch as that account, whose ccache then warms.
		t.Logf("cached pg15-base was built as another account: rebuilding it as %s", u.Name)
		testbuild.Own(t, "pg15-base")
		os.RemoveAll(filepath.Join(e.Worktrees, "pg15-base", "build"))
		prov, err := e.WT.Info(ctx, "pg15-base")
		if err != nil {
			t.Fatal(err)
		}
		if base, err = e.B.Build(ctx, prov, filepath.Join(e.Worktrees, "pg15-base"), build.Options{Type: build.Release, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("base: skipped=%v %s in %.1f s", base.Skipped, base.Info.Version, base.Info.Seconds.Total)
	out, err := exec.Command(filepath.Join(base.Info.Install, "bin", "postgres"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "postgres (PostgreSQL) 15.") {
		t.Fatalf("postgres --version: %q, %v", out, err)
	}
	checkPGSS(t, base.Info.Install)
	if base.Info.CatalogVersion == "" || base.Info.System != "autotools" {
		t.Errorf("info = %+v", base.Info)
	}

	again := e.Build(t, "pg15-base", "base", nil, build.Options{Type: build.Release})
	if !again.Skipped || again.Info.Fingerprint != base.Info.Fingerprint {
		t.Errorf("unchanged rebuild not skipped: %+v", again)
	}

	// A second worktree of the same commit with a one-line patch: ccache
	// (base_dir = worktrees root, build dir inside the worktree) hits.
	name := fmt.Sprintf("pg15-ccache-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		e.WT.Remove(context.Background(), name)
		os.RemoveAll(filepath.Join(e.Installs, name))
		os.Remove(filepath.Join(e.Installs, name+".build.log"))
	})
	patch := filepath.Join(t.TempDir(), demo.PatchName)
	os.WriteFile(patch, demo.Patch, 0o644)
	second := e.Build(t, name, "base", []string{patch}, build.Options{Type: build.Release})
	if u := e.B.User; u != nil {
		// As root the build ran as the unprivileged account: what make
		// wrote is that account's; the install it made is sealed, root's.
		for _, f := range []string{filepath.Join(e.Worktrees, name, "build", "config.status"), filepath.Join(e.Worktrees, name, "build", "src", "backend", "postgres")} {
			if uid := owner(t, f); uid != u.UID {
				t.Errorf("%s belongs to uid %d, want %s (%d): the build ran as root", f, uid, u.Name, u.UID)
			}
		}
		if uid := owner(t, filepath.Join(second.Info.Install, "bin", "postgres")); uid != 0 {
			t.Errorf("%s/bin/postgres belongs to uid %d after the build: the install was not sealed", second.Info.Install, uid)
		}
	}
	cc := second.Info.CCache
	if cc == nil || cc.Hits+cc.Misses < 500 {
		t.Fatalf("ccache stats of the second worktree = %+v; want hundreds of compilations", cc)
	}
	t.Logf("second worktree: %.1f s, ccache %d hits / %d misses (%.1f%%)", second.Info.Seconds.Total, cc.Hits, cc.Misses, 100*cc.HitRate)
	// Its record has the curve of its units (object files counted every
	// 2 s): ccache's compilations, in order, within the compile phase, a
	// point for at least every other count (at most 32 asked for).
	t.Logf("second worktree's curve: %d points over %.1f s of compile, last %+v", len(second.Info.Curve), second.Info.Seconds.Compile, second.Info.Curve[max(len(second.Info.Curve)-1, 0):])
	if c := second.Info.Curve; len(c) < min(32, int(second.Info.Seconds.Compile/4)) || c[len(c)-1].Units < (cc.Hits+cc.Misses)*9/10 || c[len(c)-1].Units > cc.Hits+cc.Misses+10 ||
		c[len(c)-1].Seconds > second.Info.Seconds.Compile || c[0].Units < 1 {
		t.Errorf("the second worktree's curve %v: want its %d compilations along its %.1f s of compile", c, cc.Hits+cc.Misses, second.Info.Seconds.Compile)
	}
	if cc.HitRate <= 0.80 {
		t.Errorf("cross-worktree ccache hit rate %.1f%%, want > 80%%", 100*cc.HitRate)
	}

	// A third worktree of the second's commit and patch, under a name of
	// its own, reusing pg15-ccache-*: the second's install serves, nothing is built
	// and no prefix is made for the name (bisect's b-<sha> of a tree
	// already built).
	reuse := name + "-reuse"
	t.Cleanup(func() {
		e.WT.Remove(context.Background(), reuse)
		os.Remove(filepath.Join(e.Installs, reuse+".build.log"))
	})
	third := e.Build(t, reuse, "base", []string{patch}, build.Options{Type: build.Release, ReuseFrom: []string{"pg15-ccache-"}})
	if !third.Reused || third.Info.Install != second.Info.Install || third.Info.Source != second.Info.Source || second.Info.Source == "" {
		t.Errorf("a worktree of the second's source reusing pg15-ccache-*: reused %v %s (source %.12s), want the second's %s (source %.12s)",
			third.Reused, third.Info.Install, third.Info.Source, second.Info.Install, second.Info.Source)
	}
	if _, err := os.Lstat(filepath.Join(e.Installs, reuse)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a reused build made its own prefix: %v", err)
	}
	if base.Info.Source == second.Info.Source {
		t.Errorf("the patched tree has the base's source %.12s", base.Info.Source)
	}

	// The second worktree's build is of its own source: its patched
	// pg_stat_statements differs from the base's (no cache answered for
	// it), and its paths are its own although pg_config.h was shared.
	pkglib := func(install string) string {
		out, err := exec.Command(filepath.Join(install, "bin", "pg_config"), "--pkglibdir").Output()
		if err != nil {
			t.Fatalf("pg_config: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	baseSO, _ := os.ReadFile(filepath.Join(pkglib(base.Info.Install), "pg_stat_statements.so"))
	secondSO, _ := os.ReadFile(filepath.Join(pkglib(second.Info.Install), "pg_stat_statements.so"))
	if len(secondSO) == 0 || string(baseSO) == string(secondSO) {
		t.Errorf("patched pg_stat_statements.so (%d bytes) is the base's (%d bytes): the patch was not built", len(secondSO), len(baseSO))
	}
	bin, _ := os.ReadFile(filepath.Join(second.Info.Install, "bin", "postgres"))
	if !strings.Contains(string(bin), second.Info.Install+"/") || strings.Contains(string(bin), base.Info.Install+"/") {
		t.Errorf("%s/bin/postgres does not have its own prefix compiled in", second.Info.Install)
	}
	// A compile error: exit 3, the log's tail and path; the install of
	// the previous build stays as it was.
	bad := filepath.Join(e.Worktrees, name, "src", "backend", "utils", "adt", "int.c")
	src, _ := os.ReadFile(bad)
	os.WriteFile(bad, append(src, []byte("\nthis is not C;\n")...), 0o644)
	prov, err := e.WT.Info(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.B.Build(ctx, prov, filepath.Join(e.Worktrees, name), build.Options{Type: build.Release})
	var pe *proc.Error
	if !errors.Is(err, build.ErrFailed) || exitcode.Code(err) != exitcode.Infra || !errors.As(err, &pe) {
		t.Fatalf("broken build = %v, want ErrFailed exit 3", err)
	}
	if !strings.Contains(err.Error(), name+".build.log") || !strings.Contains(strings.Join(pe.Tail, "\n"), "int.c") || len(pe.Tail) > 20 {
		t.Errorf("error %q, tail %q: want the log path and the compiler's complaint", err, pe.Tail)
	}
	info, err := build.ReadInfo(filepath.Join(e.Installs, name))
	if err != nil || info.Fingerprint != second.Info.Fingerprint {
		t.Errorf("previous build record after a failed build: %+v, %v", info, err)
	}
	if _, err := exec.Command(filepath.Join(e.Installs, name, "bin", "postgres"), "--version").Output(); err != nil {
		t.Errorf("previous install broken by a failed build: %v", err)
	}
}

// TestFromSourceMeson builds a meson tree (PostgreSQL ≥ 16) when
// ABTEST_PG_MESON_SOURCE names its git repository.
func TestFromSourceMeson(t *testing.T) {
	src := os.Getenv("ABTEST_PG_MESON_SOURCE")
	if src == "" {
		t.Skip("ABTEST_PG_MESON_SOURCE is not set: no meson tree to build")
	}
	testenv.RequireTools(t, "meson", "ninja", "cc")
	e := testbuild.New(t, src)
	res := e.Build(t, "meson-head", "HEAD", nil, build.Options{Type: build.Release})
	t.Logf("meson build: skipped=%v %.1f s (configure %.1f, compile %.1f, install %.1f) ccache %+v",
		res.Skipped, res.Info.Seconds.Total, res.Info.Seconds.Configure, res.Info.Seconds.Compile, res.Info.Seconds.Install, res.Info.CCache)
	if res.Info.System != "meson" {
		t.Errorf("system = %s", res.Info.System)
	}
	checkPGSS(t, res.Info.Install)
	if _, err := exec.Command(filepath.Join(res.Info.Install, "bin", "postgres"), "--version").Output(); err != nil {
		t.Error(err)
	}
}

// checkPGSS checks that install has pg_stat_statements where its server
// looks for modules (pg_config --pkglibdir: lib/postgresql for
// configure, lib/<multiarch>/postgresql for meson on Debian).
func checkPGSS(t *testing.T, install string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(install, "bin", "pg_config"), "--pkglibdir").Output()
	if err != nil {
		t.Fatalf("pg_config: %v", err)
	}
	so := filepath.Join(strings.TrimSpace(string(out)), "pg_stat_statements.so")
	if _, err := os.Stat(so); err != nil {
		t.Errorf("pg_stat_statements not installed: %v", err)
	}
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}
