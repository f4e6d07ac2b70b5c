package cluster

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/build"
)

// TestPreloadHint: the library the server names is the one to add,
// even where other extensions built into the install are not preloaded
// either (the suite's shared install had pg_cron beside the test's
// needs_preload, and the hint said --preload LIB); other errors get
// no hint.
func TestPreloadHint(t *testing.T) {
	install := t.TempDir()
	for _, name := range []string{"needs_preload", "pg_cron", "pg_other"} {
		data, err := json.Marshal(build.ExtensionInfo{Extension: build.Extension{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(build.ExtensionFile(install, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := &State{Install: install, Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements,pg_other"}}
	refused := func(msg string) error { return &pgconn.PgError{Message: msg} }
	for msg, want := range map[string]string{
		"needs_preload can only be loaded via shared_preload_libraries": "add --preload needs_preload",
		"pg_cron can only be loaded via shared_preload_libraries":       "add --preload pg_cron",
		"a library must be loaded via shared_preload_libraries":         "--preload LIB (built here, not preloaded: needs_preload, pg_cron)",
	} {
		if got := preloadHint(st, refused(msg)); !strings.HasSuffix(got, want) {
			t.Errorf("%q: hint %q, want it to end %q", msg, got, want)
		}
	}
	if got := preloadHint(st, refused("relation \"x\" does not exist")); got != "" {
		t.Errorf("another error: hint %q", got)
	}
	if got := preloadHint(st, errors.New("shared_preload_libraries, but not from the server")); got != "" {
		t.Errorf("not a server error: hint %q", got)
	}
}
