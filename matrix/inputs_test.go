package matrix

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/worktree"
)

// TestPrepareRefusesOthersInputs (issue 39, items 4 and 5): as root,
// Prepare refuses in one line (exit 2), before anything exists, every
// input another account (nobody, uid 65534) owns or can write: setup SQL
// and workload files (run as superuser), a condition script, a patch
// (-k a=REF+PATCH), an extension's tree (its Makefile and any file in
// it), an install (-k a=install:DIR), a --pgbench; and setup SQL that
// is not a regular file (/dev/zero).
func TestPrepareRefusesOthersInputs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("inputs are checked only when abtest is root")
	}
	t.Setenv("SUDO_UID", "")
	deps, pg := prebuiltDeps(t)
	repo := testenv.NewRepo(t, map[string]string{"a.c": "int a;\n"})
	deps.Worktrees = &worktree.Manager{Source: repo, Root: filepath.Join(testenv.SharedTempDir(t), "wt"), Run: deps.Proc}
	dir := testenv.SharedTempDir(t)
	file := func(name, body string, perm os.FileMode, uid int) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, perm)
		os.Chown(path, uid, uid)
		return path
	}
	const nobody = 65534
	base := Request{
		Commits:   []Commit{{Label: "a", Install: pg}, {Label: "b", Install: pg}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1, Duration: time.Second, Protocol: "simple",
	}
	file("ext-ok/Makefile", "all:\n", 0o644, 0)
	theirsTree := filepath.Dir(file("ext-theirs/Makefile", "all:\n", 0o644, nobody))
	os.Chown(theirsTree, nobody, nobody)
	file("ext-planted/Makefile", "all:\n", 0o644, 0)
	file("ext-planted/src/x.c", "int x;\n", 0o644, nobody)
	file("ext-open/Makefile", "all:\n", 0o666, 0)
	install := filepath.Dir(filepath.Dir(file("install/bin/postgres", "#!/bin/sh\n", 0o755, nobody)))
	diff := "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a;\n+int a = 2;\n"

	ctx := context.Background()
	if _, err := Prepare(ctx, deps, func() Request {
		r := base
		r.Extensions = []string{filepath.Join(dir, "ext-ok")}
		r.SetupSQL = file("ok.sql", "SELECT 1;\n", 0o644, 0)
		r.Commits = []Commit{{Label: "a", Ref: "HEAD", Patches: []string{file("ok.diff", diff, 0o644, 0)}}, {Label: "b", Install: pg}}
		return r
	}()); err != nil {
		t.Fatalf("root's own inputs: %v", err)
	}
	for _, c := range []struct {
		what   string
		change func(r *Request)
		want   string
	}{
		{"nobody's setup SQL", func(r *Request) { r.SetupSQL = file("theirs.sql", "SELECT 1;\n", 0o644, nobody) }, "owned by uid 65534"},
		{"setup SQL of mode 0666", func(r *Request) { r.SetupSQL = file("open.sql", "SELECT 1;\n", 0o666, 0) }, "writable by group or others"},
		{"setup SQL /dev/zero", func(r *Request) { r.SetupSQL = "/dev/zero" }, "not a regular file"},
		{"nobody's workload file", func(r *Request) { r.Workloads = []string{"file:" + file("w.sql", "SELECT 1;\n", 0o644, nobody)} }, "owned by uid 65534"},
		{"a condition script of mode 0777", func(r *Request) { r.Axes = plumbing("condition", "file:"+file("c.sh", "#!/bin/sh\n", 0o777, 0)) }, "writable by group or others"},
		{"nobody's patch", func(r *Request) {
			r.Commits = []Commit{{Label: "a", Ref: "HEAD", Patches: []string{file("theirs.diff", diff, 0o644, nobody)}}, {Label: "b", Install: pg}}
		}, "owned by uid 65534"},
		{"nobody's extension tree", func(r *Request) { r.Extensions = []string{theirsTree} }, "owned by uid 65534"},
		{"nobody's file in root's extension tree", func(r *Request) { r.Extensions = []string{filepath.Join(dir, "ext-planted")} }, "owned by uid 65534"},
		{"an extension's Makefile of mode 0666", func(r *Request) { r.Extensions = []string{filepath.Join(dir, "ext-open")} }, "writable by group or others"},
		{"nobody's --pgbench", func(r *Request) { r.Pgbench = file("pgbench", "#!/bin/sh\n", 0o755, nobody) }, "owned by uid 65534"},
		{"nobody's install", func(r *Request) { r.Commits = []Commit{{Label: "a", Install: install}, {Label: "b", Install: pg}} }, "owned by uid 65534"},
	} {
		r := base
		c.change(&r)
		_, err := Prepare(ctx, deps, r)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line, exit 2, saying %q", c.what, err, c.want)
		}
	}
}
