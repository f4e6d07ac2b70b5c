package analysis

// An SVG canvas for gonum/plot that writes what vgsvg writes, byte for
// byte, faster: vgsvg formats every path command, colour and style with
// fmt (and svgo's fmt again around it), which was most of drawing the
// plots of 10⁵ cells (2.4 of 5.7 CPU seconds of `analyze --format md`).
// Here numbers are appended with strconv, which fmt's %g calls; the
// rare elements (text, transforms) keep vgsvg's format strings.
// TestSVGCanvasIsVgsvg holds the bytes to vgsvg's.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	xfnt "golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// svgPrec is vgsvg's precision of the numbers it writes (%.5g).
const svgPrec = 5

// svgCanvas is a vg.Canvas drawing an SVG document, as vgsvg.New does
// (fonts not embedded).
type svgCanvas struct {
	w, h  vg.Length
	buf   *bytes.Buffer // from svgBufs, back there by release
	stack []svgContext
	nums  *svgNums // from svgNumsPool, back there by release
	// rgba and rgbaHex are the last colour svgColor wrote, and how:
	// paths of one colour follow each other (a string per path was a
	// twentieth of what writing the plots of 10⁵ cells allocated).
	rgba    [4]uint32
	rgbaHex string
}

type svgContext struct {
	color      color.Color
	dashArray  []vg.Length
	dashOffset vg.Length
	lineWidth  vg.Length
	gEnds      int
}

// svgBufs are the documents of canvases released: made new for each
// plot, and grown to 100–760 kB, they were a sixth of what writing the
// plots of 10⁵ cells allocated.
var svgBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// svgNumsPool are the numbers of canvases released (8 kB a canvas, 2.3
// MB for the plots of 10⁵ cells): what strconv made of a number's bits
// holds for any canvas.
var svgNumsPool = sync.Pool{New: func() any { return new(svgNums) }}

// newSVG returns a w × h canvas.
func newSVG(w, h vg.Length) *svgCanvas {
	buf := svgBufs.Get().(*bytes.Buffer)
	buf.Reset()
	c := &svgCanvas{w: w, h: h, buf: buf, stack: []svgContext{{}}, nums: svgNumsPool.Get().(*svgNums)}
	// The origin at the bottom left; closed by WriteTo.
	c.group(fmt.Sprintf("scale(1, -1) translate(0, -%.*g)", svgPrec, c.h.Points()))
	vg.Initialize(c)
	return c
}

func (c *svgCanvas) Size() (w, h vg.Length) { return c.w, c.h }

func (c *svgCanvas) context() *svgContext { return &c.stack[len(c.stack)-1] }

func (c *svgCanvas) SetLineWidth(w vg.Length) { c.context().lineWidth = w }

func (c *svgCanvas) SetLineDash(dashes []vg.Length, offs vg.Length) {
	c.context().dashArray = dashes
	c.context().dashOffset = offs
}

func (c *svgCanvas) SetColor(clr color.Color) { c.context().color = clr }

func (c *svgCanvas) Rotate(rot float64) {
	c.group(fmt.Sprintf("rotate(%g)", rot*180/math.Pi))
	c.context().gEnds++
}

func (c *svgCanvas) Translate(pt vg.Point) {
	c.group(fmt.Sprintf("translate(%.*g, %.*g)", svgPrec, pt.X.Points(), svgPrec, pt.Y.Points()))
	c.context().gEnds++
}

func (c *svgCanvas) Scale(x, y float64) {
	c.group(fmt.Sprintf("scale(%g,%g)", x, y))
	c.context().gEnds++
}

func (c *svgCanvas) Push() {
	top := *c.context()
	top.gEnds = 0
	c.stack = append(c.stack, top)
}

func (c *svgCanvas) Pop() {
	for range c.context().gEnds {
		c.buf.WriteString("</g>\n")
	}
	c.stack = c.stack[:len(c.stack)-1]
}

// group opens a <g transform=…> (svgo's Gtransform).
func (c *svgCanvas) group(transform string) {
	c.buf.WriteString(`<g transform="`)
	c.buf.WriteString(transform)
	c.buf.WriteString("\">\n")
}

func (c *svgCanvas) Stroke(path vg.Path) {
	ctx := c.context()
	if ctx.lineWidth.Points() <= 0 {
		return
	}
	st := c.startPath(path)
	st.add("fill", "#000000", "none")
	st.add("stroke", "none", c.color(ctx.color))
	st.addNumber("stroke-opacity", "1", opacity(ctx.color))
	st.addNumber("stroke-width", "1", ctx.lineWidth.Points())
	st.add("stroke-dasharray", "none", c.dashes())
	st.addNumber("stroke-dashoffset", "0", ctx.dashOffset.Points())
	st.end()
}

func (c *svgCanvas) Fill(path vg.Path) {
	ctx := c.context()
	st := c.startPath(path)
	st.add("fill", "#000000", c.color(ctx.color))
	st.addNumber("fill-opacity", "1", opacity(ctx.color))
	st.end()
}

// startPath writes a path's element up to its style, which the
// returned svgStyle writes.
func (c *svgCanvas) startPath(path vg.Path) svgStyle {
	c.buf.WriteString(`<path d="`)
	c.pathData(path)
	c.buf.WriteString(`" `)
	return svgStyle{c: c, at: c.buf.Len()}
}

// svgStyle writes a style attribute of the elements whose values are
// not their defaults; svgo ends the element with " />" either way.
type svgStyle struct {
	c  *svgCanvas
	at int // where the attribute starts
}

func (s svgStyle) add(key, def, val string) {
	if val == def {
		return
	}
	s.key(key)
	s.c.buf.WriteString(val)
}

// addNumber is add of v as %.5g, not made a string.
func (s svgStyle) addNumber(key, def string, v float64) {
	num := s.c.nums.format(v)
	if string(num) == def {
		return
	}
	s.key(key)
	s.c.buf.Write(num)
}

// key starts the attribute or adds a property to it, up to its value.
func (s svgStyle) key(key string) {
	b := s.c.buf
	if b.Len() == s.at {
		b.WriteString(`style="`)
	} else {
		b.WriteByte(';')
	}
	b.WriteString(key)
	b.WriteByte(':')
}

func (s svgStyle) end() {
	if s.c.buf.Len() > s.at {
		s.c.buf.WriteByte('"')
	}
	s.c.buf.WriteString(" />\n")
}

// float appends v as %.5g to the document.
func (c *svgCanvas) float(v float64) { c.buf.Write(c.nums.format(v)) }

// svgNums remembers numbers as formatted, by their bits, one per slot
// (the last of a slot's): a plot's numbers recur (a ring glyph's ten
// are its radius, its centre's y and its centre's x ± the radius, the
// x the same for every repeat of a client count; a progress line's x
// are the same for every line), and strconv's %.5g was a quarter of
// drawing the plots of 10⁵ cells (0.16 of 0.6 CPU-s). A number is
// formatted by strconv or copied from what strconv made of the same
// bits, so the bytes are strconv's.
type svgNums struct {
	slot    [1 << svgNumBits]svgNum
	scratch []byte
}

const svgNumBits = 8

type svgNum struct {
	bits uint64
	n    uint8 // len of text; 0: empty
	text [23]byte
}

// format returns v as %.5g, valid until the next call.
func (t *svgNums) format(v float64) []byte {
	bits := math.Float64bits(v)
	e := &t.slot[(bits*0x9E3779B97F4A7C15)>>(64-svgNumBits)]
	if e.n > 0 && e.bits == bits {
		return e.text[:e.n]
	}
	t.scratch = strconv.AppendFloat(t.scratch[:0], v, 'g', svgPrec, 64)
	if len(t.scratch) <= len(e.text) {
		e.bits, e.n = bits, uint8(copy(e.text[:], t.scratch))
	}
	return t.scratch
}

// point appends the command letter cmd (0: none) and x,y.
func (c *svgCanvas) point(cmd byte, x, y float64) {
	if cmd != 0 {
		c.buf.WriteByte(cmd)
	}
	c.float(x)
	c.buf.WriteByte(',')
	c.float(y)
}

func (c *svgCanvas) pathData(path vg.Path) {
	var x, y float64
	for _, comp := range path {
		switch comp.Type {
		case vg.MoveComp:
			x, y = comp.Pos.X.Points(), comp.Pos.Y.Points()
			c.point('M', x, y)
		case vg.LineComp:
			x, y = comp.Pos.X.Points(), comp.Pos.Y.Points()
			c.point('L', x, y)
		case vg.ArcComp:
			r := comp.Radius.Points()
			sin, cos := math.Sincos(comp.Start)
			x0 := comp.Pos.X.Points() + r*cos
			y0 := comp.Pos.Y.Points() + r*sin
			if x0 != x || y0 != y {
				c.point('L', x0, y0)
			}
			if math.Abs(comp.Angle) >= 2*math.Pi {
				x, y = c.circle(&comp)
			} else {
				x, y = c.arc(&comp)
			}
		case vg.CurveComp:
			if len(comp.Control) != 1 && len(comp.Control) != 2 {
				panic("vgsvg: invalid number of control points")
			}
			c.buf.WriteByte("QC"[len(comp.Control)-1])
			for _, p := range comp.Control {
				c.point(0, p.X.Points(), p.Y.Points())
				c.buf.WriteByte(',')
			}
			x, y = comp.Pos.X.Points(), comp.Pos.Y.Points()
			c.point(0, x, y)
		case vg.CloseComp:
			c.buf.WriteByte('Z')
		default:
			panic(fmt.Sprintf("vgsvg: unknown path component type: %d", comp.Type))
		}
	}
}

// circle writes a full circle as two arcs (SVG draws no arc whose ends
// are one point), as vgsvg does.
func (c *svgCanvas) circle(comp *vg.PathComp) (x, y float64) {
	angle := 2 * math.Pi
	if comp.Angle < 0 {
		angle = -2 * math.Pi
	}
	// vgsvg's remainder, rounded as it rounds.
	q := comp.Angle / (2 * math.Pi)
	angle += (q - math.Trunc(q)) * (2 * math.Pi)
	if angle >= 4*math.Pi {
		panic("Impossible angle")
	}
	s0, c0 := math.Sincos(comp.Start + 0.5*angle)
	s1, c1 := math.Sincos(comp.Start + angle)
	r := comp.Radius.Points()
	x0 := comp.Pos.X.Points() + r*c0
	y0 := comp.Pos.Y.Points() + r*s0
	x = comp.Pos.X.Points() + r*c1
	y = comp.Pos.Y.Points() + r*s1
	c.arcTo(r, angle/2, x0, y0)
	c.arcTo(r, angle/2, x, y)
	return x, y
}

func (c *svgCanvas) arc(comp *vg.PathComp) (x, y float64) {
	r := comp.Radius.Points()
	sin, cos := math.Sincos(comp.Start + comp.Angle)
	x = comp.Pos.X.Points() + r*cos
	y = comp.Pos.Y.Points() + r*sin
	c.arcTo(r, comp.Angle, x, y)
	return x, y
}

// arcTo writes "A r,r 0 large sweep x,y" for an arc of angle a.
func (c *svgCanvas) arcTo(r, a, x, y float64) {
	c.point('A', r, r)
	c.buf.WriteString(" 0 ")
	c.buf.WriteByte("01"[svgLarge(a)])
	c.buf.WriteByte(' ')
	c.buf.WriteByte("01"[svgSweep(a)])
	c.buf.WriteByte(' ')
	c.point(0, x, y)
}

func svgSweep(a float64) int {
	if a < 0 {
		return 0
	}
	return 1
}

func svgLarge(a float64) int {
	if math.Abs(a) >= math.Pi {
		return 1
	}
	return 0
}

// dashes is the dash array as vgsvg spells it ("none" for none).
func (c *svgCanvas) dashes() string {
	ds := c.context().dashArray
	if len(ds) == 0 {
		return "none"
	}
	var b []byte
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, d.Points(), 'g', svgPrec, 64)
	}
	return string(b)
}

// color is svgColor(clr), remembered from the last call.
func (c *svgCanvas) color(clr color.Color) string {
	if clr == nil {
		clr = color.Black
	}
	r, g, b, a := clr.RGBA()
	if rgba := [4]uint32{r, g, b, a}; rgba != c.rgba || c.rgbaHex == "" {
		c.rgba, c.rgbaHex = rgba, svgColor(clr)
	}
	return c.rgbaHex
}

// svgColor is clr as #RRGGBB, un-premultiplied as vgsvg does.
func svgColor(clr color.Color) string {
	if clr == nil {
		clr = color.Black
	}
	r, g, b, a0 := clr.RGBA()
	a := 255.0 / float64(a0)
	out := []byte{'#'}
	for _, v := range [...]uint32{r, g, b} {
		x := int(float64(v) * a)
		if x < 0 || x > 255 {
			return fmt.Sprintf("#%02X%02X%02X", int(float64(r)*a), int(float64(g)*a), int(float64(b)*a))
		}
		out = append(out, "0123456789ABCDEF"[x>>4], "0123456789ABCDEF"[x&15])
	}
	return string(out)
}

// opacity is clr's alpha, to be written as %.5g.
func opacity(clr color.Color) float64 {
	if clr == nil {
		clr = color.Black
	}
	_, _, _, a := clr.RGBA()
	return float64(a) / math.MaxUint16
}

// FillString writes str at pt in font fnt, escaped, as vgsvg does.
func (c *svgCanvas) FillString(fnt font.Face, pt vg.Point, str string) {
	var parts []string
	if name := svgFontDescr(fnt); name != "" {
		parts = append(parts, name)
	}
	if size := fmt.Sprintf("%.*gpx", svgPrec, fnt.Font.Size.Points()); size != "medium" {
		parts = append(parts, "font-size:"+size)
	}
	if clr := svgColor(c.context().color); clr != "#000000" {
		parts = append(parts, "fill:"+clr)
	}
	sty := ""
	if len(parts) > 0 {
		sty = "\n\t" + `style="` + strings.Join(parts, ";") + `"`
	}
	fmt.Fprintf(c.buf, `<text x="%.*g" y="%.*g" transform="scale(1, -1)"%s>%s</text>`+"\n",
		svgPrec, pt.X.Points(), svgPrec, -pt.Y.Points(), sty, html.EscapeString(str))
}

// DrawImage embeds img as a PNG, as vgsvg does (its data URL says jpg).
func (c *svgCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Errorf("vgsvg: error encoding image to PNG: %+v", err))
	}
	str := "data:image/jpg;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	size := rect.Size()
	width, height := size.X.Points(), size.Y.Points()
	xmin, ymin := rect.Min.X.Points(), rect.Min.Y.Points()
	fmt.Fprintf(c.buf, `<image x="%v" y="%v" width="%v" height="%v" xlink:href="%s" %s />`+"\n",
		xmin, -ymin-height, width, height, str, `transform="scale(1, -1)"`)
}

// svgFontDescr is the font's CSS, as vgsvg spells it.
func svgFontDescr(fnt font.Face) string {
	var buf sfnt.Buffer
	family, err := fnt.Face.Name(&buf, sfnt.NameIDFamily)
	if err != nil {
		panic(fmt.Errorf("vgsvg: could not extract family name from font %q: %+v", fnt.Font.Typeface, err))
	}
	variant := strings.ToLower(string(fnt.Font.Variant))
	switch variant {
	case "smallcaps":
		variant = "small-caps"
	case "mono", "monospace", "sans", "sansserif", "sans-serif", "serif":
		variant = "normal"
	case "":
		variant = "none"
	}
	var style string
	switch fnt.Font.Style {
	case xfnt.StyleNormal:
		style = "normal"
	case xfnt.StyleItalic:
		style = "italic"
	case xfnt.StyleOblique:
		style = "oblique"
	default:
		panic(fmt.Errorf("vgsvg: invalid font style %+v (v=%d)", fnt.Font.Style, int(fnt.Font.Style)))
	}
	weight := map[xfnt.Weight]string{xfnt.WeightThin: "100", xfnt.WeightExtraLight: "200", xfnt.WeightLight: "300",
		xfnt.WeightNormal: "normal", xfnt.WeightMedium: "500", xfnt.WeightSemiBold: "600", xfnt.WeightBold: "bold",
		xfnt.WeightExtraBold: "800", xfnt.WeightBlack: "900"}[fnt.Font.Weight]
	if weight == "" {
		panic(fmt.Errorf("vgsvg: invalid font weight %+v (v=%d)", fnt.Font.Weight, int(fnt.Font.Weight)))
	}
	return "font-family:" + family + ";font-variant:" + variant + ";font-weight:" + weight + ";font-style:" + style
}

// WriteTo writes the document: vgsvg's prelude, what was drawn, and the
// groups still open closed.
func (c *svgCanvas) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	b := bufio.NewWriter(cw)
	fmt.Fprintf(b, `<?xml version="1.0"?>
<!-- Generated by SVGo and Plotinum VG -->
<svg width="%.*gpt" height="%.*gpt" viewBox="0 0 %.*g %.*g"
	xmlns="http://www.w3.org/2000/svg"
	xmlns:xlink="http://www.w3.org/1999/xlink">`+"\n",
		svgPrec, c.w, svgPrec, c.h, svgPrec, c.w, svgPrec, c.h)
	b.Write(c.buf.Bytes())
	ends := 1 // the origin's group
	for _, ctx := range c.stack {
		ends += ctx.gEnds
	}
	for range ends {
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	err := b.Flush()
	return cw.n, err
}

// release gives the canvas's document and numbers back for another; the
// canvas is not to be used after.
func (c *svgCanvas) release() {
	svgBufs.Put(c.buf)
	svgNumsPool.Put(c.nums)
	c.buf, c.nums = nil, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
