package analysis

import (
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestServerDiffs: settings that differ between the servers are listed
// (paths and ports aside), those that change performance warned about
// with how to make them equal (never --set for a setting a server lacks:
// it would not start); equal servers have none.
func TestServerDiffs(t *testing.T) {
	servers := results.Servers{
		"pg17": {Version: "PostgreSQL 17.6", Settings: map[string]string{"data_checksums": "off", "port": "5433", "work_mem": "4096kB", "data_directory": "/a"}},
		"pg18": {Version: "PostgreSQL 18.3", Settings: map[string]string{"data_checksums": "on", "port": "5434", "work_mem": "4096kB", "data_directory": "/b", "io_method": "worker"}},
	}
	commits := []string{"pg17", "pg18"}
	diffs := serverDiffs(commits, servers)
	var names []string
	for _, d := range diffs {
		names = append(names, d.Setting)
	}
	if strings.Join(names, ",") != "data_checksums,io_method" {
		t.Fatalf("diffs %v", names)
	}
	warnings := serverWarnings(diffs, commits)
	if len(warnings) != 2 || !strings.Contains(warnings[0], "data_checksums (pg17 off, pg18 on)") || !strings.Contains(warnings[0], "--initdb-opt=--no-data-checksums") ||
		!strings.Contains(warnings[1], "io_method (pg17 (none), pg18 worker)") || strings.Contains(warnings[1], "--set") || !strings.Contains(warnings[1], "pg17 has no such setting") {
		t.Errorf("warnings %q", warnings)
	}
	same := results.Servers{"a": servers["pg17"], "b": servers["pg17"]}
	if d := serverDiffs([]string{"a", "b"}, same); len(d) != 0 {
		t.Errorf("equal servers differ in %v", d)
	}
}
