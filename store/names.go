package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/suggest"
)

// CheckNames checks history's and annotate's --metric and
// --configuration against what the store holds: one it does not hold is
// bad input (ErrUnknown) that lists what it does, with the nearest as a
// suggestion, never a series of 0 points. An empty name is not checked;
// a configuration prefix several share is left to ResolveConfig.
func (s *Store) CheckNames(ctx context.Context, metric, config string) error {
	if metric != "" {
		metrics, err := s.names(ctx, "SELECT DISTINCT metric FROM metrics ORDER BY metric")
		if err != nil {
			return err
		}
		if !slices.Contains(metrics, metric) {
			return exitcode.BadInputf("--metric %s: %w: no stored cell has it%s; stored metrics: %s", metric, ErrUnknown, nearest(metric, metrics), listNames(metrics))
		}
	}
	if config == "" {
		return nil
	}
	if _, err := s.ResolveConfig(ctx, config); !errors.Is(err, ErrUnknown) {
		return nil
	}
	configs, err := s.names(ctx, "SELECT id FROM configurations ORDER BY id")
	if err != nil {
		return err
	}
	return exitcode.BadInputf("--configuration %s: %w: no stored configuration is or starts with it%s; stored: %s", config, ErrUnknown, nearest(config, configs), listNames(configs))
}

// names is the one text column query returns.
func (s *Store) names(ctx context.Context, query string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, s.fail("listing names", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.fail("listing names", err)
		}
		out = append(out, n)
	}
	return out, s.fail("listing names", rows.Err())
}

// nearest is " (did you mean X?)" for a typo of one name, or for the one
// name that holds got (deallocs: pgss_deallocs), else "".
func nearest(got string, names []string) string {
	if s := suggest.DidYouMean(got, names, false); s != "" {
		return s
	}
	var holding []string
	for _, n := range names {
		if strings.Contains(n, got) {
			holding = append(holding, n)
		}
	}
	if len(holding) == 1 {
		return fmt.Sprintf(" (did you mean %s?)", holding[0])
	}
	return ""
}

// listNames is names for one line: the first 15, and how many more.
func listNames(names []string) string {
	const most = 15
	switch {
	case len(names) == 0:
		return "none (abtest store import DIR… first)"
	case len(names) > most:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return strings.Join(names, ", ")
}
