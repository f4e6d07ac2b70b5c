// Package text is how abtest writes a few values into a line of text,
// each in one place that every layer imports: the short form of a sha, a
// dash for nothing, a message on one line. It imports nothing of
// abtest's, so the analysis (which must import nothing that runs) and
// the CLI use the same.
package text

import (
	"strconv"
	"strings"
)

// Short is the short form of a sha (or a build fingerprint) that abtest
// prints and names builds with: 8 characters.
func Short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

// OrDash is s, or "-" when s is empty: a table's cell that has nothing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OneLine is s on one line, its runs of white space (newlines included)
// one space each: an error in a summary line, a store's note.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Count is n of what, "1 cell" or "3 cells": what's plural is what
// with an s.
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
