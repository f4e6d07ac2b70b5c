// Package abspath makes the paths a command line names absolute against
// the working directory as they are read, so that they mean the same
// once a command runs elsewhere: pgbench runs in each cell's directory,
// and a relative -o made every cell fail, its script not found. The CLI
// reads every flag that names a file or a directory through it: -o,
// --resume, --setup-sql, --extension, --patch, --install, --pgbench,
// the file:PATH items of -w and --condition, and the patches and
// install:DIR of -k.
package abspath

import (
	"path/filepath"
	"strings"
)

// Getwd says the working directory (os.Getwd, or a test's); paths are
// taken against it. When it cannot say, or says a relative one, a
// relative path stays as given (the kernel resolves no relative path
// from a working directory that is gone either).
type Getwd func() (string, error)

// Path is p made absolute; "" stays "".
func (g Getwd) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || g == nil {
		return p
	}
	wd, err := g()
	if err != nil || !filepath.IsAbs(wd) {
		return p
	}
	return filepath.Join(wd, p)
}

// Paths is each of ps made absolute.
func (g Getwd) Paths(ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = g.Path(p)
	}
	return out
}

// Items is a comma-separated list (-w, --condition) with the path of
// each file:PATH item made absolute.
func (g Getwd) Items(list string) string {
	parts := strings.Split(list, ",")
	for i, item := range parts {
		if p, ok := strings.CutPrefix(strings.TrimSpace(item), "file:"); ok {
			parts[i] = "file:" + g.Path(p)
		}
	}
	return strings.Join(parts, ",")
}

// Specs is -k's SPEC[,SPEC…] with its paths made absolute: DIR of
// LABEL=install:DIR and each PATCH of LABEL=REF+PATCH[+PATCH…]. A spec
// without a label names neither (matrix.ParseSpec refuses that).
func (g Getwd) Specs(list string) string {
	parts := strings.Split(list, ",")
	for i, spec := range parts {
		label, rest, ok := strings.Cut(spec, "=")
		if !ok {
			continue
		}
		if dir, ok := strings.CutPrefix(rest, "install:"); ok {
			parts[i] = label + "=install:" + g.Path(dir)
			continue
		}
		refs := strings.Split(rest, "+")
		for j := 1; j < len(refs); j++ {
			refs[j] = g.Path(refs[j])
		}
		parts[i] = label + "=" + strings.Join(refs, "+")
	}
	return strings.Join(parts, ",")
}
