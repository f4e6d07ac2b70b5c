package testbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// A test holds the names of the cache it uses, each by an flock on
// CacheRoot/locks/NAME: shared while its servers run from the install,
// exclusive while it builds the name anew (a worktree and its install)
// or, owning it, lets abtest build or remove it. Making the worktree and
// checking the build take a second lock, NAME.build, for that time
// only. Tests of other names, and tests of one name that is built
// already, run beside each other: go test runs packages in parallel,
// and one lock on the whole cache made the eleven from-source tests of
// five packages run one after another (20 of the suite's 21 minutes).
//
// Locks are taken in one order: a name's, then its build lock; a test
// that owns a name (Own) owns it before it builds it. A lock converted
// between shared and exclusive is let go before it is taken again
// (flock(2)), so two tests that both convert do not wait for each other.

// held is one test's lock on one name. flock belongs to an open file,
// so a test has one file per name: a second one in the same process
// would wait for the first.
type held struct {
	f *os.File
	// exclusive: held exclusive now; owned: until the test ends.
	exclusive, owned bool
}

var (
	heldMu sync.Mutex
	byTest = map[testing.TB]map[string]*held{}
)

// hold takes name for t, exclusive or shared, converting a lock t holds
// already; an owned lock stays exclusive.
func hold(t testing.TB, name string, exclusive bool) *held {
	t.Helper()
	heldMu.Lock()
	names, ok := byTest[t]
	if !ok {
		names = map[string]*held{}
		byTest[t] = names
		t.Cleanup(func() { release(t) })
	}
	h := names[name]
	heldMu.Unlock()
	if h == nil {
		h = &held{f: lockFile(t, name)}
		heldMu.Lock()
		names[name] = h
		heldMu.Unlock()
	} else if h.owned || h.exclusive == exclusive {
		return h
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(h.f.Fd()), how); err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	h.exclusive = exclusive
	return h
}

func release(t testing.TB) {
	heldMu.Lock()
	names := byTest[t]
	delete(byTest, t)
	heldMu.Unlock()
	for _, h := range names {
		syscall.Flock(int(h.f.Fd()), syscall.LOCK_UN)
		h.f.Close()
	}
}

// lockBuild takes name's build lock and returns its release.
func lockBuild(t testing.TB, name string) (unlock func()) {
	t.Helper()
	f := lockFile(t, name+".build")
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// lockFile opens CacheRoot/locks/name.
func lockFile(t testing.TB, name string) *os.File {
	t.Helper()
	dir := filepath.Join(testenv.CacheRoot(t), "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Own holds names exclusive until the test ends: the test rebuilds them,
// or runs an abtest that may build or remove them. A name may stand for
// a group (the bisect chain's b-<sha> builds).
func Own(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		hold(t, name, true).owned = true
	}
}

// seedCCache gives an install root without a ccache directory the one
// `make demo` filled, when there is one. The demo builds the same trees
// as the tests (the source's base commit, alone and with the demo
// patch), and ccache's base_dir makes their objects hit here too, so
// `make test` after `make demo` on a new machine compiles PostgreSQL
// once, not twice.
func seedCCache(t testing.TB, installs string) {
	t.Helper()
	dst := filepath.Join(installs, ".ccache")
	if _, err := os.Lstat(dst); err == nil {
		return
	}
	home, _ := os.UserHomeDir()
	src := filepath.Join(config.DemoRoot(os.Getenv("ABTEST_DEMO_DIR"), os.Geteuid() == 0, home), "install", ".ccache")
	if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
		return
	}
	f, err := os.OpenFile(filepath.Join(testenv.CacheRoot(t), ".ccache-seed.lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return // seeded by another test meanwhile
	}
	if err := os.MkdirAll(installs, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".seed"
	os.RemoveAll(tmp)
	if out, err := exec.Command("cp", "-a", src, tmp).CombinedOutput(); err != nil {
		t.Fatalf("seeding ccache from %s: %v\n%s", src, err, out)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Lstat(dst); serr == nil {
			return // a build made its own meanwhile
		}
		t.Fatal(err)
	}
	t.Logf("ccache seeded from make demo's, %s", src)
}
