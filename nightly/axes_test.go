package nightly

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/config"
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
	if err := req.Check(); err != nil {
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
		if err := req.Check(); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: %v, want bad input", name, err)
		}
	}
}

// TestNightlyKeysAreTheRegistrys: every axis of results.Axes with a
// nightly key is a key of nightly.toml's [matrix].
func TestNightlyKeysAreTheRegistrys(t *testing.T) {
	keys := map[string]bool{}
	ty := reflect.TypeOf(config.NightlyMatrix{})
	for i := range ty.NumField() {
		keys[ty.Field(i).Tag.Get("toml")] = true
	}
	n := 0
	for _, d := range results.Axes {
		if d.TOML != "" {
			n++
			if !keys[d.TOML] {
				t.Errorf("axis %s: nightly key %s is not in config.NightlyMatrix", d.Name, d.TOML)
			}
		}
	}
	if n < 6 {
		t.Errorf("%d axes with a nightly key, want clients, cpus, rates, vars, conditions, settings", n)
	}
}
