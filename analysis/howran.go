package analysis

// How this ran (issue 40): what made the experiment beside the code —
// each server as it ran (version, build, data checksums, the initdb
// options it was given), the extensions built into it, the libraries
// preloaded, the setup SQL and the one pgbench that drove every server.
// plan.json has all of it, servers.json and the records what each server
// was; the report names it so that a reader need not open them.

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// HowRan is what made the experiment beside its code.
type HowRan struct {
	Servers    []ServerRan    `json:"servers"`
	Extensions []ExtensionRan `json:"extensions,omitempty"`
	// Preload are the libraries every cluster preloaded beside
	// pg_stat_statements (--preload).
	Preload []string `json:"preload,omitempty"`
	// SetupSQL is the file run before a cluster's cells whenever its settings, preloads or extensions changed (--setup-sql) and
	// its sha256 when the plan was made.
	SetupSQL       string `json:"setup_sql,omitempty"`
	SetupSQLSHA256 string `json:"setup_sql_sha256,omitempty"`
	// Pgbench are the pgbench binaries the cells name (one in a run of
	// this abtest), with their versions where known.
	Pgbench []PgbenchRan `json:"pgbench,omitempty"`
}

// ServerRan is one commit's server.
type ServerRan struct {
	Commit  string `json:"commit"`
	Version string `json:"version"`
	// Build is the build's name and type ("demo-base, release"), or the
	// prebuilt installation; Install the directory the server ran from
	// (its postmaster's binary), when a cell recorded it.
	Build   string `json:"build"`
	Install string `json:"install,omitempty"`
	// Checksums is the server's data_checksums ("on", "off"; "" when
	// servers.json is missing).
	Checksums string `json:"data_checksums,omitempty"`
	// Initdb are the options its initdb was given beyond abtest's own;
	// InitdbRecorded false: the run recorded only those asked for.
	Initdb         []string `json:"initdb"`
	InitdbRecorded bool     `json:"initdb_recorded"`
}

// ExtensionRan is an extension built into the builds.
type ExtensionRan struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	SHA  string `json:"sha,omitempty"`
	Tree string `json:"tree_sha256,omitempty"`
	// Builds are its builds' fingerprints, "commit fingerprint" in the
	// plan's order of commits.
	Builds []string `json:"builds,omitempty"`
}

// PgbenchRan is a pgbench that drove cells.
type PgbenchRan struct {
	Path string `json:"path"`
	// Version is the version of the server built beside it (the same
	// install), "" when it is not one of the run's.
	Version string `json:"version,omitempty"`
	Cells   int    `json:"cells"`
}

// howRan gathers HowRan from the plan, servers.json and the records.
func (r *Report) howRan() HowRan {
	p := r.Plan
	o := p.Options
	h := HowRan{Preload: o.Preload, SetupSQL: o.SetupSQL, SetupSQLSHA256: o.SetupSQLSHA256}
	installs := map[string]string{} // commit → install dir, from its cells
	for i := range r.records {
		if s := r.records[i].Server; s != nil && s.Exe != "" && installs[r.records[i].Commit] == "" {
			installs[r.records[i].Commit] = filepath.Dir(filepath.Dir(strings.TrimSuffix(s.Exe, " (deleted)")))
		}
	}
	for _, c := range p.Commits {
		sv := ServerRan{Commit: c.Label, Version: c.Version, Build: c.Build, Install: installs[c.Label]}
		if c.BuildType != "" {
			sv.Build += ", " + c.BuildType
		}
		if c.Install != "" {
			sv.Build, sv.Install = "prebuilt", c.Install
		}
		if s, ok := r.servers[c.Label]; ok {
			sv.Version = cmp.Or(s.Version, sv.Version)
			sv.Checksums = s.Settings["data_checksums"]
			sv.Initdb, sv.InitdbRecorded = s.Initdb()
		} else {
			sv.Initdb = o.InitdbOpts
		}
		h.Servers = append(h.Servers, sv)
		h.Extensions = addExtensions(h.Extensions, c)
	}
	for _, dir := range o.Extensions {
		if !slices.ContainsFunc(h.Extensions, func(e ExtensionRan) bool { return e.Dir == dir }) {
			h.Extensions = append(h.Extensions, ExtensionRan{Name: filepath.Base(dir), Dir: dir})
		}
	}
	h.Pgbench = r.pgbenches(installs)
	return h
}

// addExtensions adds commit c's extensions to exts, one entry per
// source tree, with c's build fingerprint.
func addExtensions(exts []ExtensionRan, c results.Commit) []ExtensionRan {
	for _, e := range c.Extensions {
		i := slices.IndexFunc(exts, func(x ExtensionRan) bool { return x.Dir == e.Dir && x.Name == e.Name })
		if i < 0 {
			exts = append(exts, ExtensionRan{Name: e.Name, Dir: e.Dir, SHA: e.SHA, Tree: e.Tree})
			i = len(exts) - 1
		}
		exts[i].Builds = append(exts[i].Builds, c.Label+" "+text.Short(e.Fingerprint))
	}
	return exts
}

// pgbenches are the cells' pgbench binaries, each with the version of
// the run's server installed beside it.
func (r *Report) pgbenches(installs map[string]string) []PgbenchRan {
	var out []PgbenchRan
	for i := range r.records {
		rec := &r.records[i]
		if rec.Pgbench == "" {
			continue
		}
		k := slices.IndexFunc(out, func(pb PgbenchRan) bool { return pb.Path == rec.Pgbench })
		if k < 0 {
			out = append(out, PgbenchRan{Path: rec.Pgbench})
			k = len(out) - 1
		}
		out[k].Cells++
	}
	for k := range out {
		bin := filepath.Dir(out[k].Path)
		for _, c := range r.Plan.Commits {
			dir := cmp.Or(installs[c.Label], c.Install)
			if dir != "" && filepath.Join(dir, "bin") == bin {
				out[k].Version = cmp.Or(r.servers[c.Label].Version, c.Version)
				break
			}
		}
	}
	return out
}

// howRanBlocks are the How this ran section.
func (r *Report) howRanBlocks() []Block {
	var items []Item
	for _, l := range r.howRan().lines() {
		items = append(items, Item{Text: plain(l)})
	}
	return []Block{&Heading{2, "How this ran"}, &List{items}}
}

// lines are the section's lines, as plain text.
func (h HowRan) lines() []string {
	var out []string
	for _, s := range h.Servers {
		l := fmt.Sprintf("%s: %s, build %s", s.Commit, text.OrDash(shortVersion(s.Version)), text.OrDash(s.Build))
		if s.Install != "" {
			l += " (" + s.Install + ")"
		}
		if s.Checksums != "" {
			l += "; data checksums " + s.Checksums
		}
		switch {
		case len(s.Initdb) == 0 && s.InitdbRecorded:
			l += "; initdb given no options beyond abtest's"
		case len(s.Initdb) == 0:
			l += "; no initdb options asked beyond abtest's"
		case s.InitdbRecorded:
			l += "; initdb given " + strings.Join(s.Initdb, " ")
		default:
			l += "; initdb options asked " + strings.Join(s.Initdb, " ") + " (what initdb was given was not recorded)"
		}
		out = append(out, l)
	}
	for _, e := range h.Extensions {
		l := fmt.Sprintf("extension %s: source %s", e.Name, e.Dir)
		if e.SHA != "" {
			l += " at commit " + text.Short(e.SHA)
		}
		if e.Tree != "" {
			l += ", tree sha256 " + text.Short(e.Tree)
		}
		if len(e.Builds) == 0 {
			l += "; no build recorded"
		} else {
			l += "; fingerprint of its build for " + strings.Join(e.Builds, ", ")
		}
		out = append(out, l)
	}
	if len(h.Preload) > 0 {
		out = append(out, "preloaded: "+strings.Join(h.Preload, ", ")+" (beside pg_stat_statements)")
	}
	if h.SetupSQL != "" {
		out = append(out, fmt.Sprintf("setup SQL: %s (sha256 %s), run before the cells of a cluster whenever its settings, preloads or extensions changed", h.SetupSQL, text.OrDash(text.Short(h.SetupSQLSHA256))))
	}
	for _, pb := range h.Pgbench {
		v := "version not recorded: not one of the run's installs"
		if pb.Version != "" {
			v = shortVersion(pb.Version)
		}
		out = append(out, fmt.Sprintf("pgbench: %s (%s), %s", pb.Path, v, text.Count(pb.Cells, "cell")))
	}
	return out
}

// shortVersion is `postgres --version` as a reader names it:
// "PostgreSQL 15.18".
func shortVersion(v string) string {
	return strings.Replace(v, "postgres (PostgreSQL) ", "PostgreSQL ", 1)
}
