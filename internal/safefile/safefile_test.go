package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMkdirTempOneLength: 200 directories, each new, private, and named
// with ten digits (os.MkdirTemp's names have 1 to 10: about 3 in 4 of
// them have ten, so 200 of one length would not happen, 0.77²⁰⁰).
func TestMkdirTempOneLength(t *testing.T) {
	parent := t.TempDir()
	seen := map[string]bool{}
	for range 200 {
		dir, err := MkdirTemp(parent, "abtest-")
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(dir)
		digits := strings.TrimPrefix(name, "abtest-")
		if filepath.Dir(dir) != parent || len(digits) != 10 || strings.Trim(digits, "0123456789") != "" || seen[name] {
			t.Fatalf("%s: want a new name of abtest- and ten digits in %s", dir, parent)
		}
		seen[name] = true
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v", dir, fi.Mode(), err)
		}
	}
	if _, err := MkdirTemp(filepath.Join(parent, "absent"), "abtest-"); err == nil {
		t.Error("a directory in a parent that does not exist was made")
	}
}
