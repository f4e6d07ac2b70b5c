package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safepath"
)

// DataDirAt asks the server listening on port for its data directory.
// host is a host name or socket directory and user a role; empty ones
// are libpq's defaults. It works for any local server, not only one
// abtest started: perf record -p PORT profiles a server by its data
// directory.
func DataDirAt(ctx context.Context, port int, host, user string) (string, error) {
	conn := fmt.Sprintf("port=%d dbname=postgres sslmode=disable connect_timeout=5", port)
	if host != "" {
		conn += " host=" + host
	}
	if user != "" {
		conn += " user=" + user
	}
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return "", exitcode.Failure(fmt.Errorf("cannot connect to port %d: %v", port, err))
	}
	defer c.Close(ctx)
	var dir string
	if err := c.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return "", exitcode.Failure(err)
	}
	return dir, nil
}

// RunningProcesses returns a function that lists the processes of the
// server running in dir (Processes), or a usage error when none runs
// there now.
func RunningProcesses(dir string) (func() []int, error) {
	if len(Processes(dir)) == 0 {
		return nil, exitcode.BadInputf("no running server in %s (its postmaster.pid must be readable here)", dir)
	}
	return func() []int { return Processes(dir) }, nil
}

// ReadEnv returns cluster name's env.sh (abtest env -w NAME); a bad name
// or a cluster without one is a usage error that says how to make it.
func (m *Manager) ReadEnv(name string) ([]byte, error) {
	if err := safepath.CheckName(name); err != nil {
		return nil, exitcode.BadInput(err)
	}
	data, err := m.readTrusted(m.EnvFile(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("cluster %s has no env.sh (%s); start it with: abtest switch %s", name, m.EnvFile(name), name)
	}
	if err != nil && !errors.Is(err, ErrUntrusted) {
		err = exitcode.Failure(err)
	}
	if err != nil {
		return nil, err
	}
	st, err := m.ReadState(name)
	if err != nil {
		return nil, err
	}
	if st.EnvSHA256 == "" {
		// A state of an abtest before the checksum: the file is trusted
		// only when it is exactly what abtest writes for this state.
		env := Env{Name: name, Path: st.EnvFile, InstallDir: st.Install, DataDir: st.DataDir, SocketDir: st.SocketDir, Port: st.Port}
		if env.Render() != string(data) {
			return nil, untrusted(m.EnvFile(name), "is not the env.sh abtest writes for this cluster, and its state (from an older abtest) has no checksum; abtest switch "+name+" writes both again")
		}
		return data, nil
	}
	if st.EnvSHA256 != sha256Hex(data) {
		return nil, untrusted(m.EnvFile(name), "is not the env.sh abtest wrote (its checksum is not the one in "+stateFile+")")
	}
	return data, nil
}

// ProcessesOf is RunningProcesses of cluster name's data directory.
func (m *Manager) ProcessesOf(name string) (func() []int, error) {
	st, err := m.ReadState(name)
	if err != nil {
		return nil, err
	}
	return RunningProcesses(st.DataDir)
}

// ServerSettings are the running server's settings (pg_settings: name →
// value with its unit), for comparing servers of different builds.
func ServerSettings(ctx context.Context, st *State) (map[string]string, error) {
	c, err := pgx.Connect(ctx, st.ConnString("postgres"))
	if err != nil {
		return nil, fmt.Errorf("cluster %s: reading its settings: %w", st.Name, err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT name, setting || coalesce(unit, '') FROM pg_settings")
	if err != nil {
		return nil, fmt.Errorf("cluster %s: pg_settings: %w", st.Name, err)
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// abtestsInitdb are initdb options abtest gives itself (initdb): a
// --initdb-opt may not change them.
var abtestsInitdb = []string{"-D", "--pgdata", "-U", "--username", "-E", "--encoding", "-A", "--auth", "--auth-local", "--auth-host", "--no-locale", "--locale", "--no-instructions", "-W", "--pwprompt", "--pwfile", "-S", "--sync-only", "-X", "--waldir"}

// CheckInitdbOpts refuses an initdb option that is not one (it starts
// with -) or that abtest decides itself (the data directory, the
// superuser, encoding, locale, authentication).
func CheckInitdbOpts(opts []string) error {
	for _, o := range opts {
		name, _, _ := strings.Cut(o, "=")
		if !strings.HasPrefix(o, "--") && len(o) > 2 {
			name = o[:2] // -D/x: a short option with its value
		}
		if !strings.HasPrefix(o, "-") || strings.ContainsAny(o, "\n\x00") || slices.Contains(abtestsInitdb, name) {
			return exitcode.BadInputf("--initdb-opt %q: want an initdb option such as --no-data-checksums or --wal-segsize=64 that abtest does not set itself (%s)", o, strings.Join(abtestsInitdb, " "))
		}
	}
	return nil
}
