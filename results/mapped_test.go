package results

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReadPlanMapped: a plan read from its file mapped (and unmapped
// once decoded) is the plan decoded from the file's bytes read, by the
// fast path and by json.Unmarshal's (an escaped string makes the fast
// path give up); comparing them reads every string of the first, which
// would fault had one stayed in the mapping. An empty file and a
// directory fail as reading them fails.
func TestReadPlanMapped(t *testing.T) {
	v1, err := os.ReadFile("testdata/v1/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]string{
		"v1":      string(v1),
		"escaped": `{"version":2,"commits":[{"label":"b\u0061se"}],"cells":[{"id":"x\u0031","commit":"base","workload":"w","settings":{"a":"1"}}],"options":{"workloads":["w\u0032"]}}`,
		"empty":   ``,
	}
	for name, text := range plans {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, PlanFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, gotErr := ReadPlan(dir)
		want, wantErr := DecodePlan([]byte(text), filepath.Join(dir, PlanFile))
		if name != "empty" && (gotErr != nil || len(got.Cells) == 0) {
			t.Fatalf("%s: %v, %d cells", name, gotErr, len(got.Cells))
		}
		if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: ReadPlan = %+v, %v; DecodePlan of the bytes = %+v, %v", name, got, gotErr, want, wantErr)
		}
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, PlanFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlan(dir); err == nil {
		t.Error("a plan.json that is a directory read")
	}
}
