package cluster

// Setup SQL (matrix --setup-sql): SQL run on a cluster's benchmark
// database before the cells that need it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/results"
)

// SetupFile, in a data directory, records the setup SQL last run there
// and what it ran under (SetupKey): a data directory made anew has none.
const SetupFile = "abtest-setup.json"

// SetupKey is what setup SQL ran under: the SQL, its values substituted,
// and the cluster it ran in, as far as it can change what the SQL does.
// A server that preloads other libraries (pg_cron's functions refuse to
// load without it), has another extension build in its install (CREATE
// EXTENSION of another version, another .so) or other settings (an
// extension's setting read by the SQL) is another cluster to the SQL.
type SetupKey struct {
	SQL string `json:"sql"`
	// Settings are the cluster's effective settings (State.Settings):
	// shared_preload_libraries among them when anything is preloaded.
	Settings map[string]string `json:"settings"`
	// Extensions are the abtest-built extensions of the cluster's
	// install (build.ExtensionInfo), name → fingerprint.
	Extensions map[string]string `json:"extensions,omitempty"`
}

// SetupKeyOf is the key of sql run in the cluster st.
func SetupKeyOf(st *State, sql string) (SetupKey, error) {
	k := SetupKey{SQL: sql, Settings: st.Settings}
	exts, err := installedExtensions(st.Install)
	if err != nil {
		return k, err
	}
	if len(exts) > 0 {
		k.Extensions = map[string]string{}
		for _, e := range exts {
			k.Extensions[e.Name] = e.Fingerprint
		}
	}
	return k, nil
}

// installedExtensions are the records of the extensions abtest built
// into install (build.ExtensionFile), by name.
func installedExtensions(install string) ([]*build.ExtensionInfo, error) {
	files, err := filepath.Glob(build.ExtensionFile(install, "*"))
	if err != nil {
		return nil, err
	}
	var out []*build.ExtensionInfo
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), ".abtest-ext-"), ".json")
		if build.ExtensionFile(install, name) != f {
			continue
		}
		info, err := build.ReadExtensionInfo(install, name)
		if err != nil {
			return nil, fmt.Errorf("setup SQL: extension record: %w", err)
		}
		out = append(out, info)
	}
	return out, nil
}

// RunSetup runs sql (its values substituted already) on the benchmark
// database of the running cluster st, unless it ran last in st's data
// directory under the same key (SetupKeyOf: the SQL, the cluster's
// settings and preloads, its install's extension builds): a new cluster
// gets it once, and a cluster reused with other values (an extension's
// setting as an axis), another preload or another build of an extension
// gets it again. It reports whether it ran. An error names what (file:
// the file the SQL came from) and the line that failed; one that needs a
// library preloaded says how to preload it.
func (m *Manager) RunSetup(ctx context.Context, st *State, file, sql string) (bool, error) {
	key, err := SetupKeyOf(st, sql)
	if err != nil {
		return false, err
	}
	want, err := json.Marshal(key)
	if err != nil {
		return false, err
	}
	done := filepath.Join(st.DataDir, SetupFile)
	if prev, err := m.readTrusted(done); err == nil && bytes.Equal(prev, want) {
		return false, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if m.Run.DryRun {
		m.Run.Note("run setup SQL %s on cluster %s", file, st.Name)
		return true, nil
	}
	// The old record goes first: SQL that fails half-way has changed
	// the database, and must run again before the next cell.
	if err := m.Run.RemoveAll(done); err != nil {
		return false, err
	}
	conn, err := pgx.Connect(ctx, st.ConnString(Database))
	if err != nil {
		return false, fmt.Errorf("setup SQL %s: %w", file, err)
	}
	defer conn.Close(ctx)
	// No arguments: the simple protocol, which runs several statements.
	if _, err := conn.Exec(ctx, sql); err != nil {
		err = fmt.Errorf("setup SQL %s%s: %w%s", file, sqlLine(sql, err), err, preloadHint(st, err))
		if _, refused := errors.AsType[*pgconn.PgError](err); refused {
			err = &results.UserSQLError{Err: err}
		}
		return false, err
	}
	if err := m.writeOwned(done, want, 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// preloadHint is what to do about a server error that says a library
// loads only through shared_preload_libraries (pg_cron's "can only be
// loaded via shared_preload_libraries"), which abtest writes: name the
// flag, and the extensions built into st's install that are not
// preloaded now; "" for any other error. The server's own hint says to
// edit postgresql.conf, which abtest rewrites at the next start.
func preloadHint(st *State, err error) string {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	if !ok || !strings.Contains(pe.Message+" "+pe.Hint, "shared_preload_libraries") {
		return ""
	}
	var loaded []string
	for l := range strings.SplitSeq(st.Settings["shared_preload_libraries"], ",") {
		loaded = append(loaded, strings.Trim(strings.TrimSpace(l), `"'`))
	}
	var names []string
	exts, _ := installedExtensions(st.Install)
	for _, e := range exts {
		if !slices.Contains(loaded, e.Name) {
			names = append(names, e.Name)
		}
	}
	// The server's message names the library ("pg_cron can only be
	// loaded via shared_preload_libraries"): that one, of several built
	// here, is the one to add.
	for _, n := range names {
		if strings.HasPrefix(pe.Message, n+" ") {
			names = []string{n}
			break
		}
	}
	switch len(names) {
	case 0:
		return "; abtest writes shared_preload_libraries: preload the library with --preload LIB"
	case 1:
		return fmt.Sprintf("; abtest writes shared_preload_libraries: add --preload %s", names[0])
	}
	return fmt.Sprintf("; abtest writes shared_preload_libraries: preload the library with --preload LIB (built here, not preloaded: %s)", strings.Join(names, ", "))
}

// sqlLine is " line N" for a server error that gives its position in
// sql, else "".
func sqlLine(sql string, err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Position <= 0 || int(pe.Position) > len(sql)+1 {
		return ""
	}
	// Position counts characters from 1.
	r := []rune(sql)
	if int(pe.Position) > len(r) {
		return ""
	}
	return fmt.Sprintf(" line %d", strings.Count(string(r[:pe.Position-1]), "\n")+1)
}
