package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/usage"
)

// readmeBlock is the first fenced sh block after heading in README.md.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if i := strings.Index(s, heading); i < 0 {
		t.Fatalf("README has no %q", heading)
	} else {
		s = s[i:]
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no sh block after %q", heading)
	}
	return strings.Split(strings.TrimSpace(m[1]), "\n")
}

// TestReadmeRecipe: the README starts with exactly the two set-up
// commands, and its "patch against master" recipe is at most six lines
// whose abtest commands, run verbatim (the real run as -n), plan the A/B
// run on a clone that has master and no base tag.
func TestReadmeRecipe(t *testing.T) {
	top := readmeBlock(t, "# abtest")
	if len(top) != 2 || !strings.HasPrefix(top[0], "make demo ") || !strings.HasPrefix(top[1], "make test ") {
		t.Errorf("README's first block: %q, want make demo and make test", top)
	}
	recipe := readmeBlock(t, "## A/B your patch against master on your clone")
	if len(recipe) > 6 {
		t.Errorf("recipe is %d lines, want at most 6", len(recipe))
	}
	env, repo := setup(t)
	if tags := testenv.Git(t, repo, "tag"); tags != "" {
		t.Fatalf("repo has tags %q", tags)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "my.patch"), []byte(aPatch), 0o644)
	t.Chdir(dir)
	env["BENCH_RESULTS_DIR"] = filepath.Join(dir, "results")
	ran := 0
	for _, line := range recipe {
		args := shellWords(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), env)
		if len(args) == 0 || args[0] != "abtest" {
			continue
		}
		if args[1] != "-n" {
			args = append([]string{"abtest", "-n"}, args[1:]...)
		}
		code, out, stderr := abtestIn(t, env, dir, args[1:]...)
		if code != 0 || !strings.Contains(out, "# plan: 64 cells") {
			t.Errorf("%s: exit %d, %s\n%s", line, code, stderr, out)
		}
		ran++
	}
	if ran == 0 {
		t.Error("the recipe runs no abtest command")
	}
	if _, err := os.Stat(env["BENCH_RESULTS_DIR"]); err == nil {
		t.Error("the dry run created the results directory")
	}
}

// TestReadmeOneScreen: the README stays a page (at most 10 KB), its
// command table has one line per row, each row's command is one abtest
// knows (its --help exits 0) and uses today's spellings, and every
// docs/ page it links exists.
func TestReadmeOneScreen(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if len(s) > 10*1024 {
		t.Errorf("README is %d bytes, want at most 10 KB: move the detail to docs/", len(s))
	}
	rows := regexp.MustCompile("(?m)^\\| `abtest ([^`]*)`").FindAllStringSubmatch(s, -1)
	if len(rows) < 12 {
		t.Fatalf("command table has %d rows", len(rows))
	}
	for _, r := range rows {
		var path []string
		for _, w := range strings.Fields(r[1]) {
			if _, ok := commands(t)[strings.Join(append(path, w), " ")]; !ok {
				break
			}
			path = append(path, w)
		}
		if len(path) == 0 && !strings.HasPrefix(r[1], "-n ") {
			t.Errorf("row %q names no command", r[1])
			continue
		}
		if code, _, stderr := abtest(t, nil, append(path, "--help")...); code != 0 {
			t.Errorf("abtest %s --help: exit %d %s", strings.Join(path, " "), code, stderr)
		}
		if _, notes := usage.Rewrite(strings.Fields(r[1])); len(notes) > 0 {
			t.Errorf("row %q uses an old spelling: %q", r[1], notes)
		}
	}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)]+)\)`).FindAllStringSubmatch(s, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil {
			t.Errorf("README links %s: %v", m[1], err)
		}
	}
	for _, anecdote := range []string{"2-core", "VM", " m 25 s"} {
		if strings.Contains(s, anecdote) {
			t.Errorf("README tells of a machine (%q): that belongs in docs/estimates.md", anecdote)
		}
	}
}
