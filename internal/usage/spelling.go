// Package usage is abtest's command-line vocabulary that is data rather
// than flag declarations: the old spellings still accepted (each with
// one note on stderr), the help's categories, descriptions, examples
// and width, and the one rule for repeats. cmd/abtest declares the flags
// and applies these tables.
package usage

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Old is a spelling a flag had before every letter got one meaning
// (issue 42): Flag in Command now reads as New.
type Old struct {
	Command, Flag, New string
	// Elsewhere is what the letter means in the other commands.
	Elsewhere string
	// Harness marks the bash harness's own spelling (seeds/003): kept
	// for its users, not only for a release.
	Harness bool
}

// Olds are the old spellings, by command.
var Olds = []Old{
	{Command: "switch", Flag: "-c", New: "--commit", Elsewhere: "-c is the client count", Harness: true},
	{Command: "switch", Flag: "-w", New: "--worktree", Elsewhere: "-w is the workloads", Harness: true},
	{Command: "env", Flag: "-w", New: "--worktree", Elsewhere: "-w is the workloads"},
	{Command: "perf record", Flag: "-w", New: "--worktree", Elsewhere: "-w is the workloads", Harness: true},
	{Command: "bench", Flag: "-C", New: "--pgbench-cpus", Elsewhere: "-C is the server's CPUs", Harness: true},
	{Command: "bench", Flag: "--cpus", New: "--pgbench-cpus", Elsewhere: "--cpus is the server's CPUs"},
	{Command: "bench", Flag: "-h", New: "--host", Elsewhere: "-h is help"},
	{Command: "history", Flag: "--config", New: "--configuration", Elsewhere: "--config is a TOML file"},
	{Command: "annotate", Flag: "--config", New: "--configuration", Elsewhere: "--config is a TOML file"},
}

// Note is the one line an old spelling prints on stderr.
func (o Old) Note() string {
	keep := "accepted until the next release"
	if o.Harness {
		keep = "kept for the bash harness's users"
	}
	return fmt.Sprintf("abtest: deprecated: %s %s: use %s (%s in every other command); %s", o.Command, o.Flag, o.New, o.Elsewhere, keep)
}

// RootValueFlags are abtest's own flags that take a value (they come
// before the command).
var RootValueFlags = []string{"--config", "-config"}

// Path is the command args name (its full path such as "perf record",
// "" for none) and the index of its first own argument; known says
// which paths exist.
func Path(args []string, known func(path string) bool) (string, int) {
	path, start := "", 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return path, start
		case path == "" && slices.Contains(RootValueFlags, a):
			i++
			continue
		case strings.HasPrefix(a, "-"):
			continue
		}
		next := strings.TrimSpace(path + " " + a)
		if !known(next) {
			return path, start
		}
		path, start = next, i+1
	}
	return path, start
}

// RewriteArgs is Rewrite of a whole command line: args[0], the
// program's name, kept.
func RewriteArgs(args []string) ([]string, []string) {
	if len(args) == 0 {
		return args, nil
	}
	rest, notes := Rewrite(args[1:])
	return append(args[:1:1], rest...), notes
}

// PrintNotes writes the old spellings' notes on w, one a line, when the
// command ran (ran): after its output, since a command refused says
// one line, its error (the fuzzer's `history 0 --config ""`).
func PrintNotes(w io.Writer, notes []string, ran bool) {
	if !ran {
		return
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// Rewrite returns args (without the program name) with the old spellings of their command replaced
// by today's, and the notes to print (one per old spelling used).
// Nothing after "--" is touched.
func Rewrite(args []string) ([]string, []string) {
	path, start := Path(args, func(p string) bool { _, ok := Commands[p]; return ok })
	out := append([]string(nil), args...)
	var notes []string
	noted := map[string]bool{}
	for i := start; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		for _, o := range Olds {
			if o.Command != path || o.Flag != name {
				continue
			}
			// Every old spelling takes a value: without one it is not
			// that flag (bench -h alone is help), and rewriting it would
			// add a note to the one line of its usage error.
			if !hasValue && (i+1 >= len(out) || strings.HasPrefix(out[i+1], "-")) {
				continue
			}
			out[i] = o.New
			if hasValue {
				out[i] += "=" + value
			}
			if !noted[o.Flag] {
				notes, noted[o.Flag] = append(notes, o.Note()), true
			}
		}
	}
	return out, notes
}
