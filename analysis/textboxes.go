package analysis

import (
	"math"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// measuredText is text.Plain with the boxes of the texts it measured
// remembered: the layout of every plot measures its tick labels, title
// and legend, each several times, and gonum's font.Face.Width allocates
// its buffers on every call (at 10⁵ cells, an eighth of what writing the
// plots allocated). A box is a function of the font cache, the font and
// the text, so a remembered one is the box measured again.
type measuredText struct {
	text.Plain
	boxes *sync.Map // of textKey → [3]vg.Length; the plots of one report drawn by several workers
}

type textKey struct {
	fonts *font.Cache
	font  font.Font
	txt   string
}

func (h measuredText) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	k := textKey{h.Fonts, fnt, txt}
	if b, ok := h.boxes.Load(k); ok {
		b := b.([3]vg.Length)
		return b[0], b[1], b[2]
	}
	width, height, depth = h.Plain.Box(txt, fnt)
	h.boxes.Store(k, [3]vg.Length{width, height, depth})
	return width, height, depth
}

// Draw is text.Plain's Draw, the widths of its lines remembered beside
// the boxes (font.Face.Width in Draw was 7 MB of garbage at 10⁵ cells).
func (h measuredText) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	txt = strings.TrimRight(txt, "\n")
	if len(txt) == 0 {
		return
	}
	fnt := h.Fonts.Lookup(sty.Font, sty.Font.Size)
	c.SetColor(sty.Color)
	if sty.Rotation != 0 {
		c.Push()
		c.Rotate(sty.Rotation)
	}
	sin64, cos64 := math.Sincos(sty.Rotation)
	cos := vg.Length(cos64)
	sin := vg.Length(sin64)
	pt.X, pt.Y = pt.Y*sin+pt.X*cos, pt.Y*cos-pt.X*sin
	lines := h.Lines(txt)
	ht := sty.Height(txt)
	pt.Y += ht*vg.Length(sty.YAlign) - fnt.Extents().Ascent
	for i, line := range lines {
		xoffs := vg.Length(sty.XAlign) * h.width(fnt, line)
		n := vg.Length(len(lines) - i)
		c.FillString(fnt, pt.Add(vg.Point{X: xoffs, Y: n * sty.Font.Size}), line)
	}
	if sty.Rotation != 0 {
		c.Pop()
	}
}

// width is fnt.Width(line), remembered as the boxes are.
func (h measuredText) width(fnt font.Face, line string) vg.Length {
	k := widthKey{textKey{h.Fonts, fnt.Font, line}}
	if w, ok := h.boxes.Load(k); ok {
		return w.(vg.Length)
	}
	w := fnt.Width(line)
	h.boxes.Store(k, w)
	return w
}

// widthKey is a width's key among the boxes.
type widthKey struct{ textKey }

// measured has every text of p measured by a measuredText of boxes,
// where p's handler is a text.Plain (plot.New's).
func measured(p *plot.Plot, boxes *sync.Map) {
	plain, ok := p.TextHandler.(text.Plain)
	if !ok {
		return
	}
	h := measuredText{plain, boxes}
	for _, sty := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.X.Tick.Label, &p.Y.Label.TextStyle, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		if sty.Handler == p.TextHandler {
			sty.Handler = h
		}
	}
	p.TextHandler = h
}
