package nightly

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// TestNightlyAxes: nightly.toml's vars, settings and conditions are a
// night's axes as matrix --var, --set and --condition make them (a
// condition's own settings included), and a bad one is refused at load
// as matrix refuses its flag.
func TestNightlyAxes(t *testing.T) {
	nc := loadNightly(t, `[matrix]
workloads = ["select1"]
clients = [4]
pgss_max = [1000]
repeats = 2
conditions = ["none", "idle-slot"]
[matrix.vars]
batch = ["1", "10"]
[matrix.settings]
work_mem = ["4MB", "64MB"]
`)
	head, base := strings.Repeat("b", 40), strings.Repeat("a", 40)
	req := Request(nc, head, base, 1)
	if _, err := req.Check(); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, req)
	var ids []string
	for _, c := range p.Configs {
		ids = append(ids, c.ID())
	}
	if len(ids) != 2*2*2 || ids[0] != "select1/c4/cpuall/:batch=1/pgss.max=1000/wal_level=logical/work_mem=4MB" ||
		ids[1] != "select1/c4/cpuall/:batch=1/cond=idle-slot/pgss.max=1000/wal_level=logical/work_mem=4MB" {
		t.Errorf("configurations %v", ids)
	}
	for name, toml := range map[string]string{
		"a variable pgbench sets":       "[matrix.vars]\nclient_id = [\"1\"]\n",
		"a reserved setting":            "[matrix.settings]\nport = [\"5433\"]\n",
		"preload without pgss":          "[matrix.settings]\nshared_preload_libraries = [\"auto_explain\"]\n",
		"a setting against a condition": "conditions = [\"idle-slot\"]\n[matrix.settings]\nwal_level = [\"replica\"]\n",
		"an empty variable value":       "[matrix.vars]\nbatch = [\"\"]\n",
	} {
		nc := loadNightly(t, "[matrix]\nworkloads = [\"select1\"]\n"+toml)
		req := Request(nc, head, base, 1)
		if _, err := req.Check(); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: %v, want bad input", name, err)
		}
	}
}

// TestNightlyKeysAreTheRegistrys: every axis of results.Axes with a
// nightly key is a key of nightly.toml's [matrix], its value the axis'
// in a night's request (a list's items, a table's NAME=V1,V2); an axis
// added to the registry needs no change here.
func TestNightlyKeysAreTheRegistrys(t *testing.T) {
	n := 0
	for _, d := range results.Axes {
		if d.TOML == "" {
			continue
		}
		n++
		toml, want := d.TOML+" = [\"v1\", 2]\n", "[v1 2]"
		if d.Flag.Each {
			toml, want = "[matrix."+d.TOML+"]\nx = [\"a,b\", 1.5]\n", `[pg_stat_statements.max=5000 x="a,b",1.5]`
			if d.Name != "settings" {
				want = `[x="a,b",1.5]`
			}
		}
		nc := loadNightly(t, "[matrix]\n"+toml)
		if got := fmt.Sprint(Request(nc, "h", "b", 1).Axes[d.Name]); got != want {
			t.Errorf("axis %s: nightly key %s gives %s, want %s", d.Name, d.TOML, got, want)
		}
	}
	if n < 6 {
		t.Errorf("%d axes with a nightly key, want clients, cpus, rates, vars, conditions, settings", n)
	}
}

// TestNightlyBadAxisValue: a bad value of any axis key is refused when
// the configuration is read, before a night writes anything: one line,
// exit 2, naming the file; so is a key no axis has and a value of the
// wrong shape.
func TestNightlyBadAxisValue(t *testing.T) {
	for name, toml := range map[string]string{
		"a client count":     "clients = [\"many\"]",
		"zero CPUs":          "cpus = [0]",
		"a rate":             "rates = [\"fast\"]",
		"ops and tx":         "rates = [\"500tx\", \"2000ops\"]",
		"a condition":        "conditions = [\"hurricane\"]",
		"a condition twice":  "conditions = [\"idle-slot\", \"idle-slot\"]",
		"a variable":         "vars = { \"1x\" = [\"1\"] }",
		"a setting":          "settings = { port = [\"1\"] }",
		"a table of tables":  "settings = { work_mem = { a = 1 } }",
		"a list in a list":   "clients = [[1, 2]]",
		"a boolean":          "cpus = true",
		"a key of no axis":   "think_ms = [5]",
		"pgss_max and --set": "settings = { \"pg_stat_statements.max\" = [\"1000\"] }",
	} {
		root := filepath.Join(t.TempDir(), "root")
		f := filepath.Join(t.TempDir(), "nightly.toml")
		os.WriteFile(f, []byte("root = \""+root+"\"\n[matrix]\n"+toml+"\n"), 0o644)
		_, _, err := Load(f, "/h", func(string) string { return "" }, nil)
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v; want exit 2, one line naming %s", name, err, f)
		}
		if _, serr := os.Stat(root); serr == nil {
			t.Errorf("%s: a refused configuration wrote %s", name, root)
		}
	}
}
