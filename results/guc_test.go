package results

import (
	"slices"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

func TestGUCPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"work_mem", "4MB", true},
		{"pg_stat_statements.track", "all", true},
		{PgssMax, "100", true},
		{PgssMax, "99", false},
		{PgssMax, "lots", false},
		{"hba_file", "/tmp/x", false},
		{"config_file", "/tmp/x", false},
		{"ident_file", "/tmp/x", false},
		{"unix_socket_permissions", "0777", false},
		{"port", "5432", false},
		{"listen_addresses", "*", false},
		{"shared_preload_libraries", "auto_explain", false},
		{"shared_preload_libraries", `"pg_stat_statements", auto_explain`, true},
		{"bad name", "1", false},
		{"work_mem", "1\n2", false},
	} {
		err := CheckSetting(tc.name, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSetting(%q, %q) = %v, want ok %v", tc.name, tc.value, err, tc.ok)
		}
		if err != nil && exitcode.Code(err) != exitcode.Usage {
			t.Errorf("CheckSetting(%q, %q): exit %d, want 2", tc.name, tc.value, exitcode.Code(err))
		}
	}
}

func TestParseAxis(t *testing.T) {
	ax, err := ParseAxis(`Search_Path="a, b", c`)
	if err != nil || ax.Name != "search_path" || !slices.Equal(ax.Values, []string{"a, b", "c"}) {
		t.Fatalf("ParseAxis = %+v, %v", ax, err)
	}
	for _, bad := range []string{"work_mem", "work_mem=", "work_mem=1MB,1MB", "work_mem=1MB,", "hba_file=/x", PgssMax + "=50,5000"} {
		if _, err := ParseAxis(bad); err == nil {
			t.Errorf("ParseAxis(%q) accepted", bad)
		}
	}
}
