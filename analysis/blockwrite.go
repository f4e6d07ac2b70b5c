package analysis

// The writers of the report model: markdown and plain text (≤ 80
// columns) of the same blocks. A value that is not finite never reaches
// them as a number: the builders write it with num/pct ("n/a", "–"), and
// the JSON as null (Finite).

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/pgabtest/abtest/internal/text"
)

// writeMarkdown writes blocks as markdown, ending in one newline.
func writeMarkdown(w io.Writer, bs []Block) {
	var b bytes.Buffer
	writeMarkdownBlocks(&b, bs)
	w.Write(append(bytes.TrimRight(b.Bytes(), "\n"), '\n'))
}

// writeText writes blocks as plain text, ending in one newline.
func writeText(w io.Writer, bs []Block) {
	var b bytes.Buffer
	writeTextBlocks(&b, bs)
	w.Write(append(bytes.TrimRight(b.Bytes(), "\n"), '\n'))
}

// writeMarkdownBlocks writes blocks as markdown, a blank line after
// each.
func writeMarkdownBlocks(w io.Writer, bs []Block) {
	for _, b := range bs {
		switch b := b.(type) {
		case *Heading:
			fmt.Fprintf(w, "%s %s\n\n", strings.Repeat("#", b.Level), mdInline(plain(b.Text)))
		case *Paragraph:
			fmt.Fprintf(w, "%s\n\n", mdInline(b.Text))
		case *Footnote:
			fmt.Fprintf(w, "%s\n\n", mdInline(plain(b.Text)))
		case *Quote:
			fmt.Fprintf(w, "> %s\n\n", mdInline(b.Text))
		case *List:
			mdItems(w, "", b.Items)
			fmt.Fprintln(w)
		case *Table:
			mdTable(w, b)
		case *Plot:
			fmt.Fprintf(w, "![%s](%s)\n\n", mdInline(plain(b.Title)), b.Path)
		case *Details:
			fmt.Fprintf(w, "<details><summary>%s</summary>\n\n", mdInline(plain(b.Summary)))
			writeMarkdownBlocks(w, b.Blocks)
			fmt.Fprintf(w, "</details>\n\n")
		}
	}
}

func mdItems(w io.Writer, indent string, items []Item) {
	for _, it := range items {
		fmt.Fprintf(w, "%s- %s\n", indent, mdInline(it.Text))
		if len(it.Code) > 0 {
			fmt.Fprintf(w, "\n%s  ```\n", indent)
			for _, l := range it.Code {
				fmt.Fprintf(w, "%s  %s\n", indent, l)
			}
			fmt.Fprintf(w, "%s  ```\n", indent)
		}
		mdItems(w, indent+"  ", it.Sub)
	}
}

func mdTable(w io.Writer, t *Table) {
	fmt.Fprint(w, "|")
	for _, h := range t.Head {
		fmt.Fprintf(w, " %s |", mdInline(plain(h)))
	}
	fmt.Fprint(w, "\n|")
	for i := range t.Head {
		if i < len(t.Right) && t.Right[i] {
			fmt.Fprint(w, "--:|")
		} else {
			fmt.Fprint(w, "---|")
		}
	}
	fmt.Fprintln(w)
	for _, row := range t.Rows {
		fmt.Fprint(w, "|")
		for _, c := range row {
			fmt.Fprintf(w, " %s |", mdInline(c.Text))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// mdInline is spans as markdown: each span's text on one line and
// escaped (mdEscape), then marked.
func mdInline(in Inline) string {
	var b strings.Builder
	for _, sp := range in {
		s := flatten(sp.Text)
		switch {
		case sp.Code:
			s = "`" + strings.ReplaceAll(s, "`", "'") + "`"
		default:
			s = mdEscape(s)
		}
		switch {
		case sp.Link != "":
			s = "[" + s + "](" + sp.Link + ")"
		case sp.Strong:
			s = "**" + s + "**"
		case sp.Em:
			s = "*" + s + "*"
		}
		b.WriteString(s)
	}
	return b.String()
}

// flatten is s on one line, runs of white space one space, a space at
// either end kept (it parts the span from its neighbour).
func flatten(s string) string {
	f := text.OneLine(s)
	if f == "" {
		if s != "" {
			return " "
		}
		return ""
	}
	if strings.TrimLeftFunc(s, unicode.IsSpace) != s {
		f = " " + f
	}
	if strings.TrimRightFunc(s, unicode.IsSpace) != s {
		f += " "
	}
	return f
}

// tagLike finds what markdown would read as HTML: a tag, a comment, an
// entity.
var tagLike = regexp.MustCompile(`<[A-Za-z/!?]|&[A-Za-z#][A-Za-z0-9]*;`)

// mdEscape is text as markdown shows it literally: a table's column bar,
// a code tick, emphasis, a backslash and a link's "](" escaped, and
// where the text holds anything HTML-like (a label "<script>") its <, >
// and & as entities. A lone "<" ("p < 0.0001") stays as it is.
func mdEscape(s string) string {
	html := tagLike.MatchString(s)
	var b strings.Builder
	rs := []rune(s)
	for i, c := range rs {
		switch {
		case html && c == '<':
			b.WriteString("&lt;")
		case html && c == '>':
			b.WriteString("&gt;")
		case html && c == '&':
			b.WriteString("&amp;")
		case c == '|', c == '\\', c == '`', c == '*':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == ']' && i+1 < len(rs) && rs[i+1] == '(', c == '[' && strings.Contains(string(rs[i:]), "]("):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// writeTextBlocks writes blocks as plain text wrapped at textWidth: a
// title underlined, headings on their own, prose and lists indented, a
// blank line after each block.
func writeTextBlocks(w io.Writer, bs []Block) {
	for _, b := range bs {
		switch b := b.(type) {
		case *Heading:
			fmt.Fprintln(w, b.Text)
			if b.Level == 1 {
				fmt.Fprintln(w, strings.Repeat("=", len([]rune(b.Text))))
			}
		case *Paragraph:
			wrap(w, "  ", "  ", b.Text.String())
		case *Footnote:
			wrap(w, "  ", "  ", b.Text)
		case *Quote:
			wrap(w, "  ", "    ", b.Text.String())
		case *List:
			textItems(w, "  ", b.Items)
		case *Table:
			textTable(w, b)
		case *Plot:
			wrap(w, "  ", "    ", "plot: "+b.Path)
		case *Details:
			wrap(w, "  ", "    ", b.Summary)
			fmt.Fprintln(w)
			writeTextBlocks(w, b.Blocks)
			continue
		}
		fmt.Fprintln(w)
	}
}

func textItems(w io.Writer, indent string, items []Item) {
	for _, it := range items {
		wrap(w, indent, indent+"  ", it.Text.String())
		for _, l := range it.Code {
			fmt.Fprintf(w, "%s    %s\n", indent, l)
		}
		textItems(w, indent+"  ", it.Sub)
	}
}

// textTable aligns a table's columns, indented; a right-aligned column
// is padded on its left.
func textTable(w io.Writer, t *Table) {
	widths := make([]int, len(t.Head))
	rows := append([][]string{t.Head}, nil)[:1]
	for _, r := range t.Rows {
		var cells []string
		for _, c := range r {
			cells = append(cells, text.OneLine(c.Text.String()))
		}
		rows = append(rows, cells)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprint(tw, "  ")
		for i, c := range r {
			if i < len(t.Right) && t.Right[i] {
				c = strings.Repeat(" ", widths[i]-len([]rune(c))) + c
			}
			if i == len(r)-1 {
				fmt.Fprint(tw, c)
			} else {
				fmt.Fprint(tw, c+"\t")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
