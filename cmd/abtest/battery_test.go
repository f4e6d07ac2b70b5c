package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// The hostile battery (issue 39): abtest runs as root with its data and
// results roots at mode 1777, as on a shared benchmark host, and the
// local user nobody plants what it can before each run. Whatever abtest
// does, no file of root's may change, nothing nobody wrote may run, and
// nobody may not reach a server. The battery counts its cases and says
// how many held.

const nobodyUID = 65534

// batteryRoots makes a fresh set of roots, data and results of mode 1777.
func batteryRoots(t *testing.T) map[string]string {
	t.Helper()
	base := sharedDir(t)
	env := map[string]string{
		"PG_DATA_DIR":       filepath.Join(base, "data"),
		"PG_INSTALL_DIR":    filepath.Join(base, "install"),
		"PG_WORKTREES_DIR":  filepath.Join(base, "wt"),
		"PG_SOURCE_DIR":     filepath.Join(base, "src"),
		"BENCH_RESULTS_DIR": filepath.Join(base, "results"),
	}
	for _, k := range []string{"PG_DATA_DIR", "BENCH_RESULTS_DIR", "PG_INSTALL_DIR"} {
		if err := os.Mkdir(env[k], 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(env[k], 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { abtest(t, env, "switch", "--worktree", "h", "--stop") })
	return env
}

func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "abtest-battery-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// batteryRun is what each case runs: for the data root a cluster
// started and stopped by switch, and for both roots a matrix of two arms
// on one install, a cell each (open loop at 500 tx/s for a second), with
// its report and store.
func batteryRun(t *testing.T, env map[string]string, install string, withSwitch bool) []int {
	t.Helper()
	runs := [][]string{{"matrix", "-k", "a=install:" + install + ",b=install:" + install, "-w", "select1", "-R", "500", "-d", "1", "-r", "1", "-c", "1",
		"-o", filepath.Join(env["BENCH_RESULTS_DIR"], "run")}}
	if withSwitch {
		runs = append([][]string{{"switch", "--worktree", "h", "--install", install}, {"switch", "--worktree", "h", "--stop"}}, runs...)
	}
	var codes []int
	for _, args := range runs {
		code, _, _ := abtest(t, env, args...)
		codes = append(codes, code)
	}
	return codes
}

// victim is a file and a directory of root's that a planted link points
// at; intact says whether either changed.
type victim struct{ file, dir string }

func newVictim(t *testing.T) victim {
	t.Helper()
	dir := t.TempDir()
	v := victim{file: filepath.Join(dir, "shadow"), dir: filepath.Join(dir, "etc")}
	if err := os.WriteFile(v.file, []byte("root:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(v.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v victim) intact() error {
	b, err := os.ReadFile(v.file)
	if err != nil || string(b) != "root:secret\n" {
		return fmt.Errorf("root's file changed: %q, %v", b, err)
	}
	if fi, err := os.Stat(v.file); err != nil || fi.Mode().Perm() != 0o600 || ownerOf(fi) != 0 {
		return fmt.Errorf("root's file changed its mode or owner: %v", fi.Mode())
	}
	if ents, err := os.ReadDir(v.dir); err != nil || len(ents) > 0 {
		return fmt.Errorf("root's directory got %d entries (%v)", len(ents), err)
	}
	return nil
}

// plant makes path a link of nobody's to target.
func plant(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
}

// entry is one name abtest makes in a shared root, and whether it is a
// directory.
type entry struct {
	root, name string
	dir        bool
}

// plantedEntries are the entries abtest makes in the shared roots
// (learned from a clean run) and those it makes only for a moment.
func plantedEntries(t *testing.T, install string) []entry {
	t.Helper()
	env := batteryRoots(t)
	if codes := batteryRun(t, env, install, true); slices.ContainsFunc(codes, func(c int) bool { return c != 0 }) {
		t.Fatalf("the clean run: exits %v", codes)
	}
	list := []entry{{"PG_DATA_DIR", ".h.initdb", true}, {"PG_DATA_DIR", ".h.initdb-pw", true}, {"PG_DATA_DIR", ".m-a.initdb", true},
		{"PG_DATA_DIR", "h.initdb.log", false}, {"PG_DATA_DIR", "m-a.initdb.log", false},
		{"BENCH_RESULTS_DIR", "abtest.db-journal", false}, {"BENCH_RESULTS_DIR", "abtest.db-wal", false}}
	for _, root := range []string{"PG_DATA_DIR", "BENCH_RESULTS_DIR"} {
		ents, err := os.ReadDir(env[root])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !slices.ContainsFunc(list, func(x entry) bool { return x.root == root && x.name == e.Name() }) {
				list = append(list, entry{root, e.Name(), e.IsDir()})
			}
		}
	}
	return list
}

// TestHostileBattery: for every entry abtest makes in a root others can
// write, a link nobody planted there to root's file (or directory, for a
// directory's entry); then the inputs and installs nobody can offer, and
// TCP. It logs the count of cases.
func TestHostileBattery(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("plants nobody's files: needs root")
	}
	install := testenv.PGInstall(t)
	testenv.ServerUser(t)
	testenv.RequireTools(t, "setpriv", "cp")
	var mu sync.Mutex
	cases, held := 0, 0
	check := func(t *testing.T, name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		cases++
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		held++
	}
	t.Run("links", func(t *testing.T) {
		for _, e := range plantedEntries(t, install) {
			t.Run(e.name, func(t *testing.T) {
				t.Parallel()
				env := batteryRoots(t)
				v := newVictim(t)
				target := v.file
				if e.dir {
					target = v.dir
				}
				plant(t, filepath.Join(env[e.root], e.name), target)
				codes := batteryRun(t, env, install, e.root == "PG_DATA_DIR")
				check(t, fmt.Sprintf("a link at %s/%s to root's %s (exits %v)", filepath.Base(env[e.root]), e.name, filepath.Base(target), codes), v.intact())
			})
		}
	})
	t.Run("code", func(t *testing.T) { batteryCode(t, install, func(name string, err error) { check(t, name, err) }) })
	t.Logf("battery: %d cases, %d held", cases, held)
}

// batteryCode: code or SQL of nobody's offered to abtest as root never
// runs: a workload file, setup SQL, a condition script, an install
// (`-k a=install:DIR`) and binaries planted where switch looks for an
// install; /dev/zero as a workload is refused before it is read.
func batteryCode(t *testing.T, install string, check func(string, error)) {
	env := batteryRoots(t)
	dir := sharedDir(t)
	os.Chmod(dir, 0o777)
	canary := filepath.Join(dir, "canary")
	owned := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.Chown(p, nobodyUID, nobodyUID)
		return p
	}
	touch := "#!/bin/sh\ntouch " + canary + "\n"
	wl := owned("w.sql", "\\shell touch "+canary+"\nSELECT 1;\n", 0o666)
	setup := owned("setup.sql", "COPY (SELECT 1) TO PROGRAM 'touch "+canary+"';\n", 0o644)
	cond := owned("cond.sh", touch, 0o777)
	foreign := filepath.Join(dir, "foreign")
	os.MkdirAll(filepath.Join(foreign, "bin"), 0o755)
	for _, b := range []string{"postgres", "pg_ctl", "initdb", "pg_config", "pgbench"} {
		p := filepath.Join(foreign, "bin", b)
		os.WriteFile(p, []byte(touch), 0o755)
		os.Chown(p, nobodyUID, nobodyUID)
	}
	os.Chown(filepath.Join(foreign, "bin"), nobodyUID, nobodyUID)
	os.Chown(foreign, nobodyUID, nobodyUID)
	// Binaries nobody planted where switch -w pi finds its install.
	pi := filepath.Join(env["PG_INSTALL_DIR"], "pi")
	if err := exec.Command("cp", "-a", foreign, pi).Run(); err != nil {
		t.Fatal(err)
	}
	matrix := func(extra ...string) []string {
		return append([]string{"matrix", "-k", "a=install:" + install + ",b=install:" + install, "-R", "500", "-d", "1", "-r", "1", "-c", "1"}, extra...)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"a workload file of nobody's, mode 0666", matrix("-w", "file:"+wl)},
		{"setup SQL of nobody's", matrix("-w", "select1", "--setup-sql", setup)},
		{"a condition script of nobody's, mode 0777", matrix("-w", "select1", "--condition", "file:"+cond)},
		{"an install of nobody's", []string{"matrix", "-k", "a=install:" + foreign + ",b=install:" + install, "-w", "select1", "-R", "500", "-d", "1", "-r", "1", "-c", "1"}},
		{"binaries nobody planted in the install root", []string{"switch", "--worktree", "pi"}},
		{"/dev/zero as a workload", matrix("-w", "file:/dev/zero")},
	} {
		code, _, stderr := abtest(t, env, c.args...)
		var err error
		if _, serr := os.Stat(canary); serr == nil {
			err = fmt.Errorf("nobody's code ran (exit %d)", code)
			os.Remove(canary)
		} else if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			err = fmt.Errorf("exit %d, want 2 with one line: %s", code, stderr)
		}
		check(c.name, err)
	}
	// TCP: a cluster listening on 127.0.0.1 refuses nobody without the
	// password.
	code, _, stderr := abtest(t, env, "switch", "--worktree", "h", "--install", install, "--listen", "127.0.0.1", "-p", "auto")
	if code != 0 {
		t.Fatalf("switch --listen: exit %d: %s", code, stderr)
	}
	envsh, _ := os.ReadFile(filepath.Join(env["PG_DATA_DIR"], "h.env.sh"))
	port := ""
	for line := range strings.Lines(string(envsh)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export PGPORT="); ok {
			port = strings.Trim(v, "'\"")
		}
	}
	psql := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		filepath.Join(install, "bin", "psql"), "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-d", "postgres", "-w", "-c", "SELECT 1")
	psql.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	out, perr := psql.CombinedOutput()
	var err error
	if perr == nil || !bytes.Contains(out, []byte("password")) {
		err = fmt.Errorf("nobody's psql -h 127.0.0.1 -p %s: %v: %s", port, perr, out)
	}
	check("nobody over TCP without the password", err)
}

func ownerOf(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
