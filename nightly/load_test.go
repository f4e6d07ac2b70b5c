package nightly

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestLoad: the example file loads, a flag overrides its store, and a
// missing or absent file is exit 2.
func TestLoad(t *testing.T) {
	ex := filepath.Join("..", "nightly.example.toml")
	ov := []config.Override{{Key: "store", Flag: "--store", Value: "/tmp/x.db"}}
	nc, cfg, err := Load(ex, "/h", func(string) string { return "" }, ov)
	if err != nil || nc == nil || cfg.Store != "/tmp/x.db" {
		t.Fatalf("example: %+v, %v", cfg, err)
	}
	for _, path := range []string{"", filepath.Join(t.TempDir(), "none.toml")} {
		if _, _, err := Load(path, "/h", nil, nil); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%q: %v", path, err)
		}
	}
	if got := ReuseFrom(nc); !slices.Equal(got, []string{BuildPrefix}) {
		t.Errorf("the example reuses %q, want only n-", got)
	}
	// reuse_from: name prefixes, none empty (every install) or a path.
	for _, bad := range []string{`[""]`, `["pg-", "../x"]`, `["a/b"]`} {
		f := filepath.Join(t.TempDir(), "n.toml")
		os.WriteFile(f, []byte("reuse_from = "+bad+"\n"), 0o644)
		_, _, err := Load(f, "/h", func(string) string { return "" }, nil)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "reuse_from") || strings.Contains(err.Error(), "\n") {
			t.Errorf("reuse_from = %s: %v", bad, err)
		}
	}
	// [matrix] is checked at load as matrix checks its flags: rates as
	// -R takes them, never beside instruction cells.
	for bad, want := range map[string]string{"rates = [-1]": "-R", "rates = [500, 500]": "each once", "rates = [500]\ninstructions = true": "without -R",
		"clients = [4, 4]": "client count 4 given twice"} {
		f := filepath.Join(t.TempDir(), "n.toml")
		os.WriteFile(f, []byte("[matrix]\n"+bad+"\n"), 0o644)
		_, _, err := Load(f, "/h", func(string) string { return "" }, nil)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "[matrix]: ") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	f := filepath.Join(t.TempDir(), "n.toml")
	os.WriteFile(f, []byte(`reuse_from = ["pg-", "mine"]`+"\n"), 0o644)
	if nc, _, err := Load(f, "/h", func(string) string { return "" }, nil); err != nil || !slices.Equal(ReuseFrom(nc), []string{"n-", "pg-", "mine"}) {
		t.Errorf("reuse_from = [pg-, mine]: %v, %v", nc, err)
	}
}
