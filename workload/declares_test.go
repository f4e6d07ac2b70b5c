package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// TestWorkloadDirectives: -- abtest:primary and -- abtest:ops-per-tx
// anywhere after the first line, before or after the metric they name,
// without cutting the section they stand in.
func TestWorkloadDirectives(t *testing.T) {
	w, err := parseFile("x", `-- abtest:setup
CREATE TABLE IF NOT EXISTS q (id int);
-- abtest:primary delivery_p99_ms
-- abtest:script
INSERT INTO q SELECT g FROM generate_series(1, :batch) g;
-- abtest:ops-per-tx :batch
SELECT 1;
-- abtest:metric delivery_p99_ms unit=ms direction=lower
SELECT 1
`)
	if err != nil {
		t.Fatal(err)
	}
	if w.Primary != "delivery_p99_ms" || w.OpsPerTx != ":batch" || (w.Declares() != results.WorkloadDeclares{Primary: "delivery_p99_ms", OpsPerTx: ":batch"}) {
		t.Errorf("declares %+v", w.Declares())
	}
	if w.Script != "INSERT INTO q SELECT g FROM generate_series(1, :batch) g;\nSELECT 1;\n" || strings.Contains(w.Setup+w.Script, "abtest:") {
		t.Errorf("script %q, setup %q", w.Script, w.Setup)
	}
	for _, c := range []struct{ text, primary, ops string }{
		{"-- abtest:script\nSELECT 1;\n-- abtest:primary latency_p99_ms\n-- abtest:ops-per-tx 2.5\n", "latency_p99_ms", "2.5"},
		{"-- abtest:primary tps\n-- abtest:script\nSELECT 1;\n", "tps", ""},
		{"-- abtest:script\nSELECT 1;\n", "", ""},
	} {
		w, err := parseFile("x", c.text)
		if err != nil || w.Primary != c.primary || w.OpsPerTx != c.ops {
			t.Errorf("%q: %+v, %v", c.text, w.Declares(), err)
		}
	}
}

// TestWorkloadDirectivesRefused: a directive that is not what it must
// be is exit 2 in one line naming its line, hostile text included.
func TestWorkloadDirectivesRefused(t *testing.T) {
	const script = "-- abtest:script\nSELECT 1;\n"
	for _, c := range []struct{ text, want string }{
		{script + "-- abtest:primary nope\n", "line 3: -- abtest:primary nope: no such metric"},
		{script + "-- abtest:primary\n", "line 3"},
		{script + "-- abtest:primary a b\n", "line 3"},
		{script + "-- abtest:primary <script>alert(1)</script>\n", "line 3"},
		{script + "-- abtest:primary tps\n-- abtest:primary latency_p99_ms\n", "line 4: \"-- abtest:primary latency_p99_ms\": a second -- abtest:primary (line 3 has one)"},
		{script + "-- abtest:primary pgss_entries\n", "descriptive"},
		{script + "-- abtest:metric ratio direction=descriptive\nSELECT 1\n-- abtest:primary ratio\n", "line 5: -- abtest:primary ratio: ratio is descriptive"},
		{script + "-- abtest:ops-per-tx\n", "line 3"},
		{script + "-- abtest:ops-per-tx 0\n", "line 3: -- abtest:ops-per-tx \"0\": want a positive number"},
		{script + "-- abtest:ops-per-tx -1\n", "line 3"},
		{script + "-- abtest:ops-per-tx NaN\n", "line 3"},
		{script + "-- abtest:ops-per-tx 1e999\n", "line 3"},
		{script + "-- abtest:ops-per-tx 1e7\n", "up to"},
		{script + "-- abtest:ops-per-tx batch\n", "line 3"},
		{script + "-- abtest:ops-per-tx :batch;DROP TABLE x\n", "line 3"},
		{script + "-- abtest:ops-per-tx :\n", "line 3"},
		{script + "-- abtest:ops-per-tx 1\n-- abtest:ops-per-tx 2\n", "line 4"},
		{script + "-- abtest:primaryx tps\n", "line 3"},
		{script + "-- abtest:ops-per-tx \x1b[2J\n", "line 3"},
		// In a plain script pgbench would read it as a comment: the
		// declaration would silently not be.
		{"SELECT 1;\n-- abtest:ops-per-tx 10\n", "line 2"},
		{"\n-- abtest:script\nSELECT 1;\n", "line 2"},
	} {
		_, err := parseFile("x", c.text)
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("%q: %v; want exit 2 in one line with %q", c.text, err, c.want)
		}
	}
}

// TestShippedDeclares: the shipped sweep workloads count their pings
// (:batch a transaction); the seed-002 producer is judged by its
// delivery p99, one message a transaction.
func TestShippedDeclares(t *testing.T) {
	for name, want := range map[string]results.WorkloadDeclares{
		"ping.sql":      {OpsPerTx: ":batch"},
		"heartbeat.sql": {OpsPerTx: ":batch"},
		"ticker.sql":    {Primary: "delivery_p99_ms", OpsPerTx: "1"},
		"queue.sql":     {Primary: "delivery_p99_ms", OpsPerTx: "1"},
	} {
		w, err := Resolve("file:" + filepath.Join("..", "examples", name))
		if err != nil || w.Declares() != want {
			t.Errorf("%s: %+v, %v; want %+v", name, w.Declares(), err, want)
		}
	}
	// A directive in a file of one's own is read through the same door.
	dir := t.TempDir()
	f := filepath.Join(dir, "w.sql")
	if err := os.WriteFile(f, []byte("-- abtest:script\nSELECT 1;\n-- abtest:ops-per-tx 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := Resolve("file:" + f); err != nil || w.OpsPerTx != "3" || w.Name != "w" {
		t.Errorf("%+v, %v", w, err)
	}
}
