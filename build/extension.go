package build

// Extensions: a source tree built with PGXS against an install
// (`make USE_PGXS=1 PG_CONFIG=INSTALL/bin/pg_config install`) and
// installed into it.
//
// The tree is copied (without .git) to $PG_INSTALL_DIR/.abtest-ext/BUILD/NAME
// and built there, never in place: objects built against one server must
// not be linked into another's extension, and the user's tree stays as
// it was. The build is skipped when its fingerprint (the tree's files,
// the server build's fingerprint, the install) is the one recorded in
// INSTALL/.abtest-ext-NAME.json, written only after a successful install.
// Like a server build it runs as User with ccache (base_dir the copies'
// root, so a rebuilt copy compiles the same relative paths) and stops the
// servers running the install before it installs into it; make installs
// into a staging directory, whose files abtest copies into the install
// (extinstall.go). As root the tree must be root's or the invoking
// user's and writable by nobody else, every file and directory of it
// (safefile.Trusted, InputEntry): its Makefile is code.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
)

// extRecipe changes whenever the way abtest builds extensions changes.
const extRecipe = "1"

// Extension is an extension source tree as the user names it (--extension
// DIR), read once: its name (the directory's), where it is, its git
// commit and the hash of its files.
type Extension struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// SHA is the tree's git HEAD when it is in a git repository.
	SHA string `json:"sha,omitempty"`
	// Tree is the sha256 of its files' paths, modes and contents, .git
	// left out.
	Tree string `json:"tree_sha256"`
}

// ExtensionInfo is an extension build's record
// (INSTALL/.abtest-ext-NAME.json).
type ExtensionInfo struct {
	Extension
	Install string `json:"install"`
	// Server is the server build's fingerprint (or, for an install abtest
	// did not build, its version) the extension was built against.
	Server      string    `json:"server"`
	Fingerprint string    `json:"fingerprint"`
	CC          string    `json:"cc"`
	Log         string    `json:"log"`
	BuiltAt     time.Time `json:"built_at"`
	Seconds     float64   `json:"seconds"`
}

// ExtensionResult is what BuildExtension did.
type ExtensionResult struct {
	Info    *ExtensionInfo
	Skipped bool
	// Stopped names the clusters stopped before the install.
	Stopped []string
}

// ReadExtension checks that dir is an extension source tree (a directory
// with a Makefile; else bad input, exit 2) and reads what identifies it.
func ReadExtension(ctx context.Context, run *proc.Runner, dir string) (*Extension, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, exitcode.BadInputf("--extension %s: %v", dir, err)
	}
	if st, err := os.Stat(filepath.Join(abs, "Makefile")); err != nil || !st.Mode().IsRegular() {
		return nil, exitcode.BadInputf("--extension %s: no Makefile there; give the directory of an extension's source built with PGXS", dir)
	}
	if err := safefile.Trusted(abs); err != nil {
		return nil, exitcode.BadInputf("--extension %s: %v", dir, err)
	}
	if err := safefile.CheckInput(filepath.Join(abs, "Makefile")); err != nil {
		return nil, exitcode.BadInputf("--extension %s: %v", dir, err)
	}
	e := &Extension{Name: filepath.Base(abs), Dir: abs}
	if err := safepath.CheckName(e.Name); err != nil {
		return nil, exitcode.BadInputf("--extension %s: %v", dir, err)
	}
	if e.Tree, err = hashTree(abs); err != nil {
		return nil, exitcode.BadInputf("--extension %s: %v", dir, err)
	}
	out, err := run.Output(ctx, proc.Cmd{Path: "git", Args: []string{"-C", abs, "rev-parse", "--verify", "-q", "HEAD"}, ReadOnly: true})
	if err == nil {
		e.SHA = strings.TrimSpace(out)
	}
	return e, nil
}

// hashTree hashes the regular files and links under dir (not .git) in
// walk order: path, executable bit, content. As root, an entry another
// account owns or can write is refused (safefile.InputEntry).
func hashTree(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := d.Info(); err != nil {
			return err
		} else if err := safefile.InputEntry(path, info); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link %s\x00%s\x00", rel, target)
		case d.Type().IsRegular():
			if d.Name() == ".git" {
				return nil // a worktree's or submodule's pointer
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(h, "file %s %v %d\x00", rel, info.Mode().Perm()&0o111 != 0, info.Size())
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// ExtensionFile is the record of extension name in an install prefix.
func ExtensionFile(install, name string) string {
	return filepath.Join(install, ".abtest-ext-"+name+".json")
}

// ReadExtensionInfo reads the record of extension name in install.
func ReadExtensionInfo(install, name string) (*ExtensionInfo, error) {
	data, err := os.ReadFile(ExtensionFile(install, name))
	if err != nil {
		return nil, err
	}
	var i ExtensionInfo
	if err := json.Unmarshal(data, &i); err != nil {
		return nil, fmt.Errorf("%s: %w", ExtensionFile(install, name), err)
	}
	return &i, nil
}

// ExtensionFingerprint is the fingerprint of e built into install whose
// server build has fingerprint server.
func ExtensionFingerprint(e *Extension, install, server string) string {
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\nname=%s\ntree=%s\ninstall=%s\nserver=%s\n", extRecipe, e.Name, e.Tree, install, server)
	return hex.EncodeToString(h.Sum(nil))
}

// ExtensionCached says whether e is built into install for server
// already.
func ExtensionCached(e *Extension, install, server string) bool {
	prev, err := ReadExtensionInfo(install, e.Name)
	return err == nil && prev.Fingerprint == ExtensionFingerprint(e, install, server)
}

// ExtensionServer is what identifies the server of install for its
// extensions' fingerprints: its build fingerprint server, or, for an
// install abtest did not build (server ""), its version.
func (b *Builder) ExtensionServer(ctx context.Context, install, server string) (string, error) {
	if server != "" {
		return server, nil
	}
	v, err := ServerVersion(ctx, b.Run, install, nil)
	return "version:" + v, err
}

// ExtensionLog is the log of extension name's build for build: beside the
// build's log.
func (b *Builder) ExtensionLog(build, name string) string {
	return filepath.Join(b.InstallRoot, build+".ext-"+name+".log")
}

// extensionRoot holds the copies extensions are built in.
func (b *Builder) extensionRoot() string { return filepath.Join(b.InstallRoot, ".abtest-ext") }

// BuildExtension builds e into install, the prefix of build (its name,
// for the copy, the log and progress), unless its fingerprint is
// recorded there; server is the server build's fingerprint ("" for an
// install abtest did not build: its version stands in). sink, when not
// nil and not a dry run, is told the build's start, outcome or that it
// is up to date. A failure is exit 3 naming the log.
func (b *Builder) BuildExtension(ctx context.Context, sink progress.Sink, e *Extension, build, install, server string, o Options) (*ExtensionResult, error) {
	// Root runs its postgres and pg_config: an install of another
	// account's is refused first (a dry run's may not be made yet).
	if !b.Run.DryRun || exists(filepath.Join(install, "bin", "postgres")) {
		if err := CheckTrusted(install); err != nil {
			return nil, err
		}
	}
	server, err := b.ExtensionServer(ctx, install, server)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("extension %s: %w", e.Name, err))
	}
	task := build + "+" + e.Name
	info := &ExtensionInfo{Extension: *e, Install: install, Server: server, Fingerprint: ExtensionFingerprint(e, install, server), Log: b.ExtensionLog(build, e.Name)}
	emit := func(ev progress.Event) {
		if sink != nil && !b.Run.DryRun {
			ev.Task = task
			sink.Emit(ev)
		}
	}
	if prev, err := ReadExtensionInfo(install, e.Name); err == nil && prev.Fingerprint == info.Fingerprint && !o.Force {
		b.Run.Note("extension %s into %s: fingerprint %s unchanged, skipping", e.Name, build, text.Short(info.Fingerprint))
		emit(progress.Event{Kind: progress.BuildCached, Detail: "extension " + e.Dir, From: "fingerprint " + text.Short(info.Fingerprint)})
		return &ExtensionResult{Info: prev, Skipped: true}, nil
	}
	emit(progress.Event{Kind: progress.BuildStart, Detail: "extension " + e.Dir, Log: info.Log, From: "PGXS"})
	res, err := b.buildExtension(ctx, info, build, o)
	if err != nil {
		emit(progress.Event{Kind: progress.Abort})
		return nil, err
	}
	emit(progress.Event{Kind: progress.BuildDone, Detail: fmt.Sprintf("PGXS, CC=%s", info.CC)})
	return res, nil
}

func (b *Builder) buildExtension(ctx context.Context, info *ExtensionInfo, build string, o Options) (*ExtensionResult, error) {
	task := build + "+" + info.Name
	work, err := safepath.Under(b.extensionRoot(), build)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	work = filepath.Join(work, info.Name)
	if err := b.reachable(ctx, b.InstallRoot, info.Install); err != nil {
		return nil, err
	}
	ccache := !o.NoCCache && lookPath("ccache")
	cc, err := b.Run.Output(ctx, proc.Cmd{Path: filepath.Join(info.Install, "bin", "pg_config"), Args: []string{"--cc"}, ReadOnly: true, Dir: "/"})
	if err != nil {
		return nil, b.failure(task, "pg_config", info.Log, err)
	}
	info.CC = strings.TrimSpace(cc)
	if ccache && !strings.HasPrefix(info.CC, "ccache ") {
		info.CC = "ccache " + info.CC
	}
	env := []string{"CCACHE_DISABLE=1"}
	if ccache {
		env = []string{"CCACHE_BASEDIR=" + b.extensionRoot(), "CCACHE_NOHASHDIR=1"}
		if b.User != nil {
			env = append(env, "CCACHE_DIR="+b.ccacheDir())
		}
	}
	if err := b.prepareExtension(ctx, info, work, ccache); err != nil {
		return nil, err
	}
	start := time.Now()
	pgxs := []string{"USE_PGXS=1", "PG_CONFIG=" + filepath.Join(info.Install, "bin", "pg_config"), "CC=" + info.CC}
	mk := func(args ...string) proc.Cmd {
		return proc.Cmd{Path: "make", Args: append(append([]string{"-s"}, args...), pgxs...), Dir: work, Env: env, Unset: makeVars, Log: info.Log, User: b.User}
	}
	// clean: a tree the user built in place brings objects of another
	// server along in its copy.
	for _, s := range []struct {
		phase string
		cmd   proc.Cmd
	}{{"compile", mk("clean")}, {"compile", mk("-j", b.jobs())}} {
		if err := b.Run.Run(ctx, s.cmd); err != nil {
			return nil, b.failure(task, s.phase, info.Log, err)
		}
	}
	// make installs into a staging directory as the build account;
	// abtest copies what it staged into the install (installStaged).
	stage := stageDir(work)
	if err := b.Run.RemoveAll(stage); err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := b.Run.Run(ctx, mk("install", "DESTDIR="+stage)); err != nil {
		return nil, b.failure(task, "install", info.Log, err)
	}
	var stopped []string
	if !b.Run.DryRun {
		if stopped, err = b.stopServers(ctx, info.Install); err != nil {
			return nil, err
		}
	}
	if err := b.Run.RemoveAll(ExtensionFile(info.Install, info.Name)); err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := b.installStaged(ctx, info, stage); err != nil {
		return nil, installError(info, err)
	}
	info.Seconds, info.BuiltAt = time.Since(start).Seconds(), time.Now().UTC()
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := b.Run.WriteFile(ExtensionFile(info.Install, info.Name), append(data, '\n'), 0o644); err != nil {
		return nil, exitcode.Failure(err)
	}
	return &ExtensionResult{Info: info, Stopped: stopped}, nil
}

// prepareExtension makes a fresh copy of the tree in work, a fresh log,
// and hands the copy (and ccache's directory) to User; the directories
// above it stay root's.
func (b *Builder) prepareExtension(ctx context.Context, info *ExtensionInfo, work string, ccache bool) error {
	if err := b.reclaim(b.extensionRoot(), filepath.Dir(work)); err != nil {
		return extensionHandOver(info, err)
	}
	if err := b.Run.RemoveAll(work); err != nil {
		return exitcode.Failure(err)
	}
	if err := b.Run.MkdirAll(work, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	// The copy is root's (then handed to User): the tree may be the sudo
	// caller's.
	if err := b.Run.Run(ctx, proc.Cmd{Path: "cp", Args: []string{"-a", "--no-preserve=ownership", info.Dir + "/.", work}}); err != nil {
		return exitcode.Failure(fmt.Errorf("extension %s: copying %s: %w", info.Name, info.Dir, err))
	}
	if err := b.Run.RemoveAll(filepath.Join(work, ".git")); err != nil {
		return exitcode.Failure(err)
	}
	if b.Run.DryRun {
		return nil
	}
	if err := safefile.WriteFile(info.Log, nil, 0o644); err != nil {
		return exitcode.Failure(err)
	}
	if b.User == nil {
		return nil
	}
	uid, gid := int(b.User.UID), int(b.User.GID)
	dirs := []string{work}
	if ccache {
		if err := safefile.MkdirAll(b.ccacheDir(), 0o755); err != nil {
			return exitcode.Failure(err)
		}
	}
	for _, d := range dirs {
		if err := chownTree(d, uid, gid); err != nil {
			return extensionHandOver(info, err)
		}
	}
	if ccache {
		return extensionHandOver(info, b.adoptCCache())
	}
	return nil
}

// extensionHandOver is a failure to hand the extension's trees over:
// exit 2 for another account's entry there (ErrForeign), else 3.
func extensionHandOver(info *ExtensionInfo, err error) error {
	if err == nil || errors.Is(err, ErrForeign) {
		return err
	}
	return exitcode.Failure(fmt.Errorf("extension %s: %w", info.Name, err))
}
