package analysis

// Servers (issue 26): where the commits' servers differ besides their
// code — initdb options and settings after start — so that a comparison
// across versions says what else it compared, and warns where a default
// that changes performance differs (PG 18's initdb turns data checksums
// on; PG 18 has io_method).

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// ServerDiff is a setting whose value differs between the commits'
// servers (a commit without the setting has "").
type ServerDiff struct {
	Setting string            `json:"setting"`
	Values  map[string]string `json:"values"`
	// Performance marks a setting known to change what is measured.
	Performance bool `json:"performance,omitempty"`
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

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// headSettings lead the main Servers table whether or not they differ:
// what a reader of a comparison across versions asks first.
var headSettings = []string{"data_checksums"}

// writeServers writes the Servers section (markdown): each server's
// version and data checksums, and the performance settings that differ,
// in the table; the other settings that differ in a collapsed block (a
// comparison of PG 15 and 18 differs in some 60 settings, most of them
// new in 18); every setting is in servers.json.
func (r *Report) writeServers(w io.Writer, servers results.Servers) {
	if len(servers) == 0 {
		return
	}
	var commits []string
	for _, c := range r.Commits {
		if _, ok := servers[c]; ok {
			commits = append(commits, c)
		}
	}
	head := func() {
		fmt.Fprintf(w, "| setting |")
		for _, c := range commits {
			fmt.Fprintf(w, " %s |", mdCell(c))
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(commits)))
	}
	row := func(name string, value func(results.ServerSetup) string) {
		fmt.Fprintf(w, "| %s |", mdCell(name))
		for _, c := range commits {
			fmt.Fprintf(w, " %s |", mdCell(orNone(value(servers[c]))))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "## Servers\n\npg_settings after each server's first start (paths and ports aside); ⚠ changes performance.\n\n")
	head()
	row("version", func(s results.ServerSetup) string { return s.Version })
	for _, k := range headSettings {
		mark := ""
		if slices.Contains(performanceSettings, k) {
			mark = " ⚠"
		}
		row(k+mark, func(s results.ServerSetup) string { return s.Settings[k] })
	}
	var rest []ServerDiff
	for _, d := range r.ServerDiffs {
		switch {
		case slices.Contains(headSettings, d.Setting):
		case d.Performance:
			row(d.Setting+" ⚠", func(s results.ServerSetup) string { return s.Settings[d.Setting] })
		default:
			rest = append(rest, d)
		}
	}
	fmt.Fprintln(w)
	if len(rest) == 0 {
		fmt.Fprintf(w, "Every setting is the same on every server but those above.")
	} else {
		fmt.Fprintf(w, "<details><summary>Other settings that differ: %d</summary>\n\n", len(rest))
		head()
		for _, d := range rest {
			row(d.Setting, func(s results.ServerSetup) string { return s.Settings[d.Setting] })
		}
		fmt.Fprintf(w, "\n</details>\n\n")
		fmt.Fprintf(w, "Other settings are the same on every server.")
	}
	fmt.Fprintf(w, " Every setting of every server: %s in the results directory.\n\n", results.ServersFile)
}

// mdCell is s as the text of a markdown table cell or list item: on one
// line, its HTML escaped (a label or a setting's value is the user's:
// "<script>" must stay text) and the characters markdown would read as
// table columns, code or emphasis escaped.
func mdCell(s string) string {
	var b strings.Builder
	for _, c := range text.OneLine(s) {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '|', '\\', '`', '*', '[', ']':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
