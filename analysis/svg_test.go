package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// TestSVGCanvasIsVgsvg: every plot the reports of the fixtures draw
// (strips, TPS by clients and over time, a rate sweep with saturated
// points crossed, the demo's recorded run) is the same bytes drawn on
// newSVG as on vgsvg's canvas.
func TestSVGCanvasIsVgsvg(t *testing.T) {
	inputs := map[string]func() *Input{
		"fixture": func() *Input { return loadFixture(t) },
		"demo":    func() *Input { return load(t, "../internal/demo/testdata/run") },
		"v1":      func() *Input { return load(t, "../results/testdata/v1") },
		"sweep":   func() *Input { return sweepInput(t, false) },
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			fast := drawPlots(t, in(), newCanvas)
			slow := drawPlots(t, in(), func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) })
			if len(fast) == 0 || len(fast) != len(slow) {
				t.Fatalf("%d plots on newSVG, %d on vgsvg", len(fast), len(slow))
			}
			for name, want := range slow {
				if got := fast[name]; !bytes.Equal(got, want) {
					t.Errorf("%s differs from vgsvg's:\n%s", name, firstDiff(got, want))
				}
			}
		})
	}
}

func load(t *testing.T, dir string) *Input {
	t.Helper()
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// drawPlots analyses in and returns its SVG plots by name, drawn on
// the canvases canvas makes.
func drawPlots(t *testing.T, in *Input, canvas func(w, h vg.Length) vg.CanvasWriterTo) map[string][]byte {
	t.Helper()
	defer func(was func(w, h vg.Length) vg.CanvasWriterTo) { newCanvas = was }(newCanvas)
	newCanvas = canvas
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := r.WritePlots(dir, dir); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

// firstDiff shows where got and want part.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return "got:  …" + string(got[from:min(len(got), i+80)]) + "\nwant: …" + string(want[from:min(len(want), i+80)])
}
