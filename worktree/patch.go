package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/text"
)

// CheckPatches refuses, before a worktree is made or moved, a patch file
// that cannot be read or has no diff in it (what Apply would refuse
// only after).
func CheckPatches(files []string) error {
	for _, f := range files {
		if _, _, err := readPatch(f); err != nil {
			return err
		}
	}
	return nil
}

// readPatch reads patch file f: its absolute path and contents. It is
// read through safefile.Input: a regular file of at most 64 MiB and, as
// root, root's or the invoking user's, writable by nobody else (a patch
// is code: its build scripts run, and so does what it compiles).
func readPatch(f string) (string, []byte, error) {
	abs, err := filepath.Abs(f)
	if err != nil {
		return "", nil, exitcode.BadInput(err)
	}
	data, err := safefile.Input(abs)
	if err != nil {
		return "", nil, exitcode.BadInputf("patch %s: %v", f, err)
	}
	if !bytes.Contains(data, []byte("\n+++ ")) && !bytes.HasPrefix(data, []byte("+++ ")) && !bytes.Contains(data, []byte("GIT binary patch")) {
		return "", nil, exitcode.BadInputf("patch %s: no diff in it (want a git diff, diff -u output or git format-patch/mbox series)", f)
	}
	return abs, data, nil
}

// identity is the committer of the commits abtest makes from patches; the
// author is the patch's own when it has a From: header.
var identity = []string{"-c", "user.name=abtest", "-c", "user.email=abtest@localhost", "-c", "commit.gpgsign=false"}

// Apply applies patch files to worktree name, in order, each as one or more
// commits. When any of them does not apply, every commit made by this call
// is undone and the worktree is left as it was; the error names the patch
// and the hunk git could not place.
func (m *Manager) Apply(ctx context.Context, name string, files []string) ([]Patch, error) {
	prov, err := m.Info(ctx, name)
	if err != nil {
		return nil, err
	}
	dir, _ := m.Dir(name)
	inputs, patchPath, cleanup, err := m.readPatches(files)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	headCmd := m.git(dir, "rev-parse", "HEAD")
	headCmd.ReadOnly = true
	out, err := m.Run.Output(ctx, headCmd)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	orig := strings.TrimSpace(out)
	// The commits are dated as orig was: one base and one patch then
	// make one sha on every apply, and with it one build fingerprint.
	// Dated now, applying a patch again after a reset (a matrix's
	// base+patch arm does) made a new HEAD and a whole rebuild of an
	// identical tree (15–54 s in place on 2 cores).
	dateCmd := m.git(dir, "log", "-1", "--format=%cd", "--date=raw", "HEAD")
	dateCmd.ReadOnly = true
	out, err = m.Run.Output(ctx, dateCmd)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	date := strings.TrimSpace(out)

	var applied []Patch
	for i, in := range inputs {
		p := Patch{File: in.file, SHA256: fileSHA256(in.data), Subject: patchSubject(in.data)}
		if m.Run.DryRun {
			m.Run.Note("apply patch %d/%d %s (%s)", i+1, len(inputs), in.file, p.Subject)
		}
		var err error
		if in.mail {
			// The author and the author date are the mail's own.
			am := m.gitID(dir, "am", "--quiet", "--keep-non-patch", "--no-3way", patchPath(i))
			am.Env = []string{"GIT_COMMITTER_DATE=" + date}
			err = m.Run.Run(ctx, am)
		} else {
			err = m.Run.Run(ctx, m.git(dir, "apply", "--index", "--whitespace=nowarn", patchPath(i)))
			if err == nil {
				msg := p.Subject
				if msg == "" {
					msg = "apply " + filepath.Base(in.file)
				}
				msg += "\n\nApplied by abtest from " + filepath.Base(in.file) + " (sha256 " + p.SHA256 + ")."
				commit := m.gitID(dir, "commit", "--quiet", "--no-verify", "-m", msg)
				commit.Env = []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}
				err = m.Run.Run(ctx, commit)
			}
		}
		if err != nil {
			m.rollback(ctx, dir, orig, in.mail)
			return nil, exitcode.BadInput(fmt.Errorf("%w: patch %d/%d %s: %s; worktree %s left at %s", ErrPatch, i+1, len(inputs), filepath.Base(in.file), hunkFailure(err), name, text.Short(orig)))
		}
		if !m.Run.DryRun {
			p.Commits, err = m.commitsSince(ctx, dir, orig, applied)
			if err != nil {
				return nil, err
			}
		}
		applied = append(applied, p)
	}
	prov.Patches = append(prov.Patches, applied...)
	return applied, m.writeProvenance(ctx, dir, prov)
}

func (m *Manager) gitID(dir string, args ...string) proc.Cmd {
	return proc.Cmd{Path: "git", Args: append(append([]string{"-C", dir}, identity...), args...)}
}

// commitsSince lists the commits after orig that earlier patches of this
// call did not account for, oldest first.
func (m *Manager) commitsSince(ctx context.Context, dir, orig string, earlier []Patch) ([]string, error) {
	c := m.git(dir, "rev-list", "--reverse", orig+"..HEAD")
	c.ReadOnly = true
	out, err := m.Run.Output(ctx, c)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	seen := map[string]bool{}
	for _, p := range earlier {
		for _, c := range p.Commits {
			seen[c] = true
		}
	}
	commits := []string{}
	for _, s := range strings.Fields(out) {
		if !seen[s] {
			commits = append(commits, s)
		}
	}
	return commits, nil
}

// rollback undoes a failed Apply: an interrupted `git am` is aborted, and
// the commits made before the failure are reset away. --keep (not --hard)
// keeps any uncommitted change of the user's that the patches did not
// touch.
func (m *Manager) rollback(ctx context.Context, dir, orig string, mail bool) {
	if m.Run.DryRun {
		return
	}
	if mail {
		_ = m.Run.Run(ctx, m.git(dir, "am", "--abort"))
	}
	_ = m.Run.Run(ctx, m.git(dir, "reset", "--quiet", "--keep", orig))
}

// hunkFailure extracts git's "patch failed: FILE:LINE" (or its other
// complaint) from a failed apply or am.
func hunkFailure(err error) string {
	var pe *proc.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	var failed, other []string
	for _, l := range pe.Tail {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "error: patch failed: "):
			failed = append(failed, "hunk failed at "+strings.TrimPrefix(l, "error: patch failed: "))
		case strings.HasPrefix(l, "error: "), strings.HasPrefix(l, "fatal: "), strings.HasPrefix(l, "Patch failed at "):
			other = append(other, l)
		}
	}
	if len(failed) > 0 {
		return strings.Join(failed, ", ")
	}
	if len(other) > 0 {
		return strings.Join(other, "; ")
	}
	return pe.Error()
}

var mboxFromRE = regexp.MustCompile(`(?m)^From [^ \n]+ +[A-Z][a-z]{2} [A-Z][a-z]{2} `)

// isMail reports whether data is an email (git format-patch output or an
// mbox of several), which `git am` applies with its author and message.
func isMail(data []byte) bool {
	head := data
	if i := bytes.Index(data, []byte("\ndiff --git ")); i >= 0 {
		head = data[:i]
	}
	return mboxFromRE.Match(head) || (bytes.Contains(head, []byte("\nSubject: ")) || bytes.HasPrefix(head, []byte("Subject: "))) && (bytes.Contains(head, []byte("\nFrom: ")) || bytes.HasPrefix(head, []byte("From: ")))
}

var subjectRE = regexp.MustCompile(`(?m)^Subject: *(.*)$`)
var bracketRE = regexp.MustCompile(`^\[[^\]]*\] *`)

// patchSubject is the Subject: of a mail patch (the first, for a series)
// without its [PATCH n/m] prefix, or "" for a plain diff.
func patchSubject(data []byte) string {
	m := subjectRE.FindSubmatch(data)
	if m == nil {
		return ""
	}
	return bracketRE.ReplaceAllString(strings.TrimSpace(string(m[1])), "")
}

// patchInput is a patch file as Apply read it.
type patchInput struct {
	file string
	data []byte
	mail bool
}

// readPatches reads files (readPatch) and returns them with the path git
// is to read patch i from: a copy of what was read and hashed, in a
// directory of abtest's own that cleanup removes, so the file cannot
// change in between. A dry run shows the files themselves.
func (m *Manager) readPatches(files []string) (inputs []patchInput, path func(i int) string, cleanup func(), err error) {
	for _, f := range files {
		abs, data, err := readPatch(f)
		if err != nil {
			return nil, nil, nil, err
		}
		inputs = append(inputs, patchInput{file: abs, data: data, mail: isMail(data)})
	}
	if m.Run.DryRun {
		return inputs, func(i int) string { return inputs[i].file }, func() {}, nil
	}
	copies, err := patchCopies(len(inputs), func(i int) []byte { return inputs[i].data })
	if err != nil {
		return nil, nil, nil, exitcode.Failure(err)
	}
	return inputs, func(i int) string { return patchCopy(copies, i) }, func() { os.RemoveAll(copies) }, nil
}

// patchCopies writes n patches (data(i)) into a new private directory
// (0700), as patchCopy names them, and returns it.
func patchCopies(n int, data func(i int) []byte) (string, error) {
	dir, err := safefile.MkdirTemp(os.TempDir(), "abtest-patch-")
	if err != nil {
		return "", err
	}
	for i := range n {
		f, err := safefile.Create(patchCopy(dir, i), 0o600)
		if err == nil {
			_, err = f.Write(data(i))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// patchCopy is the path of the copy of patch i in dir.
func patchCopy(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%04d.patch", i+1))
}
