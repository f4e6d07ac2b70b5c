package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvRefusesPlantedEnvSh: an env.sh a local user planted in a data
// root others can write to is not printed (eval "$(abtest env -w NAME)"
// would run their commands): exit 2, one line naming the file.
func TestEnvRefusesPlantedEnvSh(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting nobody's files needs root")
	}
	env, _ := clusterEnv(t)
	root := env["PG_DATA_DIR"]
	if err := os.MkdirAll(root, 0o1777); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(root, "evil2.env.sh")
	if err := os.WriteFile(evil, []byte("touch /tmp/abtest-pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(evil, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := abtest(t, env, "env", "--worktree", "evil2")
	if code != 2 || strings.Contains(out, "pwned") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, evil) {
		t.Errorf("env of a planted env.sh: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
