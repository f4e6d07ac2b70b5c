package build

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// fakePgConfig answers what BuildExtension asks an install's pg_config:
// the compiler and the directories, PREFIX replaced by the install.
const fakePgConfig = `#!/bin/sh
for a; do case $a in
--cc) echo cc;;
--bindir) echo PREFIX/bin;;
--pkglibdir) echo PREFIX/lib;;
--sharedir) echo PREFIX/share;;
*) echo PREFIX/include;;
esac; done
`

// fakeInstall makes a sealed install (root's, 0755) under root with a
// fakePgConfig.
func fakeInstall(t *testing.T, root, name string) string {
	t.Helper()
	install := filepath.Join(root, name)
	for _, d := range []string{"bin", "lib", "share/extension"} {
		if err := os.MkdirAll(filepath.Join(install, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(install, "bin", "postgres"), []byte("#!/bin/sh\necho 'postgres (PostgreSQL) 15.0'\n"), 0o755)
	os.WriteFile(filepath.Join(install, "bin", "pg_config"), []byte(strings.ReplaceAll(fakePgConfig, "PREFIX", install)), 0o755)
	return install
}

// TestExtensionInstallStaged (issue 39, item 2): an extension's Makefile
// runs as the build account and installs into a staging directory;
// abtest copies what it staged into the install, root's, without group
// or other write and set-ID bits. The Makefile's attempts to rewrite its
// own install's and another install's pg_config (one did, and root then
// ran it) fail: both stay sealed. A staged file outside the install's
// directories, or a link, is refused (exit 3), and nothing is written
// there.
func TestExtensionInstallStaged(t *testing.T) {
	u := buildAccount(t)
	testenv.RequireTools(t, "make")
	root := testenv.SharedTempDir(t)
	b := &Builder{InstallRoot: filepath.Join(root, "inst"), Run: &proc.Runner{}, User: u}
	install := fakeInstall(t, b.InstallRoot, "a")
	other := fakeInstall(t, b.InstallRoot, "b")
	outside := filepath.Join(root, "outside")
	os.Mkdir(outside, 0o755)
	const stage = "$(DESTDIR)$(shell $(PG_CONFIG) --pkglibdir)"
	for _, c := range []struct {
		name, install, fail string
	}{
		{"files", "\tmkdir -p " + stage + " $(DESTDIR)$(shell $(PG_CONFIG) --sharedir)/extension\n" +
			"\tcp ext.so " + stage + "/ && chmod 4777 " + stage + "/ext.so\n" +
			"\tcp ext.control $(DESTDIR)$(shell $(PG_CONFIG) --sharedir)/extension/ && chmod 0666 $(DESTDIR)$(shell $(PG_CONFIG) --sharedir)/extension/ext.control\n" +
			"\t-echo pwned >>" + filepath.Join(other, "bin", "pg_config") + "\n" +
			"\t-echo pwned >>$(shell $(PG_CONFIG) --bindir)/pg_config\n" +
			"\t-touch $(shell $(PG_CONFIG) --pkglibdir)/planted.so\n", ""},
		{"a file outside the install", "\tmkdir -p $(DESTDIR)" + outside + "\n\tcp ext.so $(DESTDIR)" + outside + "/\n", "outside " + install},
		{"a link", "\tmkdir -p " + stage + "\n\tln -s /etc/shadow " + stage + "/ext.so\n", "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(install, "lib", "ext.so"))
			src := filepath.Join(t.TempDir(), "ext")
			os.Mkdir(src, 0o755)
			os.WriteFile(filepath.Join(src, "Makefile"), []byte("all:\nclean:\ninstall:\n"+c.install), 0o644)
			os.WriteFile(filepath.Join(src, "ext.so"), []byte("\x7fELF not really"), 0o755)
			os.WriteFile(filepath.Join(src, "ext.control"), []byte("comment = 'x'\n"), 0o644)
			ctx := context.Background()
			if c.fail == "" {
				// The tree of the user who ran sudo: the copy built is
				// root's, handed to the build account.
				t.Setenv("SUDO_UID", "65534")
				if out, err := exec.Command("chown", "-R", "65534:65534", src).CombinedOutput(); err != nil {
					t.Fatalf("chown: %v %s", err, out)
				}
			}
			e, err := ReadExtension(ctx, b.Run, src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.BuildExtension(ctx, nil, e, "a", install, "fp", Options{NoCCache: true, Force: true})
			if c.fail != "" {
				if !errors.Is(err, ErrFailed) || exitcode.Code(err) != exitcode.Infra || !strings.Contains(err.Error(), c.fail) {
					t.Errorf("BuildExtension = %v, want exit 3 saying %q", err, c.fail)
				}
				if _, err := os.Lstat(filepath.Join(outside, "ext.so")); err == nil {
					t.Errorf("the file outside was installed")
				}
				if _, err := os.Lstat(filepath.Join(install, "lib", "ext.so")); err == nil {
					t.Errorf("the refused file was installed")
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildExtension: %v", err)
			}
			for path, mode := range map[string]fs.FileMode{filepath.Join(install, "lib", "ext.so"): 0o755, filepath.Join(install, "share", "extension", "ext.control"): 0o644} {
				fi, err := os.Lstat(path)
				if err != nil {
					t.Errorf("not installed: %v", err)
					continue
				}
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode() != mode {
					t.Errorf("%s: uid %d mode %v, want root's %v", path, st.Uid, fi.Mode(), mode)
				}
			}
			for _, in := range []string{install, other} {
				data, _ := os.ReadFile(filepath.Join(in, "bin", "pg_config"))
				if string(data) != strings.ReplaceAll(fakePgConfig, "PREFIX", in) {
					t.Errorf("the Makefile rewrote %s/bin/pg_config:\n%s", in, data)
				}
			}
			if exists(filepath.Join(install, "lib", "planted.so")) {
				t.Errorf("the Makefile wrote into the install itself")
			}
			if res.Info.CC != "cc" || !exists(ExtensionFile(install, "ext")) {
				t.Errorf("record %+v", res.Info)
			}
		})
	}
	checkSealed(t, install, "after its extension builds")
	checkSealed(t, other, "after another install's extension builds")
	if fi, err := os.Stat(b.extensionRoot()); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the extensions' root was handed over (%v)", err)
	}
}
