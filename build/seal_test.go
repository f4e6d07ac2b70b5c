package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// nobody is the hostile local user of the tests.
const nobody = 65534

// buildAccount is the account builds run as when the tests are root; a
// test of sealing needs root.
func buildAccount(t *testing.T) *proc.User {
	t.Helper()
	name := testenv.ServerUser(t)
	if name == "" {
		t.Skip("installs are sealed only when abtest is root")
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// sealConfigure writes a Makefile whose install copies the tree's fake
// postgres and pg_config into the prefix, one set-user-ID and writable
// by all, the other and lib group-writable, the latter with a second
// name in lib (as zic links time zone aliases), unless INSTALL_ROOT/FAIL
// exists.
const sealConfigure = `#!/bin/sh
for a; do case $a in --prefix=*) prefix=${a#--prefix=};; esac; done
mkdir -p contrib/pg_stat_statements
printf 'all:\ninstall:\n\ttest ! -e %s/../FAIL\n\tmkdir -p %s/bin %s/lib\n\tcp ../fake/postgres ../fake/pg_config %s/bin/\n\tchmod 4777 %s/bin/postgres\n\tchmod 0775 %s/bin/pg_config %s/lib\n\tln -f %s/bin/pg_config %s/lib/alias\n' \
  "$prefix" "$prefix" "$prefix" "$prefix" "$prefix" "$prefix" "$prefix" "$prefix" "$prefix" >Makefile
printf 'all:\ninstall:\n' >contrib/pg_stat_statements/Makefile
`

// sealTree is a fake autotools tree (sealConfigure) whose worktrees and
// installs the build account can reach, built for real as that account.
func sealTree(t *testing.T, u *proc.User) (*Builder, func(o Options) (*Result, error)) {
	t.Helper()
	testenv.RequireTools(t, "cc", "make")
	b, prov, dir, _ := fakeTreeIn(t, testenv.SharedTempDir(t), false, map[string]string{
		"configure":      sealConfigure,
		"fake/postgres":  "#!/bin/sh\necho 'postgres (PostgreSQL) 15.0'\n",
		"fake/pg_config": "#!/bin/sh\necho /usr/lib\n",
	})
	b.Run, b.User = &proc.Runner{}, u
	return b, func(o Options) (*Result, error) { return b.Build(context.Background(), prov, dir, o) }
}

// checkSealed fails t unless every entry of install is root's, without
// group or other write bits and set-ID bits, and install is 0755.
func checkSealed(t *testing.T, install, when string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(install, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n++
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 0 || st.Gid != 0 || fi.Mode()&fs.ModeSymlink == 0 && fi.Mode()&sealedBits != 0 {
			t.Errorf("%s: %s is %d:%d mode %v, want root:root without go-w and set-ID bits", when, path, st.Uid, st.Gid, fi.Mode())
		}
		return nil
	})
	if err != nil || n < 4 {
		t.Fatalf("%s: walking %s: %d entries, %v", when, install, n, err)
	}
	if fi, err := os.Stat(install); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: %s mode %v (%v), want 0755", when, install, fi.Mode(), err)
	}
}

// TestBuildSealsInstall (issue 39, item 2): a build as the build account
// leaves the install root's and 0755, which that account cannot write
// (it once rewrote another install's bin/pg_config, which root then
// ran), whatever modes make gave; a build into it later hands it over
// and seals it again, a failed one included; an install an older abtest
// left the build account's is sealed by the build that finds it
// current. An install directory and ccache's, made 0777 beforehand,
// end 0755 and 0700.
func TestBuildSealsInstall(t *testing.T) {
	u := buildAccount(t)
	b, build := sealTree(t, u)
	install := filepath.Join(b.InstallRoot, "lru")
	for _, d := range []string{install, b.ccacheDir()} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	res, err := build(Options{Type: Release})
	if err != nil || res.Skipped {
		t.Fatalf("build: %+v, %v", res, err)
	}
	checkSealed(t, install, "after the build")
	if res.Info.Version != "postgres (PostgreSQL) 15.0" {
		t.Errorf("version %q: the record's postgres --version did not run", res.Info.Version)
	}
	if fi, err := os.Stat(b.ccacheDir()); err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != u.UID {
		t.Errorf("ccache directory: %v (%v), want %s's, 0700", fi.Mode(), err, u.Name)
	}
	pgConfig := filepath.Join(install, "bin", "pg_config")
	before, _ := os.ReadFile(pgConfig)
	out, err := exec.Command("runuser", "-u", u.Name, "--", "sh", "-c", "echo 'echo pwned' >>"+pgConfig).CombinedOutput()
	if after, _ := os.ReadFile(pgConfig); err == nil || string(after) != string(before) {
		t.Errorf("%s wrote the sealed %s (%v, %s)", u.Name, pgConfig, err, out)
	}
	out, err = exec.Command("runuser", "-u", u.Name, "--", "touch", filepath.Join(install, "bin", "planted")).CombinedOutput()
	if err == nil {
		t.Errorf("%s made a file in the sealed bin directory (%s)", u.Name, out)
	}

	// Current: skipped, still sealed; one an older abtest left the build
	// account's is sealed where it is found.
	if out, err := exec.Command("chown", "-R", u.Name, install).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	if res, err := build(Options{Type: Release}); err != nil || !res.Skipped {
		t.Fatalf("unchanged build: %+v, %v", res, err)
	}
	checkSealed(t, install, "after a skipped build of an unsealed install")

	// A second name of a file outside (/etc/shadow, planted where
	// fs.protected_hardlinks is off): not handed over with the install,
	// which stays sealed.
	victim := filepath.Join(b.InstallRoot, "victim")
	os.WriteFile(victim, []byte("secret"), 0o600)
	if err := os.Link(victim, filepath.Join(install, "lib", "planted")); err != nil {
		t.Fatal(err)
	}
	// (perf's build-id cache links every binary it profiles the same
	// way.) The name in the install is dropped, the file keeps root.
	if _, err := build(Options{Type: Release, Force: true}); err != nil {
		t.Errorf("a build over an install with a link to a file outside: %v", err)
	}
	if fi, _ := os.Stat(victim); fi.Sys().(*syscall.Stat_t).Uid != 0 || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Errorf("the file outside was handed to %s, or keeps its name in the install", u.Name)
	}
	checkSealed(t, install, "after a hand-over that dropped a second name")

	// Rebuilt over the sealed install (handed over, its own hard link
	// with it, installed, sealed).
	if res, err := build(Options{Type: Release, Force: true}); err != nil || res.Skipped {
		t.Fatalf("forced build: %+v, %v", res, err)
	}
	checkSealed(t, install, "after a rebuild")
	// A failed install step: sealed all the same.
	if err := os.WriteFile(filepath.Join(b.InstallRoot, "FAIL"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := build(Options{Type: Release, Force: true}); !errors.Is(err, ErrFailed) {
		t.Fatalf("failing install: %v, want ErrFailed", err)
	}
	checkSealed(t, install, "after a failed install")
}

// TestBuildRefusesPlantedInstall (issue 39, item 3): bin/postgres another
// local user put under $PG_INSTALL_DIR/NAME before abtest first built
// NAME, or a ccache directory of that user's, is refused (exit 2) before
// anything runs: no configure as the build account, no planted script
// run, nothing chowned.
func TestBuildRefusesPlantedInstall(t *testing.T) {
	u := buildAccount(t)
	for _, c := range []struct {
		name string
		// plant returns the path planted, to be left nobody's.
		plant func(t *testing.T, b *Builder, mark string) string
	}{
		{"nobody's bin/postgres in root's install dir", func(t *testing.T, b *Builder, mark string) string {
			bin := filepath.Join(b.InstallRoot, "lru", "bin")
			os.MkdirAll(bin, 0o755)
			return plantScript(t, filepath.Join(bin, "postgres"), mark)
		}},
		{"nobody's install dir", func(t *testing.T, b *Builder, mark string) string {
			install := filepath.Join(b.InstallRoot, "lru")
			os.MkdirAll(filepath.Join(install, "bin"), 0o777)
			plantScript(t, filepath.Join(install, "bin", "pg_config"), mark)
			chown(t, filepath.Join(install, "bin"))
			chown(t, install)
			return install
		}},
		{"nobody's ccache directory", func(t *testing.T, b *Builder, mark string) string {
			testenv.RequireTools(t, "ccache")
			os.Mkdir(b.ccacheDir(), 0o777)
			os.Chmod(b.ccacheDir(), 0o777)
			return chown(t, b.ccacheDir())
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, build := sealTree(t, u)
			mark := filepath.Join(testenv.SharedTempDir(t), "ran")
			planted := c.plant(t, b, mark)
			_, err := build(Options{Type: Release})
			if !errors.Is(err, ErrForeign) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "uid 65534") || strings.Contains(err.Error(), "\n") {
				t.Errorf("build = %v, want ErrForeign, exit 2, one line naming uid 65534", err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the planted script ran")
			}
			if configured := filepath.Join(b.WorktreesRoot, "lru", "build", "Makefile"); exists(configured) {
				t.Errorf("configure ran as %s after all", u.Name)
			}
			if fi, err := os.Lstat(planted); err != nil || fi.Sys().(*syscall.Stat_t).Uid != nobody {
				t.Errorf("%s was chowned (or removed): %v", planted, err)
			}
		})
	}
}

// plantScript makes path a script of nobody's that touches mark.
func plantScript(t *testing.T, path, mark string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s\necho 'postgres (PostgreSQL) 15.0'\n", mark)), 0o755); err != nil {
		t.Fatal(err)
	}
	return chown(t, path)
}

func chown(t *testing.T, path string) string {
	t.Helper()
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChownTreeRefusesHardLink: handing a tree to the build account
// never hands over a root file that has another name (a hard link to
// /etc/shadow planted where fs.protected_hardlinks is off would give
// the account the password file), nor another account's entry.
func TestChownTreeRefusesHardLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another account needs root")
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	os.Mkdir(tree, 0o755)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("secret"), 0o600)
	if err := os.Link(victim, filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := chownTree(tree, nobody, nobody); err != nil {
		t.Errorf("chownTree over a hard link = %v, want its name in the tree dropped", err)
	}
	if fi, _ := os.Stat(victim); fi.Sys().(*syscall.Stat_t).Uid != 0 || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Errorf("the linked file was handed over, or keeps its name in the tree")
	}
	if b, _ := os.ReadFile(victim); string(b) != "secret" {
		t.Errorf("the linked file changed: %q", b)
	}
	os.WriteFile(filepath.Join(tree, "theirs"), nil, 0o644)
	os.Lchown(filepath.Join(tree, "theirs"), 1234, 1234)
	if err := chownTree(tree, nobody, nobody); !errors.Is(err, ErrForeign) || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("chownTree over another account's file = %v, want ErrForeign, exit 2", err)
	}
}

// TestCheckTrusted (issue 39, item 4): as root, an install is run only
// when root (or the user who invoked sudo) owns its programs, its
// library directory and every directory above them, and nobody else can
// write them: Debian's is accepted; one of nobody's, one whose bin is
// 0777 or a postgres reached through nobody's link is refused (exit 2,
// one line); nobody's install is the caller's own when nobody ran sudo.
func TestCheckTrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installs are checked only when abtest is root")
	}
	t.Setenv("SUDO_UID", "")
	if err := CheckTrusted(testenv.PGInstall(t)); err != nil {
		t.Errorf("Debian's install: %v", err)
	}
	root := testenv.SharedTempDir(t)
	refused := func(what, install, want string) {
		t.Helper()
		err := CheckTrusted(install)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want exit 2 saying %q", what, err, want)
		}
		if err := CheckInstall(install); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: CheckInstall = %v, want exit 2", what, err)
		}
	}
	ok := fakeInstall(t, root, "ok")
	if err := CheckTrusted(ok); err != nil {
		t.Errorf("root's install: %v", err)
	}

	theirs := fakeInstall(t, root, "theirs")
	if out, err := exec.Command("chown", "-R", fmt.Sprint(nobody), theirs).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	refused("nobody's install", theirs, "owned by uid 65534")
	t.Setenv("SUDO_UID", fmt.Sprint(nobody))
	if err := CheckTrusted(theirs); err != nil {
		t.Errorf("the sudo caller's own install: %v", err)
	}
	t.Setenv("SUDO_UID", "")

	open := fakeInstall(t, root, "open")
	os.Chmod(filepath.Join(open, "bin"), 0o777)
	refused("a bin directory of mode 0777", open, "writable by group or others")
	os.Chmod(filepath.Join(open, "bin"), 0o755)
	os.Chmod(filepath.Join(open, "lib"), 0o777)
	refused("a lib directory of mode 0777", open, "writable by group or others")

	linked := fakeInstall(t, root, "linked")
	target := filepath.Join(root, "real-postgres")
	os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755)
	os.Remove(filepath.Join(linked, "bin", "postgres"))
	os.Symlink(target, filepath.Join(linked, "bin", "postgres"))
	os.Lchown(filepath.Join(linked, "bin", "postgres"), nobody, nobody)
	refused("bin/postgres a link of nobody's", linked, "owned by uid 65534")
}

// TestSealLeftovers: an install a build killed with -9 left the build
// account's (no deferred seal ran) is sealed by the next command that
// opens the clusters, before it starts again the clusters that build
// stopped; one another process builds into (its lock held) is left.
func TestSealLeftovers(t *testing.T) {
	u := buildAccount(t)
	root := testenv.SharedTempDir(t)
	b := &Builder{InstallRoot: root, Run: &proc.Runner{}, User: u}
	killed := fakeInstall(t, root, "killed")
	busy := fakeInstall(t, root, "busy")
	fakeInstall(t, root, "sealed")
	for _, d := range []string{killed, busy} {
		if out, err := exec.Command("chown", "-R", u.Name, d).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	release, _, err := flock.Try(filepath.Join(root, ".busy.build.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if got := b.SealLeftovers(); len(got) != 1 || got[0] != "killed" {
		t.Errorf("SealLeftovers = %v, want [killed]", got)
	}
	checkSealed(t, killed, "after SealLeftovers")
	if fi, _ := os.Stat(filepath.Join(busy, "bin", "postgres")); fi.Sys().(*syscall.Stat_t).Uid != u.UID {
		t.Errorf("the install a build holds was sealed under it")
	}
}
