package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// State is a cluster as abtest last configured it (abtest.state.json).
type State struct {
	Name       string            `json:"name"`
	Install    string            `json:"install"`
	DataDir    string            `json:"data_dir"`
	SocketDir  string            `json:"socket_dir"`
	Port       int               `json:"port"`
	Listen     string            `json:"listen,omitempty"`
	CPUs       []int             `json:"cpus,omitempty"`
	MaxClients int               `json:"max_clients"`
	Settings   map[string]string `json:"settings"`
	// Version is `postgres --version` of the install.
	Version string `json:"version"`
	EnvFile string `json:"env_file"`
	// EnvSHA256 is the checksum of the env.sh abtest wrote: abtest env
	// prints only that file, never one planted in its place.
	EnvSHA256 string `json:"env_sha256,omitempty"`
	// InitdbOpts are the initdb options the data directory was made
	// with beyond abtest's own (Options.InitdbOpts).
	InitdbOpts []string `json:"initdb_opts,omitempty"`
	// InitdbPassed are those options as initdb was given them: less
	// --no-data-checksums where the install's initdb does not know it
	// (knownInitdbOpts). Nil in the state of an older abtest: unknown.
	InitdbPassed *[]string `json:"initdb_passed,omitempty"`
	// Fingerprint is the build fingerprint of the install the server
	// was started from (its .abtest-build.json); "" for an install abtest
	// did not build.
	Fingerprint string `json:"fingerprint,omitempty"`
	// InstallOwner is the owner of the install's bin/pg_ctl at start
	// when not root (the user who invoked abtest through sudo, whose
	// install Start accepted): Stop runs that pg_ctl whoever invokes
	// abtest then (checkPgCtl), so a cluster abtest started is one it
	// can stop.
	InstallOwner int `json:"install_owner,omitempty"`
	// Binary identifies the install's bin/postgres as it was at start:
	// a rebuild replaces the file even when the fingerprint is the same
	// (--force).
	Binary Binary `json:"binary"`
	// Exe is /proc/PID/exe of the postmaster right after it started, and
	// ServerVersion its SELECT version(): what the server really runs.
	Exe           string `json:"exe,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	// Initialized is set once the benchmark database and extension exist.
	Initialized bool      `json:"initialized"`
	StartedAt   time.Time `json:"started_at"`
	// Stopped says which abtest stopped the server meaning to start it
	// again (StopUsing); every Start clears it.
	Stopped *StopRecord `json:"stopped,omitempty"`

	// Action is what the Start that returned this state did, and Reason
	// why (e.g. "build fingerprint changed"); neither is stored.
	Action Action `json:"-"`
	Reason string `json:"-"`
}

// ConnString returns a libpq connection string for database db, as
// abtest (application_name): a run waits for abtest's closed
// connections to leave before it notes other clients of its database
// (workload's foreign backends). Unnamed, the connection that made
// pg_stat_statements at a cluster's first start was still exiting when
// a run began under load, and the run left its probe counters out
// ("pid 13597 (\"\")").
func (s *State) ConnString(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable connect_timeout=5 application_name=abtest", s.SocketDir, s.Port, SuperUser, db)
}

// ReadState reads name's state; a cluster never started is ErrNotFound.
func (m *Manager) ReadState(name string) (*State, error) {
	dir, err := m.DataDir(name)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	data, err := m.readTrusted(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%w %q under %s; start it with: abtest switch %s", ErrNotFound, name, m.Root, name)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

func (m *Manager) writeState(st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return m.writeOwned(filepath.Join(st.DataDir, stateFile), append(data, '\n'), 0o600)
}

// DirSize returns the bytes used by the files under dir.
func DirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Info is a cluster's state and whether it runs, for status.
type Info struct {
	State
	Running bool  `json:"running"`
	PID     int   `json:"pid,omitempty"`
	Bytes   int64 `json:"data_bytes"`
}

// List returns every cluster under the root, by name.
func (m *Manager) List() ([]Info, error) {
	states, err := filepath.Glob(filepath.Join(m.Root, "*", stateFile))
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, f := range states {
		st, err := m.ReadState(filepath.Base(filepath.Dir(f)))
		if err != nil {
			continue
		}
		pid, running := PID(st.DataDir)
		out = append(out, Info{State: *st, Running: running, PID: pid, Bytes: DirSize(st.DataDir)})
	}
	return out, nil
}

// CatalogVersion returns the catalog version of name's data directory, as
// pg_controldata of install reads it.
func (m *Manager) CatalogVersion(ctx context.Context, name, install string) (string, error) {
	dir, err := m.DataDir(name)
	if err != nil {
		return "", exitcode.BadInput(err)
	}
	c := m.cmd(install, "pg_controldata", "-D", dir)
	c.ReadOnly = true
	out, err := m.Run.Output(ctx, c)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Catalog version number:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("pg_controldata %s: no catalog version", dir)
}

// Exists reports whether name has a data directory.
func (m *Manager) Exists(name string) bool {
	dir, err := m.DataDir(name)
	return err == nil && exists(filepath.Join(dir, "PG_VERSION"))
}

// OptionsOf returns the options st was started with, to start it again
// the same way (after a rebuild).
func OptionsOf(st *State) Options {
	o := Options{Install: st.Install, Port: st.Port, CPUs: st.CPUs, Listen: st.Listen, MaxClients: st.MaxClients}
	for _, k := range slices.Sorted(maps.Keys(st.Settings)) {
		o.Settings = append(o.Settings, Setting{Name: k, Value: st.Settings[k]})
	}
	return o
}
