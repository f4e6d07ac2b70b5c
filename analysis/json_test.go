package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

// TestJSONShape: what jq users rely on: a schema version, lists that
// are lists when empty, configurations as objects, no p for the
// baseline.
func TestJSONShape(t *testing.T) {
	r, _ := fixtureReport(t)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema_version"] != float64(SchemaVersion) {
		t.Errorf("schema_version = %v", doc["schema_version"])
	}
	for _, k := range []string{"warnings", "failed", "saturated", "incomplete", "regressions", "changes", "rows", "tiers", "geomeans", "summaries"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("%s = %#v, want a list", k, doc[k])
		}
	}
	rows := doc["rows"].([]any)
	for _, x := range rows {
		row := x.(map[string]any)
		cfg, ok := row["configuration"].(map[string]any)
		if !ok || cfg["workload"] == nil || cfg["clients"] == nil || cfg["cpus"] == nil || cfg["settings"] == nil {
			t.Fatalf("row %v: configuration %#v", row["config"], row["configuration"])
		}
		for _, s := range row["stats"].([]any) {
			st := s.(map[string]any)
			if st["verdict"] != "baseline" {
				continue
			}
			for _, k := range []string{"p", "delta_pct", "delta_lo_pct", "delta_hi_pct", "min_effect_pct"} {
				if _, ok := st[k]; ok {
					t.Errorf("baseline of %v %v has %s", row["config"], row["metric"], k)
				}
			}
		}
	}
	ch := doc["changes"].([]any)[0].(map[string]any)
	if _, ok := ch["configuration"].(map[string]any); !ok {
		t.Errorf("change without configuration: %v", ch)
	}
}

// TestTextGolden: the plain-text report, and no line wider than 80
// columns in it.
func TestTextGolden(t *testing.T) {
	r, _ := fixtureReport(t)
	r.Dirs = []string{"run"}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "report.txt", buf.String())
	for i, line := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
		for _, md := range []string{"**", "| ", "##", "`"} {
			if strings.Contains(line, md) {
				t.Errorf("line %d has markdown %q: %q", i+1, md, line)
			}
		}
	}
}
