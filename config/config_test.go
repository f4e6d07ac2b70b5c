package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrecedence checks every layer against the one below it:
// defaults < file < local file < env < flags.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bench_config.toml"), `
source_dir = "/file/source"
worktrees_dir = "/file/worktrees"
install_dir = "/file/install"
data_dir = "~/file-data"
`)
	write(t, filepath.Join(dir, "bench_config.local.toml"), `
worktrees_dir = "/local/worktrees"
install_dir = "/local/install"
`)
	env := map[string]string{"PG_INSTALL_DIR": "/env/install", "BENCH_RESULTS_DIR": "/env/results", "PG_WORKTREES_DIR": "/env/worktrees"}
	l, err := Load(Options{
		Dir:       dir,
		Home:      "/home/u",
		Getenv:    func(k string) string { return env[k] },
		Overrides: []Override{{Key: "worktrees_dir", Flag: "--worktrees", Value: "/flag/worktrees"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		SourceDir:    "/file/source",      // file over default
		WorktreesDir: "/flag/worktrees",   // flag over env over local over file
		InstallDir:   "/env/install",      // env over local over file
		DataDir:      "/home/u/file-data", // ~ expanded
		ResultsDir:   "/env/results",      // env over default
		RunAs:        "",
	}
	want.StartTimeout = 60
	want.CCache = true
	want.Contrib = []string{}
	want.Installs = map[string]string{}
	if !reflect.DeepEqual(l.Config, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", l.Config, want)
	}
	for key, kind := range map[string]string{"source_dir": "file", "worktrees_dir": "flag", "install_dir": "env", "run_as": "default"} {
		if got := l.SourceOf(key).Kind; got != kind {
			t.Errorf("SourceOf(%s) = %s, want %s", key, got, kind)
		}
	}
	if got := l.SourceOf("install_dir").String(); got != "environment variable PG_INSTALL_DIR" {
		t.Errorf("SourceOf(install_dir) = %q", got)
	}
	if got := l.SourceOf("source_dir").String(); !strings.Contains(got, "bench_config.toml") {
		t.Errorf("SourceOf(source_dir) = %q, want the file", got)
	}
	if len(l.Files) != 2 {
		t.Errorf("Files = %v, want both files", l.Files)
	}
}

func TestDefaultsAndExplicitFile(t *testing.T) {
	l, err := Load(Options{Dir: t.TempDir(), Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, Default("/h")) || l.SourceDir != "/h/pg/source" || l.ResultsDir != "/h/pg/results" {
		t.Errorf("defaults = %+v", l.Config)
	}
	if got := l.SourceOf("source_dir").String(); !strings.Contains(got, "PG_SOURCE_DIR") {
		t.Errorf("a default's source should name its variable: %q", got)
	}

	other := t.TempDir()
	f := filepath.Join(other, "mine.toml")
	write(t, f, `source_dir = "/mine"`)
	write(t, filepath.Join(other, "bench_config.local.toml"), `data_dir = "/mine-local"`)
	cwd := t.TempDir()
	write(t, filepath.Join(cwd, "bench_config.toml"), `source_dir = "/ignored"`)
	l, err = Load(Options{File: f, Dir: cwd, Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	if l.SourceDir != "/mine" || l.DataDir != "/mine-local" {
		t.Errorf("--config: %+v", l.Config)
	}
	if _, err := Load(Options{File: filepath.Join(other, "nope.toml"), Home: "/h"}); err == nil {
		t.Error("a missing --config file is not an error")
	}
}

func TestBadFilesNameFileAndLine(t *testing.T) {
	for name, tc := range map[string]struct{ content, want string }{
		"unknown key": {"source_dir = \"/x\"\n\nsorce_dir = \"/y\"\n", `:3: unknown key "sorce_dir"`},
		"malformed":   {"source_dir = \"/x\"\ndata_dir = \n", ":2:"},
		"wrong type":  {"source_dir = 5\n", ":1:"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "bench_config.toml")
			write(t, f, tc.content)
			_, err := Load(Options{Dir: dir, Home: "/h"})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, f+tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, f+tc.want)
			}
		})
	}
}

// TestExampleInSync keeps bench_config.example.toml and Config in step:
// every key of the struct is documented there, with its default, and the
// file has no key the struct lacks.
func TestExampleInSync(t *testing.T) {
	path := filepath.Join("..", "bench_config.example.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The example must load cleanly and give the defaults.
	l, err := Load(Options{File: path, Dir: t.TempDir(), Home: "/h"})
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if !reflect.DeepEqual(l.Config, Default("/h")) {
		t.Errorf("example's values differ from Default:\n%+v\n%+v", l.Config, Default("/h"))
	}
	keyRE := regexp.MustCompile(`(?m)^([a-z_]+) *=`)
	tableRE := regexp.MustCompile(`(?m)^\[([a-z_]+)\]`)
	var inFile []string
	for _, m := range keyRE.FindAllStringSubmatch(string(data), -1) {
		inFile = append(inFile, m[1])
	}
	for _, m := range tableRE.FindAllStringSubmatch(string(data), -1) {
		inFile = append(inFile, m[1])
	}
	var keys []string
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if k := tomlKey(ct.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(inFile)
	sort.Strings(keys)
	if strings.Join(inFile, ",") != strings.Join(keys, ",") {
		t.Errorf("example keys %v, Config keys %v", inFile, keys)
	}
	// Every key has a comment above it.
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if (keyRE.MatchString(line) || tableRE.MatchString(line)) && (i == 0 || !strings.HasPrefix(lines[i-1], "#")) {
			t.Errorf("key on line %d has no comment: %s", i+1, line)
		}
	}
	for env, key := range EnvVars {
		if !strings.Contains(string(data), env) {
			t.Errorf("example does not mention %s (sets %s)", env, key)
		}
	}
}

func TestBadOverride(t *testing.T) {
	_, err := Load(Options{Dir: t.TempDir(), Home: "/h", Overrides: []Override{{Key: "nope", Flag: "--nope", Value: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "--nope") {
		t.Errorf("unknown override key: %v", err)
	}
}

func TestInstallsTable(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bench_config.toml"), "[installs]\npg15 = \"/usr/lib/postgresql/15\"\nmine = \"~/pg/x\"\n")
	l, err := Load(Options{Dir: dir, Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Installs["pg15"] != "/usr/lib/postgresql/15" || l.Installs["mine"] != "/h/pg/x" {
		t.Errorf("installs = %v", l.Installs)
	}
}

func TestNightlyExample(t *testing.T) {
	var axes []string
	for _, d := range results.Axes {
		if d.TOML != "" {
			axes = append(axes, d.TOML)
		}
	}
	n, err := LoadNightly(filepath.Join("..", "nightly.example.toml"), "/h", axes...)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultNightly("/h")
	want.WorktreesDir, want.InstallDir, want.DataDir = "/h/pg/nightly/worktrees", "/h/pg/nightly/install", "/h/pg/nightly/data"
	want.path = filepath.Join("..", "nightly.example.toml")
	want.ReuseFrom = []string{} // the example's reuse_from = []
	// The example's cpus, rates and conditions are [], its vars and
	// settings empty tables: given, none.
	for _, k := range []string{"cpus", "rates", "conditions", "vars", "settings"} {
		want.Matrix.Axes[k] = []string{}
	}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("example = %+v\nwant %+v", *n, want)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "n.toml")
	write(t, f, "branch = \"main\"\n\n[matrix]\nrepeats = 7\nworkload = [\"x\"]\n")
	if _, err := LoadNightly(f, "/h", axes...); err == nil || !strings.Contains(err.Error(), f+":5: unknown key \"matrix.workload\"") {
		t.Errorf("unknown key: %v", err)
	}
}

// TestNightlyPrecedence: a night's abtest configuration takes nightly.toml
// as its config file: over the defaults, under the environment and flags.
func TestNightlyPrecedence(t *testing.T) {
	f := filepath.Join(t.TempDir(), "n.toml")
	write(t, f, "source_dir = \"~/src\"\nroot = \"/n\"\ndata_dir = \"/n/d\"\nstore = \"~/nights.db\"\n")
	n, err := LoadNightly(f, "/h")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PG_DATA_DIR": "/env/data"}
	l, err := n.Loaded(func(k string) string { return env[k] }, []Override{{Key: "run_as", Flag: "--run-as", Value: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.SourceDir != "/h/src" || l.WorktreesDir != "/n/worktrees" || l.ResultsDir != "/n/runs" || l.DataDir != "/env/data" || l.RunAs != "bob" || l.Store != "/h/nights.db" {
		t.Errorf("loaded = %+v", l.Config)
	}
	if l.SourceOf("source_dir").Kind != "file" || l.SourceOf("data_dir").Kind != "env" || l.SourceOf("run_as").Kind != "flag" {
		t.Errorf("sources: %v %v %v", l.SourceOf("source_dir"), l.SourceOf("data_dir"), l.SourceOf("run_as"))
	}
}

// TestUseCaseDefaults: a use case's defaults (the demo's directories) are
// the lowest layer: the environment still wins over them.
func TestUseCaseDefaults(t *testing.T) {
	d := Default("/h")
	d.DataDir, d.ResultsDir = "/demo/data", "/demo/results"
	env := map[string]string{"BENCH_RESULTS_DIR": "/mine"}
	l, err := Load(Options{Dir: t.TempDir(), Home: "/h", Defaults: &d, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if l.DataDir != "/demo/data" || l.ResultsDir != "/mine" {
		t.Errorf("loaded = %+v", l.Config)
	}
}

// TestConfigDir: without Dir, bench_config.toml is looked up in
// $ABTEST_CONFIG_DIR, else in the working directory.
func TestConfigDir(t *testing.T) {
	wd, cd := t.TempDir(), t.TempDir()
	write(t, filepath.Join(wd, "bench_config.toml"), "data_dir = \"/from/wd\"\n")
	write(t, filepath.Join(cd, "bench_config.toml"), "data_dir = \"/from/configdir\"\n")
	getwd := func() (string, error) { return wd, nil }
	l, err := Load(Options{Home: "/h", Getwd: getwd, Getenv: func(string) string { return "" }})
	if err != nil || l.DataDir != "/from/wd" {
		t.Errorf("working directory: %v, %v", l, err)
	}
	l, err = Load(Options{Home: "/h", Getwd: getwd, Getenv: func(k string) string { return map[string]string{"ABTEST_CONFIG_DIR": cd}[k] }})
	if err != nil || l.DataDir != "/from/configdir" {
		t.Errorf("ABTEST_CONFIG_DIR: %v, %v", l, err)
	}
}
