package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// nobody is the hostile local user of these tests.
const nobody = 65534

// hostileRoot is a root of mode 1777 that nobody shares with abtest, as a
// shared benchmark host's /var/tmp would be; its victim is a file of
// root's outside it. It needs root (to plant nobody's files).
func hostileRoot(t *testing.T) (root, victim string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("plants another account's files: needs root")
	}
	base := t.TempDir()
	root = filepath.Join(base, "shared")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim = filepath.Join(base, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, victim
}

// plantLink makes name in dir a link to target, owned by nobody.
func plantLink(t *testing.T, dir, name, target string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return p
}

func victimIntact(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's\n" {
		t.Fatalf("the victim was written: %q, %v", b, err)
	}
}

// TestWritesRefusePlantedLinks: every way the door writes a file refuses
// a link nobody planted at its name, and the victim is untouched.
func TestWritesRefusePlantedLinks(t *testing.T) {
	root, victim := hostileRoot(t)
	p := plantLink(t, root, "x.log", victim)
	// (The kernel's fs.protected_regular may refuse before O_NOFOLLOW
	// does: any error will do, the victim must stay.)
	if f, err := Append(p, 0o644); err == nil {
		f.Close()
		t.Error("Append through a link succeeded")
	}
	if err := WriteFile(p, []byte("x"), 0o644); err == nil {
		t.Error("WriteFile through a link succeeded")
	}
	if f, err := Create(p, 0o644); err == nil {
		f.Close()
		t.Error("Create over a link succeeded")
	}
	victimIntact(t, victim)

	// A hard link to root's file is root's file: one link only.
	hard := filepath.Join(root, "hard.log")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(hard, []byte("x"), 0o644); !errors.Is(err, ErrUnsafe) {
		t.Errorf("WriteFile through a hard link: %v", err)
	}
	victimIntact(t, victim)

	// A file nobody planted at the name is not reused.
	planted := filepath.Join(root, "planted.log")
	if err := os.WriteFile(planted, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if f, err := Append(planted, 0o644); err == nil {
		f.Close()
		t.Error("Append reused nobody's file")
	}

	// WriteAtomic replaces the link itself, never its target.
	if err := WriteAtomic(p, []byte("new\n"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	victimIntact(t, victim)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("WriteAtomic left %v, %v", fi.Mode(), err)
	}
}

// TestMkdirAllRefusesOthersDirectories: a link or a directory nobody
// planted on the way is refused, not walked; a directory of abtest's own
// left 0777 is adopted with its group and other write bits cleared.
func TestMkdirAllRefusesOthersDirectories(t *testing.T) {
	root, _ := hostileRoot(t)
	target := t.TempDir()
	plantLink(t, root, "viaLink", target)
	if err := MkdirAll(filepath.Join(root, "viaLink", "sub"), 0o755); !errors.Is(err, ErrUntrusted) {
		t.Errorf("MkdirAll through nobody's link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "sub")); err == nil {
		t.Error("a directory was made through the link")
	}
	theirs := filepath.Join(root, "theirs")
	if err := os.Mkdir(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(theirs, 0o777)
	if err := os.Chown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(theirs, "sub"), 0o755); !errors.Is(err, ErrUntrusted) {
		t.Errorf("MkdirAll into nobody's directory: %v", err)
	}
	if err := MkdirAll(theirs, 0o755); !errors.Is(err, ErrUnsafe) {
		t.Errorf("MkdirAll adopted nobody's directory: %v", err)
	}
	mine := filepath.Join(root, "mine")
	if err := os.Mkdir(mine, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(mine, 0o777)
	if err := MkdirAll(filepath.Join(mine, "a"), 0o755); !errors.Is(err, ErrUntrusted) {
		t.Errorf("MkdirAll beneath a directory of mode 0777: %v", err)
	}
	if err := MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(mine, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{mine, filepath.Join(mine, "a", "b")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, %v; want 0755", d, fi.Mode(), err)
		}
	}
}

// TestMayExec: root runs a program only when it, the directories above it
// and the links on the way are root's and writable by nobody else.
func TestMayExec(t *testing.T) {
	root, _ := hostileRoot(t)
	if err := MayExec("/bin/sh"); err != nil {
		t.Errorf("/bin/sh: %v", err)
	}
	own := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(own, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MayExec(own); err != nil {
		t.Errorf("root's own tool in a private directory: %v", err)
	}
	// nobody's program; root's program in nobody's directory; root's
	// program in a 0777 directory; a link of nobody's to /bin/sh.
	theirs := filepath.Join(root, "theirs")
	os.WriteFile(theirs, []byte("#!/bin/sh\n"), 0o755)
	os.Chown(theirs, nobody, nobody)
	dir := filepath.Join(root, "bin")
	os.Mkdir(dir, 0o755)
	os.Chown(dir, nobody, nobody)
	inTheirDir := filepath.Join(dir, "pg_config")
	os.WriteFile(inTheirDir, []byte("#!/bin/sh\n"), 0o755)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "postgres")
	os.WriteFile(inOpen, []byte("#!/bin/sh\n"), 0o755)
	groupWritable := filepath.Join(t.TempDir(), "gw")
	os.WriteFile(groupWritable, []byte("#!/bin/sh\n"), 0o775)
	os.Chmod(groupWritable, 0o775)
	link := plantLink(t, root, "sh", "/bin/sh")
	for _, p := range []string{theirs, inTheirDir, inOpen, groupWritable, link} {
		if err := MayExec(p); !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: %v; want ErrUntrusted", p, err)
		}
	}
}

// TestInput: an input is a regular file of bounded size, and as root one
// that nobody can write.
func TestInput(t *testing.T) {
	root, _ := hostileRoot(t)
	good := filepath.Join(t.TempDir(), "w.sql")
	os.WriteFile(good, []byte("SELECT 1;\n"), 0o644)
	if b, err := Input(good); err != nil || string(b) != "SELECT 1;\n" {
		t.Errorf("root's own input: %q, %v", b, err)
	}
	if _, err := Input("/dev/zero"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("/dev/zero: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.sql")
	f, _ := os.Create(big)
	f.Truncate(MaxInput + 1)
	f.Close()
	if _, err := Input(big); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a file over MaxInput: %v", err)
	}
	theirs := filepath.Join(root, "theirs.sql")
	os.WriteFile(theirs, []byte("COPY x TO PROGRAM 'id';\n"), 0o666)
	os.Chmod(theirs, 0o666)
	os.Chown(theirs, nobody, nobody)
	writable := filepath.Join(t.TempDir(), "ww.sql")
	os.WriteFile(writable, nil, 0o666)
	os.Chmod(writable, 0o666)
	link := plantLink(t, root, "link.sql", good)
	for _, p := range []string{theirs, writable, link} {
		if _, err := Input(p); !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: %v; want ErrUntrusted", p, err)
		}
	}
	t.Setenv("SUDO_UID", "65534")
	if _, err := Input(theirs); !errors.Is(err, ErrUntrusted) {
		t.Errorf("the sudo caller's file writable by others: %v", err)
	}
	os.Chmod(theirs, 0o644)
	if _, err := Input(theirs); err != nil {
		t.Errorf("the sudo caller's own file: %v", err)
	}
}

// TestNoLinkOnTheWay: a file is opened beneath descriptors, so a link
// another account put in place of a directory on the way (the server
// account's cell directory, where it can rename entries) is never
// followed, while root's own links are.
func TestNoLinkOnTheWay(t *testing.T) {
	root, _ := hostileRoot(t)
	victimDir := t.TempDir()
	cell := filepath.Join(root, "cell")
	if err := os.Mkdir(cell, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(cell, nobody, nobody)
	plantLink(t, cell, "warm-up", victimDir)
	for _, open := range []func(string) (*os.File, error){
		func(p string) (*os.File, error) { return Append(p, 0o644) },
		func(p string) (*os.File, error) { return Create(p, 0o644) },
	} {
		if f, err := open(filepath.Join(cell, "warm-up", "pgbench.log")); err == nil {
			f.Close()
			t.Error("a file was opened through nobody's link on the way")
		} else if !errors.Is(err, ErrUnsafe) {
			t.Errorf("through nobody's link: %v, want ErrUnsafe", err)
		}
	}
	if ents, _ := os.ReadDir(victimDir); len(ents) != 0 {
		t.Errorf("root wrote into the link's target: %v", ents)
	}
	// Root's own link on the way is followed.
	real := filepath.Join(t.TempDir(), "real")
	os.Mkdir(real, 0o755)
	mine := filepath.Join(t.TempDir(), "mine")
	if err := os.Symlink(real, mine); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(mine, "x"), []byte("ok"), 0o644); err != nil {
		t.Fatalf("through root's own link: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(real, "x")); err != nil || string(b) != "ok" {
		t.Errorf("through root's own link: %q, %v", b, err)
	}
}
