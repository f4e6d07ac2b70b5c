package analysis

// Servers (issue 26): where the commits' servers differ besides their
// code — initdb options and settings after start — so that a comparison
// across versions says what else it compared, and warns where a default
// that changes performance differs (PG 18's initdb turns data checksums
// on; PG 18 has io_method).

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// ServerDiff is a setting whose value differs between the commits'
// servers (a commit without the setting has "").
type ServerDiff struct {
	Setting string            `json:"setting"`
	Values  map[string]string `json:"values"`
	// Performance marks a setting known to change what is measured.
	Performance bool `json:"performance,omitzero"`
}

// ownSettings differ by construction (paths, ports, the version) or are
// abtest's: never a finding.
var ownSettings = []string{"config_file", "data_directory", "hba_file", "ident_file", "external_pid_file", "port", "unix_socket_directories",
	"server_version", "server_version_num", "cluster_name", "log_directory", "log_filename", "data_directory_mode"}

// performanceSettings change what a benchmark measures when they differ.
var performanceSettings = []string{"data_checksums", "io_method", "io_workers", "io_combine_limit", "jit", "huge_pages", "wal_compression",
	"wal_level", "full_page_writes", "synchronous_commit", "shared_buffers", "wal_buffers", "max_wal_size", "checkpoint_timeout",
	"effective_io_concurrency", "maintenance_io_concurrency", "wal_segment_size", "block_size", "wal_block_size", "autovacuum"}

// serverDiffs compares the commits' servers, setting by setting.
func serverDiffs(commits []string, servers results.Servers) []ServerDiff {
	if len(servers) < 2 {
		return nil
	}
	names := map[string]bool{}
	for _, s := range servers {
		for k := range s.Settings {
			names[k] = true
		}
	}
	var out []ServerDiff
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if slices.Contains(ownSettings, k) {
			continue
		}
		d := ServerDiff{Setting: k, Values: map[string]string{}, Performance: slices.Contains(performanceSettings, k)}
		for _, c := range commits {
			if s, ok := servers[c]; ok {
				d.Values[c] = s.Settings[k]
			}
		}
		if len(slices.Compact(slices.Sorted(maps.Values(d.Values)))) > 1 {
			out = append(out, d)
		}
	}
	return out
}

// serverWarnings are the report's warnings for settings that change
// performance and differ, with how to make them equal.
func serverWarnings(diffs []ServerDiff, commits []string) []string {
	var out []string
	for _, d := range diffs {
		if !d.Performance {
			continue
		}
		var vals, lacking []string
		for _, c := range commits {
			if v, ok := d.Values[c]; ok {
				vals = append(vals, fmt.Sprintf("%s %s", c, orNone(v)))
				if v == "" {
					lacking = append(lacking, c)
				}
			}
		}
		how := "--set " + d.Setting + "=VALUE makes it one value"
		switch {
		case d.Setting == "data_checksums":
			how = "--initdb-opt=--no-data-checksums (or --data-checksums) makes them equal"
		case len(lacking) > 0:
			// --set would make the servers without it refuse to start.
			how = strings.Join(lacking, ", ") + " has no such setting, so no option makes them equal: a difference of the versions"
		}
		out = append(out, fmt.Sprintf("the servers differ in %s (%s), which changes performance: %s", d.Setting, strings.Join(vals, ", "), how))
	}
	return out
}

// serverDiffLine is the summary's one line on the settings that change
// performance and differ between the commits' servers ("" for none);
// the warnings say how to make each equal.
func serverDiffLine(diffs []ServerDiff, commits []string) string {
	var parts []string
	for _, d := range diffs {
		if !d.Performance {
			continue
		}
		var vals []string
		for _, c := range commits {
			if v, ok := d.Values[c]; ok {
				vals = append(vals, fmt.Sprintf("%s %s", c, orNone(v)))
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", d.Setting, strings.Join(vals, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "beware: the servers differ in settings that change performance: " + strings.Join(parts, "; ") + " (the warnings say how to make each equal)"
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// headSettings lead the main Servers table whether or not they differ:
// what a reader of a comparison across versions asks first.
var headSettings = []string{"data_checksums"}

// serverBlocks are the Servers section: each server's version and data
// checksums, and the performance settings that differ, in the table;
// the other settings that differ in a collapsed block (a comparison of
// PG 15 and 18 differs in some 60 settings, most of them new in 18);
// every setting is in servers.json.
func (r *Report) serverBlocks(servers results.Servers) []Block {
	if len(servers) == 0 {
		return nil
	}
	var commits []string
	for _, c := range r.Commits {
		if _, ok := servers[c]; ok {
			commits = append(commits, c)
		}
	}
	table := func() *Table { return &Table{Head: append([]string{"setting"}, commits...)} }
	row := func(t *Table, name string, value func(results.ServerSetup) string) {
		line := []Cell{txt(name)}
		for _, c := range commits {
			line = append(line, txt(orNone(value(servers[c]))))
		}
		t.Rows = append(t.Rows, line)
	}
	main := table()
	row(main, "version", func(s results.ServerSetup) string { return s.Version })
	for _, k := range headSettings {
		mark := ""
		if slices.Contains(performanceSettings, k) {
			mark = " ⚠"
		}
		row(main, k+mark, func(s results.ServerSetup) string { return s.Settings[k] })
	}
	rest := table()
	for _, d := range r.ServerDiffs {
		switch {
		case slices.Contains(headSettings, d.Setting):
		case d.Performance:
			row(main, d.Setting+" ⚠", func(s results.ServerSetup) string { return s.Settings[d.Setting] })
		default:
			row(rest, d.Setting, func(s results.ServerSetup) string { return s.Settings[d.Setting] })
		}
	}
	s := sect{&Heading{2, "Servers"}, &Paragraph{plain("pg_settings after each server's first start (paths and ports aside); ⚠ changes performance.")}, main}
	end := " Every setting of every server: " + results.ServersFile + " in the results directory."
	if len(rest.Rows) == 0 {
		s.text("Every setting is the same on every server but those above." + end)
	} else {
		s.add(&Details{fmt.Sprintf("Other settings that differ: %d", len(rest.Rows)), []Block{rest}})
		s.text("Other settings are the same on every server." + end)
	}
	return s
}
