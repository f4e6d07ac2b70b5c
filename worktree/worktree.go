// Package worktree turns refs of a PostgreSQL git clone into named,
// detached checkouts under the worktrees root, applies patches to them and
// records their provenance.
//
// Refs are resolved with go-git, the way a git user types them: branches,
// remote branches, tags, full or short shas, HEAD~3. A short sha that
// matches several objects is an error listing them, never a silent pick.
//
// Checkouts are real linked worktrees (`git worktree add --detach`): they
// share the source repository's objects, and git status/log/diff work in
// them. Patches become commits on top of the detached base, one per patch
// (`git am` for format-patch/mbox files, `git apply --index` and a commit for
// plain diffs), so `git log` shows exactly what was applied and any change
// the user makes afterwards shows up as uncommitted, which is what the
// build fingerprint hashes. A patch that does not apply leaves the worktree
// as it was.
//
// Each worktree carries .abtest-worktree.json (source, ref as typed,
// resolved sha, patches with sha256, dirty flag, time). It and the build
// directory are excluded through the source repository's info/exclude, the
// one file abtest adds to besides git's own worktree metadata.
package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
)

// ProvenanceFile is the name of the provenance record in a worktree.
const ProvenanceFile = ".abtest-worktree.json"

// BuildDir is the build directory's name inside a worktree. It lives inside
// the worktree so that every worktree compiles the same relative paths and
// ccache (base_dir = the worktrees root) hits across worktrees.
const BuildDir = "build"

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownRef: the ref does not name a commit.
	ErrUnknownRef = errors.New("worktree: unknown ref")
	// ErrAmbiguous: a short sha matches several objects.
	ErrAmbiguous = errors.New("worktree: ambiguous short sha")
	// ErrNoSource: the source directory is missing or not a git repository.
	ErrNoSource = errors.New("worktree: no source repository")
	// ErrNotFound: the named worktree does not exist.
	ErrNotFound = errors.New("worktree: no such worktree")
	// ErrDirty: the worktree has uncommitted changes in the way.
	ErrDirty = errors.New("worktree: uncommitted changes")
	// ErrPatch: a patch does not apply.
	ErrPatch = errors.New("worktree: patch does not apply")
)

// Manager manages the worktrees of one source repository.
type Manager struct {
	// Source is the PostgreSQL clone (PG_SOURCE_DIR).
	Source string
	// SourceFrom says which setting gave Source, for error messages,
	// e.g. "environment variable PG_SOURCE_DIR".
	SourceFrom string
	// Root is the worktrees root (PG_WORKTREES_DIR).
	Root string
	// Run runs git and changes files.
	Run *proc.Runner

	repo *git.Repository
}

// Commit is a resolved ref.
type Commit struct {
	SHA     string
	Subject string
}

// Patch is one patch file applied to a worktree.
type Patch struct {
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Subject string `json:"subject,omitempty"`
	// Commits are the commits the patch became (one per message of a
	// series).
	Commits []string `json:"commits"`
}

// Provenance is what .abtest-worktree.json records.
type Provenance struct {
	Name    string    `json:"name"`
	Source  string    `json:"source"`
	Ref     string    `json:"ref"`
	SHA     string    `json:"sha"`
	Subject string    `json:"subject"`
	Patches []Patch   `json:"patches"`
	Dirty   bool      `json:"dirty"`
	Time    time.Time `json:"time"`
}

// Dir returns the directory of worktree name, after checking the name.
func (m *Manager) Dir(name string) (string, error) {
	return safepath.Under(m.Root, name)
}

// Repo opens the source repository.
func (m *Manager) Repo() (*git.Repository, error) {
	if m.repo != nil {
		return m.repo, nil
	}
	from := m.SourceFrom
	if from == "" {
		from = "PG_SOURCE_DIR or --source"
	}
	fi, err := os.Stat(m.Source)
	if err != nil || !fi.IsDir() {
		return nil, exitcode.BadInput(fmt.Errorf("%w: source directory %s does not exist (set by %s)", ErrNoSource, m.Source, from))
	}
	r, err := git.PlainOpenWithOptions(m.Source, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, exitcode.BadInput(fmt.Errorf("%w: %s is not a git repository (set by %s): %v", ErrNoSource, m.Source, from, err))
	}
	m.repo = r
	return r, nil
}

var hexRE = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// Resolve resolves ref to a commit.
func (m *Manager) Resolve(ref string) (Commit, error) {
	r, err := m.Repo()
	if err != nil {
		return Commit{}, err
	}
	if strings.TrimSpace(ref) == "" {
		return Commit{}, exitcode.BadInputf("%w: empty ref", ErrUnknownRef)
	}
	// go-git reads REF:path as REF and ignores @{upstream}: git's own
	// rev-parse answers those forms, or refuses them.
	if strings.Contains(ref, ":") {
		return Commit{}, exitcode.BadInputf("%w %q: REF:PATH names a file or tree inside a commit, not a commit", ErrUnknownRef, ref)
	}
	if strings.Contains(ref, "@{") {
		return m.resolveWithGit(ref)
	}
	// go-git resolves a short sha to whichever candidate it meets first;
	// git refuses an ambiguous one, and so does abtest.
	head := ref
	if i := strings.IndexAny(head, "~^@:"); i >= 0 {
		head = head[:i]
	}
	if shortHexRE.MatchString(head) && !m.isRef(r, head) {
		return Commit{}, exitcode.BadInputf("%w %q: a short sha needs at least 4 hex digits (fewer match many commits)", ErrAmbiguous, head)
	}
	if err := m.checkBranchTag(r, head); err != nil {
		return Commit{}, err
	}
	rev := ref
	if hexRE.MatchString(head) && !m.isRef(r, head) {
		// git accepts upper-case hex; go-git does not.
		rev = strings.ToLower(head) + ref[len(head):]
		if len(head) < 40 {
			if cands := m.prefixCandidates(r, strings.ToLower(head)); len(cands) > 1 {
				return Commit{}, exitcode.BadInputf("%w %q in %s: it matches %s; type more digits", ErrAmbiguous, head, m.Source, strings.Join(cands, ", "))
			}
		}
	}
	h, err := r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return Commit{}, exitcode.BadInputf("%w %q in %s: %v (try git -C %s log --oneline)", ErrUnknownRef, ref, m.Source, err, proc.Quote(m.Source))
	}
	c, err := r.CommitObject(*h)
	if err != nil {
		return Commit{}, exitcode.BadInputf("%w %q in %s: %v", ErrUnknownRef, ref, m.Source, err)
	}
	return Commit{SHA: c.Hash.String(), Subject: subject(c)}, nil
}

var shortHexRE = regexp.MustCompile(`^[0-9a-fA-F]{1,3}$`)

// checkBranchTag refuses a name that is both a branch and a tag of
// different commits: git warns "refname is ambiguous" and picks one;
// abtest names both and lets the user say which.
func (m *Manager) checkBranchTag(r *git.Repository, name string) error {
	branch, err1 := r.ResolveRevision(plumbing.Revision("refs/heads/" + name))
	tag, err2 := r.ResolveRevision(plumbing.Revision("refs/tags/" + name + "^{commit}"))
	if err1 != nil || err2 != nil || *branch == *tag {
		return nil
	}
	return exitcode.BadInputf("%w %q: it is the branch refs/heads/%s (%s) and the tag refs/tags/%s (%s); say which, e.g. heads/%s or tags/%s",
		ErrAmbiguous, name, name, text.Short(branch.String()), name, text.Short(tag.String()), name, name)
}

// resolveWithGit resolves ref with git rev-parse, for the forms go-git
// does not know (@{upstream}, @{push}, @{N}).
func (m *Manager) resolveWithGit(ref string) (Commit, error) {
	c := m.git(m.Source, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	c.ReadOnly = true
	out, err := m.Run.Output(context.Background(), c)
	if err != nil {
		msg := err.Error()
		var pe *proc.Error
		if errors.As(err, &pe) && len(pe.Tail) > 0 {
			msg = pe.Tail[0]
		}
		return Commit{}, exitcode.BadInputf("%w %q in %s: %s", ErrUnknownRef, ref, m.Source, msg)
	}
	r, _ := m.Repo()
	co, err := r.CommitObject(plumbing.NewHash(strings.TrimSpace(out)))
	if err != nil {
		return Commit{}, exitcode.BadInputf("%w %q in %s: %v", ErrUnknownRef, ref, m.Source, err)
	}
	return Commit{SHA: co.Hash.String(), Subject: subject(co)}, nil
}

func subject(c *object.Commit) string {
	s, _, _ := strings.Cut(c.Message, "\n")
	return strings.TrimSpace(s)
}

// isRef reports whether name is a branch, tag or remote-tracking branch.
func (m *Manager) isRef(r *git.Repository, name string) bool {
	for _, rule := range plumbing.RefRevParseRules {
		if _, err := r.Reference(plumbing.ReferenceName(fmt.Sprintf(rule, name)), false); err == nil {
			return true
		}
	}
	return false
}

// prefixCandidates lists the commits and tags whose hash starts with
// prefix, as "sha (type: subject)".
func (m *Manager) prefixCandidates(r *git.Repository, prefix string) []string {
	type prefixer interface {
		HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error)
	}
	p, ok := r.Storer.(prefixer)
	if !ok {
		return nil
	}
	b, err := hex.DecodeString(prefix[:len(prefix)&^1])
	if err != nil {
		return nil
	}
	hashes, err := p.HashesWithPrefix(b)
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range hashes {
		if !strings.HasPrefix(h.String(), prefix) {
			continue
		}
		if c, err := r.CommitObject(h); err == nil {
			out = append(out, fmt.Sprintf("%s (commit: %s)", text.Short(h.String()), subject(c)))
		} else if t, err := r.TagObject(h); err == nil {
			out = append(out, fmt.Sprintf("%s (tag %s)", text.Short(h.String()), t.Name))
		}
	}
	sort.Strings(out)
	return out
}

// Result says what Switch did.
type Result struct {
	Dir    string
	Commit Commit
	// Action is "created", "moved" or "unchanged".
	Action string
	// From is the previous sha when the worktree moved.
	From string
}

// Switch makes worktree name a detached checkout of ref: it creates it, or
// moves it when it is at another commit, or does nothing when it is at
// that commit already (patches applied on top of it are kept).
func (m *Manager) Switch(ctx context.Context, name, ref string) (Result, error) {
	dir, err := m.Dir(name)
	if err != nil {
		return Result{}, exitcode.BadInput(err)
	}
	c, err := m.Resolve(ref)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dir: dir, Commit: c}
	prov, err := ReadProvenance(dir)
	switch {
	case err == nil:
		if prov.SHA == c.SHA {
			res.Action = "unchanged"
			return res, nil
		}
		if dirty, err := m.dirty(ctx, dir); err != nil {
			return res, err
		} else if dirty {
			return res, exitcode.BadInputf("%w: worktree %s has uncommitted changes; commit or discard them (git -C %s status) before moving it to %s", ErrDirty, name, proc.Quote(dir), ref)
		}
		if err := m.Run.Run(ctx, m.git(dir, "checkout", "--quiet", "--detach", c.SHA)); err != nil {
			return res, exitcode.Failure(fmt.Errorf("moving worktree %s to %s: %w", name, ref, err))
		}
		res.Action, res.From = "moved", prov.SHA
	case errors.Is(err, os.ErrNotExist):
		if _, statErr := os.Lstat(dir); statErr == nil {
			return res, exitcode.BadInputf("%s exists but is not an abtest worktree (no %s); move it away or pick another name", dir, ProvenanceFile)
		}
		if err := m.Run.MkdirAll(m.Root, 0o755); err != nil {
			return res, exitcode.Failure(err)
		}
		if err := m.exclude(); err != nil {
			return res, exitcode.Failure(err)
		}
		args := []string{"worktree", "add", "--quiet", "--detach"}
		if m.registered(ctx, dir) {
			// Its directory was removed by hand: git refuses to add a
			// "missing but already registered worktree" unless forced.
			m.Run.Note("worktree %s: %s is registered in %s but missing; adding it again", name, dir, m.Source)
			args = append(args, "--force")
		}
		add := m.git(m.Source, append(args, dir, c.SHA)...)
		if err := m.Run.Run(ctx, add); err != nil {
			return res, exitcode.Failure(fmt.Errorf("creating worktree %s: %w", name, err))
		}
		res.Action = "created"
		prov = &Provenance{}
	default:
		return res, exitcode.Failure(err)
	}
	*prov = Provenance{Name: name, Source: m.Source, Ref: ref, SHA: c.SHA, Subject: c.Subject, Patches: []Patch{}}
	return res, m.writeProvenance(ctx, dir, prov)
}

// Reset puts worktree name at sha with no patches and nothing
// uncommitted, in place: its build directory (ignored, as abtest's files
// are) stays, so the next build compiles what differs, where a fresh
// worktree configured and compiled all of PostgreSQL 15 again (ccache
// hits: 64 s of configure, compile and install for a patch that adds one
// file). A worktree that does not exist is created.
func (m *Manager) Reset(ctx context.Context, name, sha string) (Result, error) {
	dir, err := m.Dir(name)
	if err != nil {
		return Result{}, exitcode.BadInput(err)
	}
	if _, err := ReadProvenance(dir); errors.Is(err, os.ErrNotExist) {
		return m.Switch(ctx, name, sha)
	} else if err != nil {
		return Result{}, exitcode.Failure(err)
	}
	c, err := m.Resolve(sha)
	if err != nil {
		return Result{}, err
	}
	if err := m.exclude(); err != nil { // so that clean keeps abtest's files
		return Result{}, exitcode.Failure(err)
	}
	am := m.git(dir, "rev-parse", "--git-path", "rebase-apply")
	am.ReadOnly = true
	if out, err := m.Run.Output(ctx, am); err == nil && out != "" {
		p := strings.TrimSpace(out)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err == nil {
			// A git am left half-way (abtest killed while patching).
			_ = m.Run.Run(ctx, m.git(dir, "am", "--abort"))
		}
	}
	for _, args := range [][]string{{"reset", "--quiet", "--hard", c.SHA}, {"clean", "-d", "--force", "--quiet"}} {
		if err := m.Run.Run(ctx, m.git(dir, args...)); err != nil {
			return Result{}, exitcode.Failure(fmt.Errorf("resetting worktree %s to %s: %w", name, text.Short(c.SHA), err))
		}
	}
	prov := &Provenance{Name: name, Source: m.Source, Ref: sha, SHA: c.SHA, Subject: c.Subject, Patches: []Patch{}}
	return Result{Dir: dir, Commit: c, Action: "reset"}, m.writeProvenance(ctx, dir, prov)
}

// Info returns the provenance of worktree name, with Dirty read now.
func (m *Manager) Info(ctx context.Context, name string) (*Provenance, error) {
	dir, err := m.Dir(name)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	prov, err := ReadProvenance(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.BadInputf("%w %q in %s; create it with: abtest switch %s -k COMMIT", ErrNotFound, name, m.Root, name)
	}
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	if prov.Dirty, err = m.dirty(ctx, dir); err != nil {
		return nil, err
	}
	return prov, nil
}

// List returns the provenance of every worktree under the root, by name.
func (m *Manager) List(ctx context.Context) ([]*Provenance, error) {
	ents, err := os.ReadDir(m.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Provenance
	for _, e := range ents {
		if !e.IsDir() || safepath.CheckName(e.Name()) != nil {
			continue
		}
		p, err := m.Info(ctx, e.Name())
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Remove removes worktree name: the checkout and git's record of it. It
// refuses anything that is not a directory inside the worktrees root.
func (m *Manager) Remove(ctx context.Context, name string) error {
	dir, err := m.Dir(name)
	if err != nil {
		return exitcode.BadInput(err)
	}
	if err := safepath.CheckRemovable(m.Root, dir); err != nil {
		return exitcode.BadInput(fmt.Errorf("removing worktree %s: %w", name, err))
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// Without its source repository (moved or deleted) git cannot remove
	// the worktree, but its directory still goes.
	_, repoErr := m.Repo()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil && repoErr == nil {
		if err := m.Run.Run(ctx, m.git(m.Source, "worktree", "remove", "--force", "--force", dir)); err != nil {
			return exitcode.Failure(fmt.Errorf("removing worktree %s: %w", name, err))
		}
	}
	if err := m.Run.RemoveAll(dir); err != nil {
		return exitcode.Failure(err)
	}
	if repoErr == nil {
		if err := m.Run.Run(ctx, m.git(m.Source, "worktree", "prune")); err != nil {
			return exitcode.Failure(err)
		}
	}
	return nil
}

// git returns a git command run in dir.
func (m *Manager) git(dir string, args ...string) proc.Cmd {
	return proc.Cmd{Path: "git", Args: append([]string{"-C", dir}, args...)}
}

// registered reports whether the source repository lists dir as one of
// its worktrees (with its directory gone, when Switch asks).
func (m *Manager) registered(ctx context.Context, dir string) bool {
	c := m.git(m.Source, "worktree", "list", "--porcelain")
	c.ReadOnly = true
	out, err := m.Run.Output(ctx, c)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && filepath.Clean(p) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// dirty reports whether dir has uncommitted changes (untracked files
// count; ignored and excluded ones do not).
func (m *Manager) dirty(ctx context.Context, dir string) (bool, error) {
	c := m.git(dir, "status", "--porcelain")
	c.ReadOnly = true
	out, err := m.Run.Output(ctx, c)
	if err != nil {
		return false, exitcode.Failure(err)
	}
	return strings.TrimSpace(out) != "", nil
}

// excludeLines are what the source repository's info/exclude gains, so that
// abtest's own files never make a worktree look dirty.
var excludeLines = []string{"/" + ProvenanceFile, "/" + BuildDir + "/"}

// exclude adds excludeLines to the common git dir's info/exclude.
func (m *Manager) exclude() error {
	c := m.git(m.Source, "rev-parse", "--git-common-dir")
	c.ReadOnly = true
	out, err := m.Run.Output(context.Background(), c)
	if err != nil {
		return err
	}
	common := strings.TrimSpace(out)
	if !filepath.IsAbs(common) {
		common = filepath.Join(m.Source, common)
	}
	path := filepath.Join(common, "info", "exclude")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	text := string(old)
	changed := false
	for _, l := range excludeLines {
		if !have[l] {
			if text != "" && !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			if !changed {
				text += "# added by abtest: its files inside worktrees\n"
			}
			text += l + "\n"
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := m.Run.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return m.Run.WriteFile(path, []byte(text), 0o644)
}

// ReadProvenance reads dir's provenance record; a missing one is
// os.ErrNotExist.
func ReadProvenance(dir string) (*Provenance, error) {
	data, err := os.ReadFile(filepath.Join(dir, ProvenanceFile))
	if err != nil {
		return nil, err
	}
	var p Provenance
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ProvenanceFile), err)
	}
	return &p, nil
}

func (m *Manager) writeProvenance(ctx context.Context, dir string, p *Provenance) error {
	p.Time = time.Now().UTC()
	if !m.Run.DryRun {
		d, err := m.dirty(ctx, dir)
		if err != nil {
			return err
		}
		p.Dirty = d
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := m.Run.WriteFile(filepath.Join(dir, ProvenanceFile), append(data, '\n'), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	return nil
}

func fileSHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
