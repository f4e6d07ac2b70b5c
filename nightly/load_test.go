package nightly

import (
	"path/filepath"
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
}
