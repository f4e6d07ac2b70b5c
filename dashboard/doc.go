package dashboard

// The report model on a page: the blocks of analysis.Report.Doc (what
// report.md is written from) as values the templates write with
// html/template (templates/doc.html), so every text of a report — a
// commit's label, a workload's name, a reason — is escaped as any other.
// A link of the report (a plot, a diff profile) is relative to the
// report's directory: it is linked as the run's other files are
// (runData.href), or named as text where it cannot be.

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pgabtest/abtest/analysis"
)

// docBlock is a block as the doc templates write it: Kind says which of
// the fields hold it.
type docBlock struct {
	Kind string
	// Level is a heading's, as the page nests it (h3 for the report's
	// sections); ID its anchor.
	Level   int
	ID      string
	Text    []docSpan
	Items   []docItem
	Head    []string
	Right   []bool
	Rows    [][]docCell
	Summary string
	Blocks  []docBlock
	// File is a plot's file: linked, or named with why not.
	File link
}

// docSpan is a run of text; Href, when set, is a link the page can
// follow.
type docSpan struct {
	Text                string
	Strong, Code, Em    bool
	Href, Path, Missing string
}

type docItem struct {
	Text []docSpan
	Sub  []docItem
	Code []string
}

// docCell is a table cell: its text, the verdict it shows (the class
// that colours it) and, for a cell shown as "—", the reason (its title;
// the footnote under the table says it too).
type docCell struct {
	Text    []docSpan
	Verdict string
	Why     string
	Right   bool
}

// docWriter turns blocks into docBlocks for a page in the site
// directory from, the report's links resolved against dir (the run's
// results directory).
type docWriter struct {
	d        *runData
	from     string
	dir      string
	headings map[string]int
}

func (d *runData) docWriter(from string) *docWriter {
	dir := ""
	if len(d.run.Shards) > 0 {
		dir = d.run.Shards[0].Dir
	}
	return &docWriter{d: d, from: from, dir: dir, headings: map[string]int{}}
}

func (w *docWriter) blocks(bs []analysis.Block) []docBlock {
	out := make([]docBlock, 0, len(bs))
	for _, b := range bs {
		out = append(out, w.block(b))
	}
	return out
}

func (w *docWriter) block(b analysis.Block) docBlock {
	switch b := b.(type) {
	case *analysis.Heading:
		return docBlock{Kind: "heading", Level: min(b.Level+1, 6), ID: w.anchor(b.Text), Text: []docSpan{{Text: b.Text}}}
	case *analysis.Paragraph:
		return docBlock{Kind: "para", Text: w.spans(b.Text)}
	case *analysis.Quote:
		return docBlock{Kind: "quote", Text: w.spans(b.Text)}
	case *analysis.Footnote:
		return docBlock{Kind: "note", Text: []docSpan{{Text: b.Text}}}
	case *analysis.List:
		return docBlock{Kind: "list", Items: w.items(b.Items)}
	case *analysis.Table:
		return w.table(b)
	case *analysis.Plot:
		p := filepath.Join(w.dir, filepath.FromSlash(b.Path))
		return docBlock{Kind: "plot", Text: []docSpan{{Text: b.Title}}, File: w.d.fileLink(w.from, b.Title, p, "not on this host")}
	case *analysis.Details:
		return docBlock{Kind: "details", Summary: b.Summary, Blocks: w.blocks(b.Blocks)}
	}
	return docBlock{Kind: "para", Text: []docSpan{{Text: "(a part of the report this page cannot show: see report.md)"}}}
}

func (w *docWriter) table(t *analysis.Table) docBlock {
	out := docBlock{Kind: "table", Head: t.Head, Right: t.Right}
	for _, row := range t.Rows {
		cells := make([]docCell, len(row))
		for i, c := range row {
			cells[i] = docCell{Text: w.spans(c.Text), Verdict: string(c.Verdict), Why: c.Why, Right: i < len(t.Right) && t.Right[i]}
		}
		out.Rows = append(out.Rows, cells)
	}
	return out
}

func (w *docWriter) items(its []analysis.Item) []docItem {
	out := make([]docItem, 0, len(its))
	for _, it := range its {
		out = append(out, docItem{Text: w.spans(it.Text), Sub: w.items(it.Sub), Code: it.Code})
	}
	return out
}

// spans are a line's spans; a link within the report ("#metric-tiers")
// goes to the heading's anchor on this page, a link to a file of the
// run to that file (runData.href) when it exists, and any other (a URL
// of another scheme, a path that climbs out) is text.
func (w *docWriter) spans(in analysis.Inline) []docSpan {
	out := make([]docSpan, 0, len(in))
	for _, sp := range in {
		s := docSpan{Text: sp.Text, Strong: sp.Strong, Code: sp.Code, Em: sp.Em}
		switch l := sp.Link; {
		case l == "":
		case strings.HasPrefix(l, "#"):
			s.Href = "#" + anchorPrefix + slugText(l[1:])
		case !strings.Contains(l, ":") && filepath.IsLocal(filepath.FromSlash(l)) && w.dir != "":
			f := w.d.fileLink(w.from, sp.Text, filepath.Join(w.dir, filepath.FromSlash(l)), "not on this host")
			s.Href, s.Path, s.Missing = f.Href, f.Path, f.Note
		}
		out = append(out, s)
	}
	return out
}

// anchorPrefix keeps the report's anchors apart from the page's own ids
// (#summary, #changes).
const anchorPrefix = "report-"

var notSlug = regexp.MustCompile(`[^a-z0-9_-]+`)

// slugText is a heading's anchor as markdown makes it: lower case,
// spaces as dashes, punctuation dropped.
func slugText(s string) string {
	return notSlug.ReplaceAllString(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-"), "")
}

// anchor is a heading's id, unique on the page.
func (w *docWriter) anchor(text string) string {
	id := anchorPrefix + slugText(text)
	w.headings[id]++
	if n := w.headings[id]; n > 1 {
		id += "-" + strings.Repeat("x", n-1)
	}
	return id
}

// reportParts splits a report's blocks for a compare page of commit
// against base: the overview of commit (its heading, table and
// footnotes: what comes first on the page) and the rest of the report
// from its first section on (the answer lines, which the page shows
// above, and every other commit's overview left out).
func reportParts(doc analysis.Doc, commit, base string) (overview, rest []analysis.Block) {
	want := "Overview: " + commit + " vs " + base
	in := false
	for _, b := range doc.Blocks {
		h, isHeading := b.(*analysis.Heading)
		switch {
		case isHeading && h.Level <= 2:
			in = false
			if h.Level == 2 || rest != nil {
				rest = append(rest, b)
			}
		case isHeading && strings.HasPrefix(h.Text, "Overview: ") && rest == nil:
			in = h.Text == want && commit != ""
			if in {
				overview = append(overview, b)
			}
		case in:
			overview = append(overview, b)
		case rest != nil:
			rest = append(rest, b)
		}
	}
	return overview, rest
}
