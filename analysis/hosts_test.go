package analysis

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// TestMixedHostKinds: shards on two nodes of one kind merge without a
// word; a shard on another kind of host (CPU model and count) makes the
// report say which shard ran on which kind, in markdown and JSON.
func TestMixedHostKinds(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "s1"), filepath.Join(root, "s2")
	fixture(t, a, matrix.Shard{I: 1, N: 2})
	fixture(t, b, matrix.Shard{I: 2, N: 2})
	setHost := func(hostname, cpu string, nproc int) {
		p, err := results.ReadPlan(b)
		if err != nil {
			t.Fatal(err)
		}
		p.Host.Hostname, p.Host.CPU, p.Host.NProc = hostname, cpu, nproc
		if err := results.WritePlan(b, p); err != nil {
			t.Fatal(err)
		}
	}
	mixed := func(in *Input) string {
		for _, w := range in.Warnings {
			if strings.HasPrefix(w, "mixed host kinds") {
				return w
			}
		}
		return ""
	}

	setHost("bench2", "Test CPU", 2)
	in, err := Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if w := mixed(in); w != "" {
		t.Errorf("two nodes of one kind: %q", w)
	}

	setHost("bench2", "Other CPU", 8)
	in, err = Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	w := mixed(in)
	for _, want := range []string{"2 kinds of host", "1/2 on bench1: Test CPU × 2, 24 GiB, kernel 6.1.0", "2/2 on bench2: Other CPU × 8, 24 GiB, kernel 6.1.0"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	rep, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Warnings []string }
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), w) || !strings.Contains(strings.Join(doc.Warnings, "\n"), w) {
		t.Errorf("the report does not say the hosts differ:\n%s", md.String())
	}
}
