package store

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// The longest text the store takes for what the dashboard shows: a
// commit's label, ref and sha, a host's name, a metric named by an
// annotation (MaxName) and an annotation's note (MaxNote), in
// characters.
const (
	MaxName = 200
	MaxNote = 2000
)

// CheckShown is the one door for a text the store keeps to show (on the
// dashboard, in history and reports): at most max characters of UTF-8
// with no control character (in a note, multiline, a tab or a newline
// is text) and no bidirectional override, which would make a label
// read as another. field names it as the user gave it (a flag, a field
// of plan.json) and fix says how to correct it; the error is bad input
// (exit 2) on one line.
//
// It is one defence of two: the pages escape every text whatever the
// store holds (a row stored before this check, or written by hand).
func CheckShown(field, v string, max int, multiline bool, fix string) error {
	bad := func(why string) error {
		return exitcode.BadInputf("%s %s: %s; %s", field, quoteShort(v), why, fix)
	}
	if !utf8.ValidString(v) {
		return bad("not UTF-8 text")
	}
	if n := utf8.RuneCountInString(v); n > max {
		return bad(fmt.Sprintf("%d characters, at most %d", n, max))
	}
	for i, r := range v {
		if multiline && (r == '\t' || r == '\n') {
			continue
		}
		if unicode.IsControl(r) || isBidi(r) {
			return bad(fmt.Sprintf("a control character (%U) at byte %d", r, i))
		}
	}
	return nil
}

// isBidi is a bidirectional embedding, override or isolate.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// quoteShort quotes v (escaped, on one line) up to 40 characters.
func quoteShort(v string) string {
	if r := []rune(v); len(r) > 40 {
		return fmt.Sprintf("%q…", string(r[:40]))
	}
	return fmt.Sprintf("%q", v)
}

// checkPlan checks the texts of the plan of the results directory dir
// that the store keeps to show (CheckShown): the commits' labels, refs
// and shas, and the host's name.
func checkPlan(dir string, p *results.Plan) error {
	fix := fmt.Sprintf("correct it in %s/%s, then import again", dir, results.PlanFile)
	check := func(field, v string) error {
		return CheckShown(fmt.Sprintf("store import %s: %s", dir, field), v, MaxName, false, fix)
	}
	if err := check("baseline", p.Baseline); err != nil {
		return err
	}
	for i, c := range p.Commits {
		for _, f := range []struct{ name, v string }{{"label", c.Label}, {"ref", c.Ref}, {"sha", c.SHA}} {
			if err := check(fmt.Sprintf("commits[%d].%s", i, f.name), f.v); err != nil {
				return err
			}
		}
	}
	return check("host.hostname", p.Host.Hostname)
}

// checkAnnotation checks the texts of a the store keeps to show
// (CheckShown): the metric's name and the note.
func checkAnnotation(a Annotation) error {
	if err := CheckShown("annotate --metric", a.Metric, MaxName, false, "give the metric's name as the trends show it"); err != nil {
		return err
	}
	return CheckShown("annotate --note", a.Note, MaxNote, true,
		fmt.Sprintf("give a note of plain text of at most %d characters (tabs and newlines are kept)", MaxNote))
}

// CheckPlansOf refuses the results directories dirs when a plan does
// not read (ReadPlan's error) or holds a text the store does not take
// (CheckShown, exit 2), before anything is imported or a store created.
func CheckPlansOf(dirs ...string) error {
	for _, dir := range dirs {
		p, err := results.ReadPlan(dir)
		if err != nil {
			return err
		}
		if err := checkPlan(dir, p); err != nil {
			return err
		}
	}
	return nil
}
