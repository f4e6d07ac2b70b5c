package results

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// The GUC policy: which settings a user may give (--set, -m, a nightly
// axis, a bisection's configuration), how a list of values is written,
// and the one rule about pg_stat_statements. The matrix, the cluster,
// nightly and bisect all check a setting here, so a name refused by one
// is refused by all.

// PgssMax is the pg_stat_statements.max setting (-m), and MinPgssMax its
// smallest value (PostgreSQL refuses less).
const (
	PgssMax    = "pg_stat_statements.max"
	MinPgssMax = 100
)

// reserved are the settings abtest decides itself for every cluster: they
// are how it reaches, isolates and finds its server, so another value
// would make it wait for a server it cannot see, expose it, or read
// configuration abtest did not write.
var reserved = map[string]string{
	"port":                    "pass -p instead",
	"unix_socket_directories": "abtest keeps each cluster's socket in a private directory",
	"unix_socket_permissions": "abtest keeps each cluster's socket private (0700)",
	"listen_addresses":        "pass --listen instead",
	"data_directory":          "the data directory is the cluster's name under PG_DATA_DIR",
	"config_file":             "abtest writes the cluster's postgresql.conf",
	"hba_file":                "abtest writes the cluster's pg_hba.conf",
	"ident_file":              "abtest writes the cluster's pg_ident.conf",
}

var gucNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// ParseSetting parses one NAME=VALUE: the name lower-cased, both trimmed.
// It checks the form only; CheckSetting checks the policy.
func ParseSetting(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || !gucNameRE.MatchString(name) {
		return "", "", exitcode.BadInputf("--set %q: want NAME=VALUE with a PostgreSQL setting name, e.g. --set work_mem=64MB", s)
	}
	if strings.ContainsAny(value, "\n\r") {
		return "", "", exitcode.BadInputf("--set %q: the value may not contain a newline", s)
	}
	return strings.ToLower(name), strings.TrimSpace(value), nil
}

// ParseAxis parses NAME=V1[,V2…] into a settings axis: values are split
// on commas outside double quotes, and a value in double quotes keeps its
// commas and loses the quotes (--set 'search_path="a, b",c' is two
// values, "a, b" and "c"). The axis is checked (Axis.CheckSettings).
func ParseAxis(s string) (Axis, error) {
	name, list, err := ParseSetting(s)
	if err != nil {
		return Axis{}, err
	}
	if list == "" {
		return Axis{}, exitcode.BadInputf("--set %q: want GUC=V1[,V2…]", s)
	}
	ax := Axis{Name: name, Values: splitValues(list)}
	return ax, ax.CheckSettings()
}

// ParseVarAxis parses NAME=V1[,V2…] into a pgbench variable axis (the
// values split as ParseAxis does), checked (Axis.CheckVars).
func ParseVarAxis(s string) (Axis, error) {
	name, list, ok := strings.Cut(s, "=")
	if name = strings.TrimSpace(name); !ok || strings.TrimSpace(list) == "" {
		return Axis{}, exitcode.BadInputf("--var %q: want NAME=V1[,V2…], a pgbench variable the workload reads as :NAME", s)
	}
	ax := Axis{Name: name, Values: splitValues(list)}
	return ax, ax.CheckVars()
}

// pgbenchOwnVars are variables pgbench sets for every client itself.
var pgbenchOwnVars = []string{"client_id", "default_seed", "random_seed", "scale"}

// CheckVar refuses a pgbench variable (-D NAME=VALUE) that is not a
// name pgbench accepts, one pgbench sets itself, or a value that is not
// one line.
func CheckVar(name, value string) error {
	if !varNameRE.MatchString(name) {
		return exitcode.BadInputf("--var %s: not a pgbench variable name (letters, digits and _, not starting with a digit)", name)
	}
	if slices.Contains(pgbenchOwnVars, name) {
		return exitcode.BadInputf("--var %s: pgbench sets :%s itself; name the variable otherwise", name, name)
	}
	if strings.ContainsAny(value, "\n\r\x00") {
		return exitcode.BadInputf("--var %s=%q: want a one-line value", name, value)
	}
	return nil
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func splitValues(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// CheckSettings checks a settings axis: checkValues, each value allowed
// by CheckSetting.
func (a Axis) CheckSettings() error { return a.checkValues("--set", CheckSetting) }

// CheckVars checks a variable axis: checkValues, each allowed by
// CheckVar.
func (a Axis) CheckVars() error { return a.checkValues("--var", CheckVar) }

// checkValues checks an axis of flag: at least one value, none empty,
// none twice, each allowed by check.
func (a Axis) checkValues(flag string, check func(name, value string) error) error {
	if len(a.Values) == 0 {
		return exitcode.BadInputf("%s %s: no value", flag, a.Name)
	}
	for i, v := range a.Values {
		if v == "" {
			return exitcode.BadInputf("%s %s: an empty value; quote a value with commas: %s '%s=\"a, b\",c'", flag, a.Name, flag, a.Name)
		}
		if slices.Contains(a.Values[:i], v) {
			return exitcode.BadInputf("%s %s: value %s given twice", flag, a.Name, v)
		}
		if err := check(a.Name, v); err != nil {
			return err
		}
	}
	return nil
}

// CheckSetting applies the policy to one setting: a PostgreSQL setting
// name and a one-line value, not one abtest decides itself, a
// shared_preload_libraries that keeps pg_stat_statements (the samplers
// and probes read it), a pg_stat_statements.max of at least MinPgssMax.
// Whether PostgreSQL accepts the value is the server's to say (the
// cluster asks it with postgres -C).
func CheckSetting(name, value string) error {
	if !gucNameRE.MatchString(name) || strings.ContainsAny(value, "\n\r") {
		return exitcode.BadInputf("--set %s=%q: not a setting name and one-line value", name, value)
	}
	if why, ok := reserved[name]; ok {
		return exitcode.BadInputf("--set %s: abtest sets %s itself; %s", name, name, why)
	}
	switch name {
	case "shared_preload_libraries":
		var libs []string
		for _, l := range strings.Split(value, ",") {
			libs = append(libs, strings.Trim(strings.TrimSpace(l), `"`))
		}
		if !slices.Contains(libs, "pg_stat_statements") {
			return exitcode.BadInputf("--set shared_preload_libraries=%s: it must include pg_stat_statements, which abtest's samplers and probes read", value)
		}
	case PgssMax:
		if n, err := strconv.Atoi(value); err != nil || n < MinPgssMax {
			return exitcode.BadInputf("-m %s: pg_stat_statements.max must be a whole number of at least %d", value, MinPgssMax)
		}
	}
	return nil
}
