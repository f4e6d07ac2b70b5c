package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

const nobody = 65534

// plant writes path with data, owned by nobody (a hostile local user's).
func plant(t *testing.T, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// evilInstall is an install of nobody's whose pg_ctl leaves a mark
// when run; the returned check fails the test if it ran.
func evilInstall(t *testing.T) (string, func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "abtest-test-evil-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	mark := filepath.Join(dir, "ran")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(dir, "bin"), nobody, nobody)
	for _, p := range []string{"pg_ctl", "pg_config", "postgres"} {
		plant(t, filepath.Join(dir, "bin", p), "#!/bin/sh\ntouch "+mark+"\n", 0o755)
	}
	return dir, func() {
		t.Helper()
		if _, err := os.Stat(mark); err == nil {
			t.Error("nobody's program ran")
		}
	}
}

func wantUntrusted(t *testing.T, what string, err error, file string) {
	t.Helper()
	if !errors.Is(err, ErrUntrusted) || exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), file) {
		t.Errorf("%s = %v; want one line, exit 2, naming %s", what, err, file)
	}
}

// TestPlantedState: what a local user plants in a data root others can
// write to is neither printed nor run: an env.sh of theirs, a data
// directory with a state naming their install, an env.sh abtest did not
// write, a state naming an install whose pg_ctl is theirs.
func TestPlantedState(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("planting nobody's files needs root")
	}
	m, install := newManager(t)
	ctx := context.Background()
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(m.Root, 0o1777)
	evil, ran := evilInstall(t)

	plant(t, m.EnvFile("evil2"), "touch /tmp/pwned\n", 0o644)
	_, err := m.ReadEnv("evil2")
	wantUntrusted(t, "ReadEnv of nobody's env.sh", err, m.EnvFile("evil2"))

	dir := filepath.Join(m.Root, "evil")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, nobody, nobody)
	plant(t, filepath.Join(dir, "PG_VERSION"), "15\n", 0o644)
	plant(t, filepath.Join(dir, stateFile), `{"name":"evil","install":"`+evil+`","data_dir":"`+dir+`"}`, 0o644)
	_, err = m.Stop(ctx, "evil")
	wantUntrusted(t, "Stop of nobody's data directory", err, dir)
	wantUntrusted(t, "Remove of nobody's data directory", m.Remove(ctx, "evil"), dir)
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err != nil {
		t.Errorf("Remove removed nobody's files: %v", err)
	}
	_, err = m.ReadState("evil")
	wantUntrusted(t, "ReadState of nobody's state", err, filepath.Join(dir, stateFile))

	// A cluster of abtest's own: its env.sh is printed; replaced by
	// another (even root's own), it is not.
	st := start(t, m, "c", Options{Install: install})
	if data, err := m.ReadEnv("c"); err != nil || !strings.Contains(string(data), "PGPORT") {
		t.Fatalf("ReadEnv of abtest's env.sh = %q, %v", data, err)
	}
	if err := os.WriteFile(st.EnvFile, []byte("touch /tmp/pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = m.ReadEnv("c")
	wantUntrusted(t, "ReadEnv of an env.sh abtest did not write", err, st.EnvFile)

	// A state of an older abtest, without the checksum: the env.sh is
	// printed when it is what abtest writes for the state, else not.
	old := *st
	old.EnvSHA256 = ""
	if err := m.writeState(&old); err != nil {
		t.Fatal(err)
	}
	_, err = m.ReadEnv("c")
	wantUntrusted(t, "ReadEnv of a planted env.sh under an old state", err, st.EnvFile)
	rendered := Env{Name: "c", Path: st.EnvFile, InstallDir: st.Install, DataDir: st.DataDir, SocketDir: st.SocketDir, Port: st.Port}.Render()
	if err := os.WriteFile(st.EnvFile, []byte(rendered), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := m.ReadEnv("c"); err != nil || string(data) != rendered {
		t.Errorf("ReadEnv of abtest's env.sh under an old state = %q, %v", data, err)
	}

	// Its state naming nobody's install: pg_ctl of it is not run.
	forged := *st
	forged.Install = evil
	if err := m.writeState(&forged); err != nil {
		t.Fatal(err)
	}
	_, err = m.Stop(ctx, "c")
	wantUntrusted(t, "Stop with nobody's pg_ctl", err, filepath.Join(evil, "bin"))
	ran()
	if err := m.writeState(st); err != nil {
		t.Fatal(err)
	}
}
