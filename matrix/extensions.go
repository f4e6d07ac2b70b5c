package matrix

// Extensions, preloaded libraries and setup SQL (issue 26): an extension
// tree is built with PGXS into every build of the plan after the build
// itself (build.Builder.BuildExtension, cached by fingerprint); the
// preloaded libraries join pg_stat_statements in every cluster's
// shared_preload_libraries; the setup SQL runs on every cluster's
// benchmark database before a cell, with ${name} replaced by the cell's
// setting or variable of that name (results.ExpandSetupSQL), again
// whenever those values change (cluster.Manager.RunSetup).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// libRE is a library name shared_preload_libraries can hold unquoted.
var libRE = regexp.MustCompile(`^[A-Za-z0-9_.$/-]+$`)

// prepareExtras checks the request's extensions, preloaded libraries and
// setup SQL (bad input, exit 2, before anything exists) and records them
// in p's options.
func prepareExtras(ctx context.Context, deps *Deps, req Request, p *results.Plan) error {
	seen := map[string]string{}
	run := deps.Proc
	if run == nil {
		run = &proc.Runner{}
	}
	for _, dir := range req.Extensions {
		e, err := build.ReadExtension(ctx, run, dir)
		if err != nil {
			return err
		}
		if other, ok := seen[e.Name]; ok {
			return exitcode.BadInputf("--extension %s and %s: two trees named %s; give one", other, dir, e.Name)
		}
		seen[e.Name] = dir
		p.Options.Extensions = append(p.Options.Extensions, e.Dir)
	}
	for _, lib := range req.Preload {
		if !libRE.MatchString(lib) || lib == "pg_stat_statements" || slices.Contains(p.Options.Preload, lib) {
			return exitcode.BadInputf("--preload %q: want a library name such as pg_cron, each once (pg_stat_statements is always preloaded)", lib)
		}
		p.Options.Preload = append(p.Options.Preload, lib)
	}
	if len(req.Preload) > 0 && slices.ContainsFunc(p.Options.Settings, func(a results.Axis) bool { return a.Name == "shared_preload_libraries" }) {
		return exitcode.BadInputf("--preload and --set shared_preload_libraries: give the libraries one way, --preload LIB")
	}
	if req.SetupSQL == "" {
		return nil
	}
	if req.Instructions || req.InstructionsOnly {
		return exitcode.BadInputf("--setup-sql does not run before instruction cells yet: drop --instructions")
	}
	abs, err := filepath.Abs(req.SetupSQL)
	if err != nil {
		return exitcode.BadInputf("--setup-sql %s: %v", req.SetupSQL, err)
	}
	// Run as the server's superuser: safefile.Input refuses a file
	// another account can write, and what is not a regular file.
	sql, err := safefile.Input(abs)
	if err != nil {
		return exitcode.BadInputf("--setup-sql %s: %v", req.SetupSQL, err)
	}
	for _, c := range p.Configs {
		if _, err := results.ExpandSetupSQL(string(sql), c.SetupValues()); err != nil {
			return exitcode.BadInputf("--setup-sql %s: %v", req.SetupSQL, err)
		}
	}
	sum := sha256.Sum256(sql)
	p.Options.SetupSQL, p.Options.SetupSQLSHA256 = abs, hex.EncodeToString(sum[:])
	return nil
}

// extensions builds the plan's extensions into c's build (whose server
// fingerprint is known now) and records their provenance in c.
func (r *run) extensions(ctx context.Context, c *results.Commit) error {
	if len(r.plan.Options.Extensions) == 0 {
		return nil
	}
	if r.deps.Builder == nil {
		return exitcode.Failure(fmt.Errorf("matrix: extensions need a builder (Deps.Builder)"))
	}
	b := *r.deps.Builder
	if b.Servers != nil {
		b.Servers = &recordStops{Servers: b.Servers, r: r}
	}
	c.Extensions = nil
	for _, dir := range r.plan.Options.Extensions {
		e, err := build.ReadExtension(ctx, r.deps.Proc, dir)
		if err != nil {
			return err
		}
		res, err := b.BuildExtension(ctx, r.deps.sink(), e, c.Build, r.installs[c.Build], c.Fingerprint, r.deps.BuildOptions)
		if err != nil {
			return fmt.Errorf("building extension %s into %s: %w", e.Name, c.Label, err)
		}
		c.Extensions = append(c.Extensions, results.Extension{Name: e.Name, Dir: e.Dir, SHA: e.SHA, Tree: e.Tree, Fingerprint: res.Info.Fingerprint})
	}
	return nil
}

// checkPreload refuses (exit 2) a preloaded library an install does not
// have in its pkglibdir, before any cell: every server would refuse to
// start.
func (r *run) checkPreload(ctx context.Context) error {
	if len(r.plan.Options.Preload) == 0 || r.deps.Proc.DryRun {
		return nil
	}
	for _, c := range r.plan.Commits {
		install := r.installs[c.Build]
		out, err := r.deps.Proc.Output(ctx, proc.Cmd{Path: filepath.Join(install, "bin", "pg_config"), Args: []string{"--pkglibdir"}, ReadOnly: true, Dir: "/"})
		if err != nil {
			return exitcode.Failure(fmt.Errorf("pg_config of %s: %w", c.Label, err))
		}
		lib := strings.TrimSpace(out)
		for _, l := range r.plan.Options.Preload {
			name := strings.TrimPrefix(l, "$libdir/")
			if strings.Contains(name, "/") {
				continue // a path: the server says
			}
			if _, err := os.Stat(filepath.Join(lib, strings.TrimSuffix(name, ".so")+".so")); err != nil {
				return exitcode.BadInputf("--preload %s: build %s has no %s.so in %s; build it in with --extension DIR", l, c.Build, name, lib)
			}
		}
	}
	return nil
}

// setup runs the plan's setup SQL, with cell's values, on the cluster st
// (cluster.Manager.RunSetup: only when it did not run there last with
// these values, settings, preloads and extension builds).
func (r *run) setup(ctx context.Context, st *cluster.State, cell results.Cell) error {
	if r.setupSQL == "" {
		return nil
	}
	sql, err := results.ExpandSetupSQL(r.setupSQL, cell.SetupValues())
	if err != nil {
		return fmt.Errorf("setup SQL %s: %w", r.plan.Options.SetupSQL, err)
	}
	ran, err := r.deps.Clusters.RunSetup(ctx, st, r.plan.Options.SetupSQL, sql)
	if ran && err == nil {
		r.deps.printf("cluster %s: ran setup SQL %s\n", st.Name, filepath.Base(r.plan.Options.SetupSQL))
	}
	return err
}

// readSetup reads the plan's setup SQL, refusing a file changed since
// the plan was made (a resume would run other SQL than the cells before).
func (r *run) readSetup() error {
	o := r.plan.Options
	if o.SetupSQL == "" {
		return nil
	}
	data, err := safefile.Input(o.SetupSQL)
	if err != nil {
		return exitcode.BadInputf("--setup-sql %s: %v", o.SetupSQL, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != o.SetupSQLSHA256 {
		return exitcode.BadInputf("--setup-sql %s changed since the plan was made (sha256 %s, now %s): put it back, or start a new run", o.SetupSQL, text.Short(o.SetupSQLSHA256), text.Short(hex.EncodeToString(sum[:])))
	}
	r.setupSQL = string(data)
	return nil
}

// installFingerprint is the build fingerprint of a prebuilt install
// (-k X=install:DIR): that of its .abtest-build.json when abtest built
// it, "" for another's. The measured server must match it, and the
// extensions built into it are built against it (BuildExtension).
func installFingerprint(install string) string {
	if info, err := build.ReadInfo(install); err == nil {
		return info.Fingerprint
	}
	return ""
}

// extensionLines are -n's lines for the plan's extensions in build c:
// cached, or built after the build. serverFP is the build's fingerprint
// when it is installed, else "" (the extension is built after it); an
// install's is found as the run finds it (installFingerprint, else its
// version): -n said "to build" for a pg_cron cached in an install abtest
// built, whose extensions the run fingerprints with its build's
// fingerprint, not its version.
func extensionLines(ctx context.Context, deps *Deps, dirs []string, c *results.Commit, install, serverFP string) []string {
	var out []string
	if deps.Builder == nil {
		return nil
	}
	if c.Install != "" {
		serverFP, _ = deps.Builder.ExtensionServer(ctx, install, installFingerprint(install))
	}
	for _, dir := range dirs {
		e, err := build.ReadExtension(ctx, deps.Proc, dir)
		if err != nil {
			continue
		}
		state := fmt.Sprintf("to build with PGXS (make USE_PGXS=1 PG_CONFIG=%s install; log %s)", filepath.Join(install, "bin", "pg_config"), deps.Builder.ExtensionLog(c.Build, e.Name))
		if serverFP != "" && build.ExtensionCached(e, install, serverFP) {
			state = "cached (fingerprint " + text.Short(build.ExtensionFingerprint(e, install, serverFP)) + ")"
		}
		out = append(out, fmt.Sprintf("extension %s into build %s: %s", e.Name, c.Build, state))
	}
	return out
}
