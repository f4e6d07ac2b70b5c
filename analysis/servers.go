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

// writeServers writes the servers' versions, initdb options and the
// settings where they differ (markdown).
func (r *Report) writeServers(w io.Writer, servers results.Servers) {
	if len(servers) == 0 {
		return
	}
	fmt.Fprintf(w, "## Servers\n\n| commit | version | initdb options beyond abtest's |\n|---|---|---|\n")
	for _, c := range r.Commits {
		if s, ok := servers[c]; ok {
			fmt.Fprintf(w, "| %s | %s | %s |\n", c, orNone(s.Version), orNone(strings.Join(s.InitdbOpts, " ")))
		}
	}
	if len(r.ServerDiffs) == 0 {
		fmt.Fprintf(w, "\nEvery setting is the same on every server (pg_settings after start; paths and ports aside).\n\n")
		return
	}
	fmt.Fprintf(w, "\nSettings that differ between the servers (pg_settings after start; paths and ports aside; ⚠ changes performance):\n\n| setting |")
	for _, c := range r.Commits {
		fmt.Fprintf(w, " %s |", c)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(r.Commits)))
	for _, d := range r.ServerDiffs {
		mark := ""
		if d.Performance {
			mark = " ⚠"
		}
		fmt.Fprintf(w, "| %s%s |", d.Setting, mark)
		for _, c := range r.Commits {
			fmt.Fprintf(w, " %s |", orNone(d.Values[c]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}
