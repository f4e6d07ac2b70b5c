package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/text"
)

// history makes a repository with five commits on master, a branch, tags
// and a remote-tracking branch; it returns the repo and the shas, oldest
// first.
func history(t *testing.T) (string, []string) {
	t.Helper()
	repo := testenv.NewRepo(t, map[string]string{"src/a.c": "int a = 0;\n", "README": "readme\n"})
	shas := []string{testenv.Git(t, repo, "rev-parse", "HEAD")}
	for i := 1; i < 5; i++ {
		shas = append(shas, testenv.Commit(t, repo, fmt.Sprintf("commit %d", i), map[string]string{"src/a.c": fmt.Sprintf("int a = %d;\n", i)}))
	}
	testenv.Git(t, repo, "branch", "feature", shas[2])
	testenv.Git(t, repo, "tag", "-a", "-m", "release 17", "REL_17_0", shas[3])
	testenv.Git(t, repo, "tag", "v1", shas[1])
	testenv.Git(t, repo, "update-ref", "refs/remotes/origin/dev", shas[0])
	return repo, shas
}

func manager(t *testing.T, source string) *Manager {
	return &Manager{Source: source, Root: filepath.Join(t.TempDir(), "worktrees"), Run: &proc.Runner{}}
}

func TestResolveRefForms(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	for _, tc := range []struct{ ref, want string }{
		{"master", shas[4]},
		{"HEAD", shas[4]},
		{"feature", shas[2]},
		{"refs/heads/feature", shas[2]},
		{"origin/dev", shas[0]},
		{"REL_17_0", shas[3]},
		{"v1", shas[1]},
		{shas[2], shas[2]},
		{shas[2][:7], shas[2]},
		{strings.ToUpper(shas[2][:9]), shas[2]},
		{"HEAD~3", shas[1]},
		{"master~1", shas[3]},
		{"REL_17_0~1", shas[2]},
		{"HEAD^", shas[3]},
	} {
		c, err := m.Resolve(tc.ref)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.ref, err)
			continue
		}
		if c.SHA != tc.want {
			t.Errorf("Resolve(%q) = %s, want %s", tc.ref, c.SHA, tc.want)
		}
	}
	for _, bad := range []string{"nosuchref", "HEAD~99", "", "deadbeef"} {
		_, err := m.Resolve(bad)
		if !errors.Is(err, ErrUnknownRef) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Resolve(%q) = %v, want ErrUnknownRef with exit 2", bad, err)
		}
	}
}

func TestResolveAmbiguousShortSHA(t *testing.T) {
	repo := testenv.NewRepo(t, map[string]string{"f": "x\n"})
	// fast-import makes hundreds of commits in a moment; among 1 000
	// commits several pairs share their first four hex digits.
	var stream strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&stream, "commit refs/heads/many\ncommitter T <t@e> %d +0000\ndata <<EOF\nc%d\nEOF\n\n", 1700000000+i, i)
	}
	if _, err := testenv.GitInput(repo, stream.String(), "fast-import", "--quiet"); err != nil {
		t.Fatal(err)
	}
	byPrefix := map[string][]string{}
	for _, sha := range strings.Fields(testenv.Git(t, repo, "rev-list", "many")) {
		byPrefix[sha[:4]] = append(byPrefix[sha[:4]], sha)
	}
	prefix := ""
	for p, s := range byPrefix {
		if len(s) > 1 && len(testenv.Git(t, repo, "rev-parse", "--disambiguate="+p)) > 0 {
			prefix = p
			break
		}
	}
	if prefix == "" {
		t.Fatal("no two commits share a 4-digit prefix; the test needs more commits")
	}
	m := manager(t, repo)
	_, err := m.Resolve(prefix)
	if !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("Resolve(%q) = %v, want ErrAmbiguous", prefix, err)
	}
	for _, sha := range byPrefix[prefix] {
		if !strings.Contains(err.Error(), text.Short(sha)) {
			t.Errorf("error %q does not list candidate %s", err, text.Short(sha))
		}
	}
	// One more digit than needed resolves it.
	full := byPrefix[prefix][0]
	n := 5
	for ; n < 40; n++ {
		unique := true
		for _, other := range byPrefix[prefix][1:] {
			if strings.HasPrefix(other, full[:n]) {
				unique = false
			}
		}
		if unique {
			break
		}
	}
	if c, err := m.Resolve(full[:n]); err != nil || c.SHA != full {
		t.Errorf("Resolve(%q) = %v, %v; want %s", full[:n], c.SHA, err, full)
	}
}

func TestSwitchCreatesMovesAndIsIdempotent(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()

	res, err := m.Switch(ctx, "lru", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != "created" || res.Commit.SHA != shas[1] {
		t.Fatalf("Switch = %+v, want created at %s", res, shas[1])
	}
	dir := filepath.Join(m.Root, "lru")
	// A real checkout sharing the source's objects: .git is a file
	// pointing into the source repository, and git works inside.
	if fi, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || fi.IsDir() {
		t.Fatalf(".git in worktree: %v, dir=%v; want a gitdir file", err, fi != nil && fi.IsDir())
	}
	common := testenv.Git(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if want, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git")); common != want {
		t.Errorf("git common dir = %s, want %s (objects shared)", common, want)
	}
	if got := testenv.Git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("git status in a fresh worktree = %q, want clean (provenance must be ignored)", got)
	}
	if got := testenv.Git(t, dir, "log", "-1", "--format=%H"); got != shas[1] {
		t.Errorf("git log in worktree = %s, want %s", got, shas[1])
	}
	if got := testenv.Git(t, dir, "diff", "HEAD~1", "--stat"); !strings.Contains(got, "src/a.c") {
		t.Errorf("git diff in worktree = %q", got)
	}
	prov, err := ReadProvenance(dir)
	if err != nil {
		t.Fatal(err)
	}
	if prov.SHA != shas[1] || prov.Ref != "v1" || prov.Source != repo || prov.Dirty {
		t.Errorf("provenance = %+v", prov)
	}

	res, err = m.Switch(ctx, "lru", shas[1][:8])
	if err != nil || res.Action != "unchanged" {
		t.Fatalf("same commit again: %+v, %v; want unchanged", res, err)
	}

	res, err = m.Switch(ctx, "lru", "REL_17_0")
	if err != nil || res.Action != "moved" || res.From != shas[1] {
		t.Fatalf("move: %+v, %v", res, err)
	}
	if got := testenv.Git(t, dir, "rev-parse", "HEAD"); got != shas[3] {
		t.Errorf("HEAD after move = %s, want %s", got, shas[3])
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "src/a.c")); string(data) != "int a = 3;\n" {
		t.Errorf("src/a.c after move = %q", data)
	}
	if prov, _ := ReadProvenance(dir); prov.SHA != shas[3] || prov.Ref != "REL_17_0" {
		t.Errorf("provenance after move = %+v", prov)
	}

	// Uncommitted changes block a move instead of being carried along.
	if err := os.WriteFile(filepath.Join(dir, "src/a.c"), []byte("local edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Switch(ctx, "lru", "master"); !errors.Is(err, ErrDirty) {
		t.Errorf("move of a dirty worktree = %v, want ErrDirty", err)
	}
	if info, err := m.Info(ctx, "lru"); err != nil || !info.Dirty {
		t.Errorf("Info of an edited worktree = %+v, %v; want dirty", info, err)
	}
}

func TestSwitchDryRunChangesNothing(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	var trace strings.Builder
	m.Run = &proc.Runner{DryRun: true, Trace: &trace}
	if _, err := m.Switch(context.Background(), "x", "feature"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run created %s", m.Root)
	}
	if !strings.Contains(trace.String(), "worktree add --quiet --detach "+filepath.Join(m.Root, "x")) {
		t.Errorf("dry-run trace lacks the git worktree add line:\n%s", trace.String())
	}
	if got := testenv.Git(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("dry run registered a worktree:\n%s", got)
	}
}

// seriesPatch returns a two-message git format-patch mbox made on a clone
// of repo at base: the first message edits src/a.c, the second edits it
// again and adds a file.
func seriesPatch(t *testing.T, repo, base string) string {
	t.Helper()
	clone := t.TempDir()
	testenv.Git(t, clone, "clone", "-q", repo, ".")
	testenv.Git(t, clone, "checkout", "-q", "--detach", base)
	testenv.Commit(t, clone, "lru: first step\n\nBody of the first.", map[string]string{"src/a.c": "int a = 100;\n"})
	testenv.Commit(t, clone, "lru: second step", map[string]string{"src/a.c": "int a = 200;\n", "src/new.c": "int n;\n"})
	mbox := testenv.Git(t, clone, "format-patch", "--stdout", "HEAD~2")
	path := filepath.Join(t.TempDir(), "v3-0001-lru.mbox")
	if err := os.WriteFile(path, []byte(mbox+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestApplyMboxSeries(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "lru", "master"); err != nil {
		t.Fatal(err)
	}
	mbox := seriesPatch(t, repo, shas[4])
	applied, err := m.Apply(ctx, "lru", []string{mbox})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(m.Root, "lru")
	if len(applied) != 1 || len(applied[0].Commits) != 2 || applied[0].Subject != "lru: first step" {
		t.Fatalf("applied = %+v", applied)
	}
	if got := testenv.Git(t, dir, "log", "--format=%s|%an", shas[4]+"..HEAD"); got != "lru: second step|Test\nlru: first step|Test" {
		t.Errorf("log after am = %q", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "src/a.c")); string(data) != "int a = 200;\n" {
		t.Errorf("src/a.c = %q", data)
	}
	if got := testenv.Git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("status after patches = %q, want clean", got)
	}
	prov, _ := ReadProvenance(dir)
	if prov.SHA != shas[4] || len(prov.Patches) != 1 || len(prov.Patches[0].SHA256) != 64 || prov.Dirty {
		t.Errorf("provenance = %+v", prov)
	}
}

func TestApplyPlainDiffsInOrder(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "p", "master"); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	p1 := writeFile(t, filepath.Join(tmp, "1.diff"), "--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1 @@\n-int a = 4;\n+int a = 5;\n")
	p2 := writeFile(t, filepath.Join(tmp, "2.diff"), "diff --git a/src/a.c b/src/a.c\n--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1,2 @@\n int a = 5;\n+int b = 6;\n")
	applied, err := m.Apply(ctx, "p", []string{p1, p2})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 2 || len(applied[0].Commits) != 1 || len(applied[1].Commits) != 1 || applied[0].Commits[0] == applied[1].Commits[0] {
		t.Fatalf("applied = %+v", applied)
	}
	dir := filepath.Join(m.Root, "p")
	if data, _ := os.ReadFile(filepath.Join(dir, "src/a.c")); string(data) != "int a = 5;\nint b = 6;\n" {
		t.Errorf("src/a.c = %q", data)
	}
}

// TestApplyAgainSameSHA: one base and the same patches make one sha in
// two worktrees applied a second apart (and so one build fingerprint),
// for plain diffs and for a mail series: the commits are dated as the
// base is, not now.
func TestApplyAgainSameSHA(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	plain := writeFile(t, filepath.Join(t.TempDir(), "1.diff"), "--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1 @@\n-int a = 4;\n+int a = 5;\n")
	mbox := seriesPatch(t, repo, shas[4])
	for k, patch := range []string{plain, mbox} {
		var heads []string
		for i, name := range []string{"p", "q"} {
			name += fmt.Sprint(k)
			if i > 0 {
				time.Sleep(1100 * time.Millisecond) // git dates are in seconds
			}
			if _, err := m.Switch(ctx, name, shas[4]); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Apply(ctx, name, []string{patch}); err != nil {
				t.Fatal(err)
			}
			heads = append(heads, testenv.Git(t, filepath.Join(m.Root, name), "rev-parse", "HEAD"))
		}
		if heads[0] != heads[1] {
			t.Errorf("%s applied twice on %s: HEAD %s then %s, want one sha", filepath.Base(patch), text.Short(shas[4]), heads[0], heads[1])
		}
	}
}

func TestApplyFailureLeavesWorktreeAsItWas(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "p", "master"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(m.Root, "p")
	tmp := t.TempDir()
	good := writeFile(t, filepath.Join(tmp, "good.diff"), "--- a/README\n+++ b/README\n@@ -1 +1 @@\n-readme\n+changed\n")
	bad := writeFile(t, filepath.Join(tmp, "bad.diff"), "--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1 @@\n-int a = 42;\n+int a = 43;\n")
	// An mbox that fails in its second message exercises git am's abort.
	mbox := seriesPatch(t, repo, shas[1])

	for _, files := range [][]string{{good, bad}, {good, mbox}} {
		_, err := m.Apply(ctx, "p", files)
		if !errors.Is(err, ErrPatch) || exitcode.Code(err) != exitcode.Usage {
			t.Fatalf("Apply(%v) = %v, want ErrPatch with exit 2", files, err)
		}
		if !strings.Contains(err.Error(), "patch 2/2") || !strings.Contains(err.Error(), "src/a.c:1") {
			t.Errorf("error %q does not name the patch and the failed hunk", err)
		}
		if got := testenv.Git(t, dir, "rev-parse", "HEAD"); got != shas[4] {
			t.Errorf("HEAD after failed apply = %s, want %s", got, shas[4])
		}
		if got := testenv.Git(t, dir, "status", "--porcelain"); got != "" {
			t.Errorf("git status after failed apply = %q, want clean", got)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "README")); string(data) != "readme\n" {
			t.Errorf("README after failed apply = %q", data)
		}
		if _, err := os.Stat(filepath.Join(testenv.Git(t, dir, "rev-parse", "--git-dir"), "rebase-apply")); err == nil {
			t.Error("git am left its state behind")
		}
		if prov, _ := ReadProvenance(dir); len(prov.Patches) != 0 {
			t.Errorf("provenance records patches after a failure: %+v", prov.Patches)
		}
	}
}

func TestApplyBadInput(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Apply(ctx, "nothere", []string{"x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Apply to a missing worktree = %v, want ErrNotFound", err)
	}
	if _, err := m.Switch(ctx, "p", "master"); err != nil {
		t.Fatal(err)
	}
	notDiff := writeFile(t, filepath.Join(t.TempDir(), "notes.txt"), "just text\n")
	for _, f := range []string{"/no/such/file.patch", notDiff} {
		if _, err := m.Apply(ctx, "p", []string{f}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Apply(%s) = %v, want exit 2", f, err)
		}
	}
}

func TestNamesRefused(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	for _, name := range []string{"../x", "a/b", "", strings.Repeat("n", 65), ".", "..", "a b", "-leading", "--force", ".git", ".GIT"} {
		_, err := m.Switch(context.Background(), name, "master")
		if !errors.Is(err, safepath.ErrBadName) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Switch(name %q) = %v, want ErrBadName, exit 2", name, err)
		}
	}
	if _, err := os.Stat(m.Root); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused name created the worktrees root")
	}
	if _, err := m.Switch(context.Background(), strings.Repeat("n", 64), "master"); err != nil {
		t.Errorf("a 64-character name: %v", err)
	}
}

func TestRemove(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "gone", "master"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.Root, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Error("worktree directory still there")
	}
	if got := testenv.Git(t, repo, "worktree", "list"); strings.Contains(got, "gone") {
		t.Errorf("git still lists the worktree:\n%s", got)
	}
	if err := m.Remove(ctx, "gone"); err != nil {
		t.Errorf("removing a missing worktree: %v", err)
	}
}

// TestSwitchAfterDirectoryRemovedByHand: a worktree whose directory was
// deleted (or its root moved aside) while the source repository still
// registers it is created again; git alone refuses ("missing but
// already registered worktree").
func TestSwitchAfterDirectoryRemovedByHand(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "w", "master"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(m.Root); err != nil {
		t.Fatal(err)
	}
	res, err := m.Switch(ctx, "w", "feature")
	if err != nil {
		t.Fatalf("switch after the directory was removed: %v", err)
	}
	if res.Action != "created" || res.Commit.SHA != shas[2] {
		t.Errorf("result %+v, want created at %s", res, shas[2])
	}
	if got := testenv.Git(t, filepath.Join(m.Root, "w"), "rev-parse", "HEAD"); got != shas[2] {
		t.Errorf("worktree HEAD %s, want %s", got, shas[2])
	}
}

func TestRemoveRefusesSymlinkOutsideRoot(t *testing.T) {
	repo, _ := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "victim", "master"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(m.Root, "victim")
	elsewhere := t.TempDir()
	precious := writeFile(t, filepath.Join(elsewhere, "precious"), "keep me\n")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	err := m.Remove(ctx, "victim")
	if !errors.Is(err, safepath.ErrOutside) || exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("Remove of a symlinked worktree = %v, want ErrOutside, exit 2", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("file outside the roots was removed: %v", err)
	}
	if _, err := os.Lstat(dir); err != nil {
		t.Errorf("the symlink itself was removed: %v", err)
	}
}

func TestSourceErrorsNameTheSetting(t *testing.T) {
	notRepo := t.TempDir()
	for _, tc := range []struct{ source, want string }{
		{filepath.Join(notRepo, "missing"), "does not exist"},
		{notRepo, "is not a git repository"},
	} {
		m := manager(t, tc.source)
		m.SourceFrom = "environment variable PG_SOURCE_DIR"
		_, err := m.Switch(context.Background(), "x", "master")
		if !errors.Is(err, ErrNoSource) || exitcode.Code(err) != exitcode.Usage {
			t.Fatalf("source %s: %v, want ErrNoSource exit 2", tc.source, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "PG_SOURCE_DIR") || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line saying %q and naming PG_SOURCE_DIR", msg, tc.want)
		}
	}
}

// TestResolveRefusesWrongRefs: forms go-git would resolve to some commit
// without a word are refused with exit 2: a short sha under 4 digits,
// @{upstream} without an upstream, REF:path, a name that is a branch and
// a tag of different commits (naming both).
func TestResolveRefusesWrongRefs(t *testing.T) {
	repo, shas := history(t)
	testenv.Git(t, repo, "tag", "feature", shas[1]) // branch feature is shas[2]
	m := manager(t, repo)
	for ref, want := range map[string]string{
		"0":                 "at least 4 hex digits",
		"a":                 "at least 4 hex digits",
		shas[3][:3]:         "at least 4 hex digits",
		"master@{upstream}": "no upstream",
		"HEAD:nonexistent":  "REF:PATH",
		"HEAD:src/a.c":      "REF:PATH",
		"feature":           "refs/heads/feature (" + text.Short(shas[2]) + ") and the tag refs/tags/feature (" + text.Short(shas[1]) + ")",
	} {
		c, err := m.Resolve(ref)
		if exitcode.Code(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %v, %v; want exit 2 with %q", ref, c.SHA, err, want)
		}
	}
	for ref, want := range map[string]string{"heads/feature": shas[2], "tags/feature": shas[1], "master@{0}": shas[4]} {
		if c, err := m.Resolve(ref); err != nil || c.SHA != want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", ref, c.SHA, err, want)
		}
	}
	// With an upstream (a local one: the branch feature), @{upstream}
	// is that branch.
	testenv.Git(t, repo, "config", "branch.master.remote", ".")
	testenv.Git(t, repo, "config", "branch.master.merge", "refs/heads/feature")
	if c, err := m.Resolve("master@{upstream}"); err != nil || c.SHA != shas[2] {
		t.Errorf("Resolve(master@{upstream}) = %s, %v; want %s", c.SHA, err, shas[2])
	}
}

// TestResetKeepsTheBuild: Reset puts a patched worktree with an
// uncommitted change back at a commit, patches, change and untracked
// files gone, in place: the build directory stays, and a file the reset
// did not change keeps its modification time (make compiles nothing
// for it). A worktree that does not exist is created.
func TestResetKeepsTheBuild(t *testing.T) {
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Reset(ctx, "lru", shas[4]); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(m.Root, "lru")
	if _, err := m.Apply(ctx, "lru", []string{seriesPatch(t, repo, shas[4])}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, BuildDir), 0o755)
	obj := writeFile(t, filepath.Join(dir, BuildDir, "a.o"), "object\n")
	writeFile(t, filepath.Join(dir, "stray.c"), "int s;\n")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "README"), old, old)
	testenv.Git(t, dir, "update-index", "-q", "--refresh")      // as after a checkout
	writeFile(t, filepath.Join(dir, "src/a.c"), "int a = 7;\n") // uncommitted
	res, err := m.Reset(ctx, "lru", shas[3])
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != "reset" || res.Commit.SHA != shas[3] {
		t.Errorf("result = %+v", res)
	}
	if got := testenv.Git(t, dir, "rev-parse", "HEAD"); got != shas[3] {
		t.Errorf("HEAD = %s, want %s", got, shas[3])
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "src/a.c")); string(data) != "int a = 3;\n" {
		t.Errorf("src/a.c = %q", data)
	}
	for _, f := range []string{"src/new.c", "stray.c"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left after the reset", f)
		}
	}
	if _, err := os.Stat(obj); err != nil {
		t.Errorf("the build directory went: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "README")); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("README, which the reset did not change, was written again: %v", err)
	}
	prov, err := ReadProvenance(dir)
	if err != nil || prov.SHA != shas[3] || len(prov.Patches) != 0 || prov.Dirty {
		t.Errorf("provenance = %+v, %v", prov, err)
	}
}

// TestApplyRefusesOthersPatches (issue 39, item 4): as root, a patch
// another account owns or can write, or one that is not a regular file,
// is refused in one line (exit 2) before the worktree changes: a patch
// is code, its build scripts run and so does what it compiles.
func TestApplyRefusesOthersPatches(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("inputs are checked only when abtest is root")
	}
	t.Setenv("SUDO_UID", "")
	repo, shas := history(t)
	m := manager(t, repo)
	ctx := context.Background()
	if _, err := m.Switch(ctx, "p", "master"); err != nil {
		t.Fatal(err)
	}
	const diff = "--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1 @@\n-int a = 4;\n+int a = 5;\n"
	tmp := t.TempDir()
	theirs := writeFile(t, filepath.Join(tmp, "theirs.diff"), diff)
	os.Chown(theirs, 65534, 65534)
	open := writeFile(t, filepath.Join(tmp, "open.diff"), diff)
	os.Chmod(open, 0o666)
	for _, c := range []struct{ file, want string }{
		{theirs, "owned by uid 65534"},
		{open, "writable by group or others"},
		{"/dev/zero", "not a regular file"},
	} {
		for what, err := range map[string]error{"CheckPatches": CheckPatches([]string{c.file}), "Apply": func() error { _, err := m.Apply(ctx, "p", []string{c.file}); return err }()} {
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s(%s) = %v, want one line, exit 2, saying %q", what, c.file, err, c.want)
			}
		}
	}
	if got := testenv.Git(t, filepath.Join(m.Root, "p"), "rev-parse", "HEAD"); got != shas[4] {
		t.Errorf("HEAD after refused patches = %s, want %s", got, shas[4])
	}
	// Root's own, or the sudo caller's, applies.
	t.Setenv("SUDO_UID", "65534")
	if _, err := m.Apply(ctx, "p", []string{theirs}); err != nil {
		t.Errorf("the sudo caller's patch: %v", err)
	}
}
