package results

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Extension is an extension source tree built into a commit's build with
// PGXS (matrix --extension): its provenance.
type Extension struct {
	Name string `json:"name"`
	// Dir is the source tree as given, made absolute.
	Dir string `json:"dir"`
	// SHA is the tree's git HEAD when it is in a git repository.
	SHA string `json:"sha,omitempty"`
	// Tree is the sha256 of the tree's files (.git left out).
	Tree string `json:"tree_sha256"`
	// Fingerprint is the extension build's: the tree and the server
	// build it was built against.
	Fingerprint string `json:"fingerprint"`
}

// setupRE is a reference in setup SQL: ${name}.
var setupRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// SetupValues are the values setup SQL may name as ${name}: the
// configuration's settings (by their GUC name) and pgbench variables
// (by their name); a variable wins over a setting of the same name.
func (c Config) SetupValues() map[string]string {
	v := map[string]string{}
	for k, x := range c.Settings {
		v[k] = x
	}
	for k, x := range c.Vars {
		v[k] = x
	}
	return v
}

// ExpandSetupSQL replaces every ${name} in sql by values[name], as is
// (quote it in the SQL when it is a string: '${name}'). A name values
// does not have is an error naming it and the names there are.
func ExpandSetupSQL(sql string, values map[string]string) (string, error) {
	var missing []string
	out := setupRE.ReplaceAllStringFunc(sql, func(m string) string {
		name := setupRE.FindStringSubmatch(m)[1]
		v, ok := values[name]
		if !ok && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		names := slices.Sorted(maps.Keys(values))
		if len(names) == 0 {
			names = []string{"none"}
		}
		return "", fmt.Errorf("${%s}: not a setting (--set) or variable (--var) of the configuration (it has: %s)", strings.Join(missing, "}, ${"), strings.Join(names, ", "))
	}
	return out, nil
}

// UserSQLError is SQL the user wrote that the server refused: matrix
// --setup-sql, a workload file's setup section or a declared metric's
// query. It fails alike in every cell, so a matrix stops at the first
// instead of failing cell after cell.
type UserSQLError struct{ Err error }

func (e *UserSQLError) Error() string { return e.Err.Error() }
func (e *UserSQLError) Unwrap() error { return e.Err }
