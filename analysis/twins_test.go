package analysis

// Tests of the helpers that were written twice (issue 41) and are one
// now: what each former copy did, the merged one still does.

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteDiffsBothSections: one loop writes perf's and the
// instructions' diff profiles, each under its own prefix with the
// configuration made file-safe, records the path relative to relTo,
// and skips an entry without a diff; a link planted at a diff's name
// is refused, never followed, and its target is left as it was.
func TestWriteDiffsBothSections(t *testing.T) {
	p := synthProfile(rand.New(rand.NewPCG(1, 2)), serverMix, 50)
	root := t.TempDir()
	dir := filepath.Join(root, "plots")
	if err := plotsDir(dir); err != nil {
		t.Fatal(err)
	}
	r := &Report{
		TimeWent:     []TimeWent{{Config: "select1/c4/../x", Commit: "patch", diff: p}, {Config: "select1/c8", Commit: "patch"}},
		Instructions: []InstrWent{{Config: "select1/instr/cpuall", Commit: "patch", diff: p}},
	}
	if err := r.writeDiffs(dir, root); err != nil {
		t.Fatal(err)
	}
	want := []struct{ got, path string }{
		{r.TimeWent[0].Diff, "plots/diff-select1_c4_.._x-patch.pb.gz"},
		{r.TimeWent[1].Diff, ""},
		{r.Instructions[0].DiffProfile, "plots/instr-diff-select1_instr_cpuall-patch.pb.gz"},
	}
	for _, w := range want {
		if w.got != w.path {
			t.Errorf("diff recorded as %q, want %q", w.got, w.path)
		}
		if w.path == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, w.path)); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			t.Errorf("%s: %v %v", w.path, fi, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in %s, want the 2 diffs", len(entries), dir)
	}

	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "instr-diff-other-patch.pb.gz")); err != nil {
		t.Fatal(err)
	}
	r = &Report{Instructions: []InstrWent{{Config: "other", Commit: "patch", diff: p}}}
	if err := r.writeDiffs(dir, root); err == nil || r.Instructions[0].DiffProfile != "" {
		t.Errorf("through a planted link: err %v, recorded %q", err, r.Instructions[0].DiffProfile)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target became %q", b)
	}
}
