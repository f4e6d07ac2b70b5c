package analysis

// The report model's blocks: a section builds headings, paragraphs,
// lists, tables (cells with a value, its interval and a verdict), plot
// references and footnotes; WriteMarkdown, WriteText and the JSON of
// Doc are writers of the same blocks (blockwrite.go), so that a section
// is said once. Text is plain: the markdown writer escapes it, and
// marks what a Span asks for (strong, code, a link).

import (
	"math"

	"github.com/pgabtest/abtest/results"
)

// Block is one piece of a section: *Heading, *Paragraph, *List, *Table,
// *Plot, *Footnote, *Details or *Quote.
type Block interface{ kind() string }

// Span is a run of text; Strong, Code, Em and Link say how markdown shows it
// (the text writer shows the text alone).
type Span struct {
	Text   string `json:"text"`
	Strong bool   `json:"strong,omitzero"`
	Code   bool   `json:"code,omitzero"`
	Em     bool   `json:"em,omitzero"`
	Link   string `json:"link,omitempty"`
}

// Inline is a line of spans.
type Inline []Span

// plain is s as one plain span.
func plain(s string) Inline { return Inline{{Text: s}} }

// strong is s in bold.
func strong(s string) Span { return Span{Text: s, Strong: true} }

// String is the inline's text without marks.
func (in Inline) String() string {
	s := ""
	for _, sp := range in {
		s += sp.Text
	}
	return s
}

// Heading is a section's title; Level 1 is the report's.
type Heading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
}

// Paragraph is prose.
type Paragraph struct {
	Text Inline `json:"text"`
}

// List is a bulleted list; an Item may hold a sub-list and code lines.
type List struct {
	Items []Item `json:"items"`
}

// Item is one entry of a List.
type Item struct {
	Text Inline   `json:"text"`
	Sub  []Item   `json:"sub,omitempty"`
	Code []string `json:"code,omitempty"`
}

// Table is rows of cells under a head. Right aligns columns (markdown's
// --:).
type Table struct {
	Head  []string `json:"head"`
	Right []bool   `json:"right,omitempty"`
	Rows  [][]Cell `json:"rows"`
}

// Cell is a table cell: its Text as shown, and for a statistic its Value
// with the interval Lo … Hi and the Verdict, so that a reader of the
// model (the JSON, the dashboard) need not parse the text. A value that
// is not finite is null in the JSON (num's "n/a", "–" on screen).
type Cell struct {
	Text    Inline          `json:"text"`
	Value   float64         `json:"value,omitempty"`
	Lo      float64         `json:"lo,omitempty"`
	Hi      float64         `json:"hi,omitempty"`
	Verdict results.Verdict `json:"verdict,omitempty"`
	// Unit says what Value counts ("%" for a change).
	Unit string `json:"unit,omitempty"`
	// Why is the footnote of a cell shown as "—" (no signal).
	Why string `json:"why,omitempty"`
}

// txt is a cell of text alone (no value).
func txt(s string) Cell {
	return Cell{Text: plain(s), Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
}

// code is a cell of code (a function's name).
func codeCell(s string) Cell {
	c := txt(s)
	c.Text = Inline{{Text: s, Code: true}}
	return c
}

// Plot is a drawn plot, referenced by its path.
type Plot struct {
	Title string `json:"title"`
	Path  string `json:"path"`
}

// Footnote explains a mark of the tables above it.
type Footnote struct {
	Text string `json:"text"`
}

// Details is a collapsed group of blocks (markdown's <details>).
type Details struct {
	Summary string  `json:"summary"`
	Blocks  []Block `json:"blocks"`
}

// Quote is a warning set apart (markdown's >).
type Quote struct {
	Text Inline `json:"text"`
}

func (*Heading) kind() string   { return "heading" }
func (*Paragraph) kind() string { return "paragraph" }
func (*List) kind() string      { return "list" }
func (*Table) kind() string     { return "table" }
func (*Plot) kind() string      { return "plot" }
func (*Footnote) kind() string  { return "footnote" }
func (*Details) kind() string   { return "details" }
func (*Quote) kind() string     { return "quote" }

// Doc is a report as blocks: what WriteMarkdown and WriteText write,
// and what the dashboard's run page can read (Report.Doc).
type Doc struct {
	Blocks []Block
}

// MarshalJSON writes each block with its kind.
func (d Doc) MarshalJSON() ([]byte, error) {
	return marshalJSON(blocksJSON(d.Blocks))
}

func blocksJSON(bs []Block) []any {
	out := []any{}
	for _, b := range bs {
		if d, ok := b.(*Details); ok {
			out = append(out, map[string]any{"kind": "details", "summary": d.Summary, "blocks": blocksJSON(d.Blocks)})
			continue
		}
		out = append(out, kinded{b.kind(), b})
	}
	return out
}

// kinded is a block's JSON with its kind first.
type kinded struct {
	kind  string
	block Block
}

func (k kinded) MarshalJSON() ([]byte, error) {
	body, err := marshalJSON(k.block)
	if err != nil || len(body) < 2 {
		return body, err
	}
	head, _ := marshalJSON(k.kind)
	out := append([]byte(`{"kind":`), head...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// section is a section under construction.
type sect []Block

func (s *sect) heading(level int, t string) { *s = append(*s, &Heading{level, t}) }
func (s *sect) para(in Inline)              { *s = append(*s, &Paragraph{in}) }
func (s *sect) text(t string)               { s.para(plain(t)) }
func (s *sect) add(b ...Block)              { *s = append(*s, b...) }
