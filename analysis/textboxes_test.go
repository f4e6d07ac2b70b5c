package analysis

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestMeasuredTextIsPlain: measuredText measures and draws texts (of
// several lines, rotated, aligned, twice over, the second time from
// what it remembered) as text.Plain does.
func TestMeasuredTextIsPlain(t *testing.T) {
	plain := plot.New().TextHandler.(text.Plain)
	var boxes sync.Map
	mt := measuredText{plain, &boxes}
	texts := []string{"TPS", "churn/c64/cpuall/pgss.max=5000", "two\nlines", "1000\n", "", "µs ±3 %"}
	draw := func(h text.Handler) []byte {
		c := newSVG(plotW, plotH)
		defer c.release()
		for round := range 2 {
			for i, txt := range texts {
				sty := text.Style{Font: plain.Fonts.Lookup(plot.DefaultFont, vg.Points(float64(8+i))).Font, Handler: h,
					XAlign: draw.XAlignment(-0.5 * float64(i%3)), YAlign: draw.YAlignment(-0.5 * float64(round)), Rotation: float64(i%2) * math.Pi / 2}
				h.Draw(c, txt, sty, vg.Point{X: vg.Length(10 * i), Y: vg.Length(20 * round)})
				w, ht, d := h.Box(txt, sty.Font)
				fmt.Fprintf(c.buf, "box %v %v %v\n", w, ht, d)
			}
		}
		return bytes.Clone(c.buf.Bytes())
	}
	if got, want := draw(mt), draw(plain); !bytes.Equal(got, want) {
		t.Errorf("measuredText draws\n%s\ntext.Plain\n%s", got, want)
	}
}
