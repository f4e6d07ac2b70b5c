// Package config is abtest's configuration: where the PostgreSQL source,
// worktrees, installs, data directories and results live, and the defaults
// of the commands that read it.
//
// Precedence, lowest first (Load applies it, and nothing else does):
//
//  1. Default(home): the built-in values, paths under ~/pg.
//  2. The config file: --config FILE, or bench_config.toml in the config
//     directory (the working directory, or $ABTEST_CONFIG_DIR) when it
//     exists.
//  3. bench_config.local.toml beside that file, when it exists: personal
//     overrides kept out of git.
//  4. The harness's environment variables (PG_SOURCE_DIR, PG_WORKTREES_DIR,
//     PG_INSTALL_DIR, PG_DATA_DIR, BENCH_RESULTS_DIR, ABTEST_RUN_AS).
//  5. Command-line flags, passed to Load as Overrides.
//
// bench_config.example.toml at the repository root documents every key; a
// test keeps it and Config in sync. An unknown key or malformed file is an
// error naming the file and line.
package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Config is abtest's configuration. Field tags name the TOML keys.
type Config struct {
	// SourceDir is the user's PostgreSQL clone that worktrees come from.
	SourceDir string `toml:"source_dir"`
	// WorktreesDir holds one checkout per name.
	WorktreesDir string `toml:"worktrees_dir"`
	// InstallDir holds one install prefix per name.
	InstallDir string `toml:"install_dir"`
	// DataDir holds one cluster data directory per name.
	DataDir string `toml:"data_dir"`
	// ResultsDir holds one directory per benchmark run.
	ResultsDir string `toml:"results_dir"`
	// Store is the results database: a postgres:// URL, or a SQLite
	// file; empty means results_dir/abtest.db.
	Store string `toml:"store"`
	// RunAs is the unprivileged account that runs PostgreSQL's server
	// programs when abtest runs as root; empty means "postgres".
	RunAs string `toml:"run_as"`
	// StartTimeout is how many seconds a cluster start waits for the
	// first successful connection.
	StartTimeout int `toml:"start_timeout"`
	// CCache uses ccache for builds when it is installed.
	CCache bool `toml:"ccache"`
	// Contrib lists contrib modules to install besides pg_stat_statements
	// (autotools trees; meson installs all of contrib).
	Contrib []string `toml:"contrib"`
	// Installs names prebuilt installations (e.g. a distribution's
	// /usr/lib/postgresql/15) usable as -w NAME without a build.
	Installs map[string]string `toml:"installs"`
}

// Default returns the built-in configuration for a user whose home
// directory is home.
func Default(home string) Config {
	return Config{
		SourceDir:    filepath.Join(home, "pg", "source"),
		WorktreesDir: filepath.Join(home, "pg", "worktrees"),
		InstallDir:   filepath.Join(home, "pg", "install"),
		DataDir:      filepath.Join(home, "pg", "data"),
		ResultsDir:   filepath.Join(home, "pg", "results"),
		RunAs:        "",
		StartTimeout: 60,
		CCache:       true,
		Contrib:      []string{},
		Installs:     map[string]string{},
	}
}

// EnvVars maps the environment variables abtest reads to config keys. The
// names are the bash harness's, so existing setups keep working.
var EnvVars = map[string]string{
	"PG_SOURCE_DIR":     "source_dir",
	"PG_WORKTREES_DIR":  "worktrees_dir",
	"PG_INSTALL_DIR":    "install_dir",
	"PG_DATA_DIR":       "data_dir",
	"BENCH_RESULTS_DIR": "results_dir",
	"ABTEST_RUN_AS":     "run_as",
}

// Source names where a key's value came from; errors use it to tell the
// user which variable, file or flag to change.
type Source struct {
	Kind string // "default", "file", "env", "flag"
	Name string // file path, variable name or flag name
}

func (s Source) String() string {
	switch s.Kind {
	case "env":
		return "environment variable " + s.Name
	case "flag":
		return "flag " + s.Name
	case "file":
		return "config file " + s.Name
	}
	return "the default (set " + s.Name + ")"
}

// Override is one command-line flag's value for a config key.
type Override struct {
	Key   string // TOML key, e.g. "source_dir"
	Flag  string // the flag as typed, e.g. "--source"
	Value string
}

// Options says where Load looks.
type Options struct {
	// File is --config FILE; empty means bench_config.toml in Dir.
	File string
	// Dir is the directory searched for bench_config.toml and
	// bench_config.local.toml when File is empty; when Dir is empty, it
	// is $ABTEST_CONFIG_DIR, else Getwd's.
	Dir   string
	Getwd func() (string, error)
	// Home expands a leading ~/ in paths and places the defaults.
	Home string
	// Getenv reads the environment; nil means no variables.
	Getenv func(string) string
	// Overrides are flag values, applied last.
	Overrides []Override
	// Defaults, when set, replaces Default(Home) as the lowest layer: a
	// use case's own defaults (the demo keeps its directories apart).
	Defaults *Config
}

// Loaded is a configuration and where each key's value came from.
type Loaded struct {
	Config
	// Files lists the files that were read, in order.
	Files   []string
	sources map[string]Source
}

// SourceOf returns where key's value came from.
func (l *Loaded) SourceOf(key string) Source {
	if s, ok := l.sources[key]; ok {
		return s
	}
	hint := ""
	for env, k := range EnvVars {
		if k == key {
			hint = env
		}
	}
	return Source{Kind: "default", Name: hint}
}

// Load builds the configuration by the precedence in the package doc.
func Load(o Options) (*Loaded, error) {
	if o.Dir == "" && o.Getenv != nil {
		o.Dir = o.Getenv("ABTEST_CONFIG_DIR")
	}
	if o.Dir == "" && o.Getwd != nil {
		wd, err := o.Getwd()
		if err != nil {
			return nil, err
		}
		o.Dir = wd
	}
	l := &Loaded{Config: Default(o.Home), sources: map[string]Source{}}
	if o.Defaults != nil {
		l.Config = *o.Defaults
	}
	main := o.File
	if main == "" {
		main = filepath.Join(o.Dir, "bench_config.toml")
		if _, err := os.Stat(main); errors.Is(err, os.ErrNotExist) {
			main = ""
		}
	} else if _, err := os.Stat(main); err != nil {
		return nil, fmt.Errorf("config file %s: %w", main, err)
	}
	local := ""
	if main != "" {
		local = filepath.Join(filepath.Dir(main), "bench_config.local.toml")
	} else {
		local = filepath.Join(o.Dir, "bench_config.local.toml")
	}
	if _, err := os.Stat(local); err != nil {
		local = ""
	}
	for _, f := range []string{main, local} {
		if f == "" {
			continue
		}
		keys, err := decodeFile(f, &l.Config)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			l.sources[k] = Source{Kind: "file", Name: f}
		}
		l.Files = append(l.Files, f)
	}
	if err := l.layerEnvAndFlags(o.Getenv, o.Overrides); err != nil {
		return nil, err
	}
	l.expandHome(o.Home)
	return l, nil
}

// layerEnvAndFlags applies the two top layers: the environment, then
// the flags.
func (l *Loaded) layerEnvAndFlags(getenv func(string) string, ov []Override) error {
	if getenv != nil {
		for _, e := range slices.Sorted(maps.Keys(EnvVars)) {
			if v := getenv(e); v != "" {
				if err := l.set(EnvVars[e], v); err != nil {
					return fmt.Errorf("environment variable %s: %w", e, err)
				}
				l.sources[EnvVars[e]] = Source{Kind: "env", Name: e}
			}
		}
	}
	for _, o := range ov {
		if err := l.set(o.Key, o.Value); err != nil {
			return fmt.Errorf("flag %s: %w", o.Flag, err)
		}
		l.sources[o.Key] = Source{Kind: "flag", Name: o.Flag}
	}
	return nil
}

// decodeFile decodes path into c, strictly, and returns the keys it set.
func decodeFile(path string, c *Config) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	d := toml.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	if err := d.Decode(c); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			e := sm.Errors[0]
			row, _ := e.Position()
			return nil, fmt.Errorf("config file %s:%d: unknown key %q (see bench_config.example.toml for the valid keys)", path, row, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("config file %s:%d: %s", path, row, de.Error())
		}
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return slices.Collect(maps.Keys(raw)), nil
}

func tomlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return k
}

// set assigns a string value to the field whose TOML key is key.
func (l *Loaded) set(key, value string) error {
	v := reflect.ValueOf(&l.Config).Elem()
	for i := range v.NumField() {
		if tomlKey(v.Type().Field(i)) != key {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(value)
		case reflect.Int:
			n, err := strconv.Atoi(value)
			if err != nil {
				return fmt.Errorf("%s: want an integer, got %q", key, value)
			}
			f.SetInt(int64(n))
		case reflect.Bool:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("%s: want true or false, got %q", key, value)
			}
			f.SetBool(b)
		default:
			return fmt.Errorf("%s: cannot be set from a string", key)
		}
		return nil
	}
	return fmt.Errorf("unknown config key %q", key)
}

// expandHome turns a leading ~/ of every path key into home.
func (l *Loaded) expandHome(home string) {
	for _, p := range []*string{&l.SourceDir, &l.WorktreesDir, &l.InstallDir, &l.DataDir, &l.ResultsDir, &l.Store} {
		*p = expand(*p, home)
	}
	for k, v := range l.Installs {
		l.Installs[k] = expand(v, home)
	}
}

func expand(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// DemoRoot is where `abtest demo` keeps worktrees, installs, clusters and
// results: dir ($ABTEST_DEMO_DIR) when set, else /var/tmp/abtest-demo
// for root (outside its private home, so that the postgres account can
// reach the installs) and ~/.cache/abtest-demo for anyone else.
func DemoRoot(dir string, asRoot bool, home string) string {
	switch {
	case dir != "":
		return dir
	case asRoot:
		return "/var/tmp/abtest-demo"
	}
	return filepath.Join(home, ".cache", "abtest-demo")
}
