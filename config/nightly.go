package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Nightly is nightly.toml: what `abtest nightly` tracks, how it measures
// and what it keeps. nightly.example.toml documents every key.
type Nightly struct {
	// SourceDir is the clone fetched and built every night.
	SourceDir string `toml:"source_dir"`
	// Remote and Branch name the tracked branch: Remote/Branch.
	Remote string `toml:"remote"`
	Branch string `toml:"branch"`
	// Baseline is "last" (the previous night's head) or a fixed ref.
	Baseline string `toml:"baseline"`
	// Root holds history.jsonl, runs/, the lock and, unless set below,
	// the worktrees, installs and clusters.
	Root         string `toml:"root"`
	WorktreesDir string `toml:"worktrees_dir"`
	InstallDir   string `toml:"install_dir"`
	DataDir      string `toml:"data_dir"`
	// Keep is how many result directories are kept.
	Keep int `toml:"keep"`
	// TrendNights is how many nights the trend section shows.
	TrendNights int `toml:"trend_nights"`
	// RunAs is the server's account when running as root.
	RunAs string `toml:"run_as"`
	// Store is the results database the nights are recorded in and
	// read from; empty means root/runs/abtest.db.
	Store string `toml:"store"`
	// ReuseFrom names more installs a night may use instead of building
	// a tree they hold already (build.Options.ReuseFrom): name prefixes.
	ReuseFrom []string      `toml:"reuse_from"`
	Matrix    NightlyMatrix `toml:"matrix"`
	Gate      NightlyGate   `toml:"gate"`

	path, home string
}

// NightlyMatrix is the matrix run every night.
type NightlyMatrix struct {
	Workloads []string `toml:"workloads"`
	PgssMax   []int    `toml:"pgss_max"`
	Repeats   int      `toml:"repeats"`
	Duration  int      `toml:"duration"`
	Warmup    int      `toml:"warmup"`
	Build     string   `toml:"build"`
	// Instructions adds instruction cells (matrix --instructions):
	// instructions_per_tx, gated exactly.
	Instructions bool `toml:"instructions"`
	// Axes are the values of the axes' keys LoadNightly was given
	// (clients, cpus, rates, vars, settings, conditions…) as their
	// flags' text (axisText); nightly parses them.
	Axes map[string][]string `toml:"-"`
}

// NightlyGate decides a regression.
type NightlyGate struct {
	Alpha      float64            `toml:"alpha"`
	Thresholds map[string]float64 `toml:"thresholds"`
	// AllowUnknown (matrix --allow-unknown) makes a night whose primary
	// could not be answered exit 0; it is still recorded as unanswered,
	// never ok.
	AllowUnknown bool `toml:"allow_unknown"`
}

// DefaultNightly returns the defaults for a user whose home is home.
func DefaultNightly(home string) Nightly {
	return Nightly{
		SourceDir: filepath.Join(home, "pg", "source"), Remote: "origin", Branch: "master", Baseline: "last",
		Root: filepath.Join(home, "pg", "nightly"), Keep: 14, TrendNights: 30,
		Matrix: NightlyMatrix{Workloads: []string{"select1", "churn"}, Axes: map[string][]string{"clients": {"16", "64"}}, PgssMax: []int{5000},
			Repeats: 12, Duration: 30, Warmup: 5, Build: "release"},
		Gate: NightlyGate{Alpha: 0.01, Thresholds: map[string]float64{}},
		home: home,
	}
}

// LoadNightly reads a nightly.toml strictly (unknown keys are errors
// naming file and line) over the defaults, and expands ~/. axes name
// the keys of [matrix] that are axes: config knows none itself.
func LoadNightly(path, home string, axes ...string) (*Nightly, error) {
	n := DefaultNightly(home)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nightly config %s: %w", path, err)
	}
	d := toml.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	err = d.Decode(&n)
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) {
		sm.Errors = slices.DeleteFunc(sm.Errors, func(e toml.DecodeError) bool {
			return len(e.Key()) > 1 && e.Key()[0] == "matrix" && slices.Contains(axes, e.Key()[1])
		})
		if len(sm.Errors) == 0 {
			err = nil // axes' keys: read below
		}
	}
	if err != nil {
		if sm != nil {
			row, _ := sm.Errors[0].Position()
			return nil, fmt.Errorf("nightly config %s:%d: unknown key %q (see nightly.example.toml)", path, row, strings.Join(sm.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("nightly config %s:%d: %s", path, row, de.Error())
		}
		return nil, fmt.Errorf("nightly config %s: %w", path, err)
	}
	var raw struct {
		Matrix map[string]any `toml:"matrix"`
	}
	_ = toml.Unmarshal(data, &raw) // decoded above
	for _, k := range axes {
		if v, ok := raw.Matrix[k]; ok {
			if n.Matrix.Axes[k], err = axisText(v, true); err != nil {
				return nil, fmt.Errorf("nightly config %s: [matrix] %s: %w", path, k, err)
			}
		}
	}
	for _, p := range []*string{&n.SourceDir, &n.Root, &n.WorktreesDir, &n.InstallDir, &n.DataDir} {
		*p = expand(*p, home)
	}
	if n.WorktreesDir == "" {
		n.WorktreesDir = filepath.Join(n.Root, "worktrees")
	}
	if n.InstallDir == "" {
		n.InstallDir = filepath.Join(n.Root, "install")
	}
	if n.DataDir == "" {
		n.DataDir = filepath.Join(n.Root, "data")
	}
	for _, k := range [][3]string{{"remote", n.Remote, "origin"}, {"branch", n.Branch, "master"}, {"baseline", n.Baseline, "last"}} {
		if strings.TrimSpace(k[1]) == "" {
			return nil, fmt.Errorf("nightly config %s: %s is empty: set %s = %q (the night tracks remote/branch)", path, k[0], k[0], k[2])
		}
	}
	if n.Keep < 1 {
		return nil, fmt.Errorf("nightly config %s: keep = %d: keep at least 1 result directory", path, n.Keep)
	}
	n.path = path
	return &n, nil
}

// axisText is an axis' TOML value as its flag's text: a list's items, a
// value alone, or, where table, a table's entries NAME=V1,V2 in name
// order (a value with a comma in double quotes). The axis checks them.
func axisText(v any, table bool) ([]string, error) {
	out := []string{} // an empty list is given, over the default
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			s, err := axisText(x, false)
			if err != nil || len(s) != 1 {
				return nil, fmt.Errorf("%v: want strings or numbers in the list", x)
			}
			out = append(out, s[0])
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			items, err := axisText(v[k], false)
			if !table || err != nil {
				return nil, fmt.Errorf("%s: want a list of strings or numbers, NAME = [V1, V2]", k)
			}
			for i, s := range items {
				if strings.Contains(s, ",") {
					items[i] = `"` + s + `"`
				}
			}
			out = append(out, k+"="+strings.Join(items, ","))
		}
	default:
		out = append(out, fmt.Sprint(v))
	}
	return out, nil
}

// Loaded is the abtest configuration a night runs with, by the package's
// precedence with nightly.toml as the config file: the defaults, then
// its source, directories and run_as, then the environment, then flags.
// Results go under root/runs.
func (n *Nightly) Loaded(getenv func(string) string, ov []Override) (*Loaded, error) {
	l := &Loaded{Config: Default(n.home), sources: map[string]Source{}}
	if n.path != "" {
		l.Files = []string{n.path}
	}
	file := Source{Kind: "file", Name: n.path}
	for key, v := range map[string]string{
		"source_dir": n.SourceDir, "worktrees_dir": n.WorktreesDir, "install_dir": n.InstallDir,
		"data_dir": n.DataDir, "results_dir": filepath.Join(n.Root, "runs"), "run_as": n.RunAs, "store": n.Store,
	} {
		if v != "" {
			if err := l.set(key, v); err != nil {
				return nil, err
			}
			l.sources[key] = file
		}
	}
	if err := l.layerEnvAndFlags(getenv, ov); err != nil {
		return nil, err
	}
	l.expandHome(n.home)
	return l, nil
}
