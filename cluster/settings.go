package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// DefaultSettings are the settings every cluster gets unless a --set of
// the same name says otherwise: ordinary settings, overridden like any
// other.
var DefaultSettings = []Setting{
	{Name: results.PgssMax, Value: strconv.Itoa(DefaultPgssMax)},
}

// effectiveSettings is DefaultSettings, then the PgssMax shorthand and
// the Preload libraries, then opts.Settings; each name once, the last value winning.
func effectiveSettings(opts Options) []Setting {
	s := append([]Setting(nil), DefaultSettings...)
	if opts.PgssMax != 0 {
		s = append(s, Setting{Name: "pg_stat_statements.max", Value: strconv.Itoa(opts.PgssMax)})
	}
	if len(opts.Preload) > 0 {
		s = append(s, Setting{Name: "shared_preload_libraries", Value: strings.Join(append([]string{"pg_stat_statements"}, opts.Preload...), ",")})
	}
	return dedupSettings(append(s, opts.Settings...))
}

// checkOwned applies the GUC policy (results.CheckSetting) to every
// setting.
func checkOwned(settings []Setting) error {
	for _, s := range settings {
		if err := results.CheckSetting(s.Name, s.Value); err != nil {
			return fmt.Errorf("%w: %w", ErrSetting, err)
		}
	}
	return nil
}

// CheckSettings checks settings (name → value) against install before
// anything is created: the names abtest owns are refused, and postgres of
// install reads them as a configuration file (postgres -C), so that an
// unknown name or a bad value is refused in the server's own words.
// Settings of a library (pg_stat_statements.*) can only be judged once the
// library is loaded: Start checks them when the server starts. Errors are
// ErrSetting with exit 2.
func (m *Manager) CheckSettings(ctx context.Context, install string, settings map[string]string) error {
	names := slices.Sorted(maps.Keys(settings))
	list := make([]Setting, 0, len(names))
	for _, k := range names {
		list = append(list, Setting{Name: strings.ToLower(strings.TrimSpace(k)), Value: settings[k]})
	}
	if err := m.checkUser(); err != nil {
		return err
	}
	if err := m.checkInstall(ctx, install); err != nil {
		return err
	}
	return m.checkSettings(ctx, install, list)
}

func (m *Manager) checkSettings(ctx context.Context, install string, settings []Setting) error {
	if err := checkOwned(settings); err != nil {
		return err
	}
	if m.Run.DryRun || len(settings) == 0 {
		return nil
	}
	// A configuration directory of the server's account holding only
	// these settings: postgres -C reads the file and exits before it
	// looks for a data directory.
	dir, err := os.MkdirTemp("", "abtest-settings-")
	if err != nil {
		return exitcode.Failure(err)
	}
	defer os.RemoveAll(dir)
	if err := m.privateDir(dir); err != nil {
		return exitcode.Failure(err)
	}
	var b strings.Builder
	for _, s := range settings {
		fmt.Fprintf(&b, "%s = %s\n", s.Name, confValue(s.Value))
	}
	if err := m.writeOwned(filepath.Join(dir, "postgresql.conf"), []byte(b.String()), 0o600); err != nil {
		return exitcode.Failure(err)
	}
	return m.askPostgres(ctx, install, dir)
}
