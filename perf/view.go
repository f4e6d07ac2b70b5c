package perf

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/pprof/driver"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/perf/profiles"
)

// ViewOptions is what View serves.
type ViewOptions struct {
	File, DiffBase string // the profile, and the one it is shown relative to
	Addr           string // loopback host:port
	Out, Err       io.Writer
	// Serve, when set, replaces the HTTP server (tests call the handlers
	// and return).
	Serve func(*driver.HTTPServerArgs) error
}

// View serves pprof's web UI (flame graph, top, source) for o.File on a
// loopback address until ctx ends.
func View(ctx context.Context, o ViewOptions) error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
		return exitcode.BadInputf("--http %q: serve on loopback only, e.g. 127.0.0.1:8080", o.Addr)
	}
	if _, err := profiles.Read(o.File); err != nil {
		return err
	}
	args := []string{"-http=" + o.Addr, "-no_browser"}
	if o.DiffBase != "" {
		if _, err := profiles.Read(o.DiffBase); err != nil {
			return err
		}
		args = append(args, "-diff_base="+o.DiffBase)
	}
	args = append(args, o.File)
	serve := o.Serve
	if serve == nil {
		serve = func(a *driver.HTTPServerArgs) error { return listen(ctx, a, o.Addr, o.Out) }
	}
	return driver.PProf(&driver.Options{
		Flagset:    newFlagset(args),
		HTTPServer: serve,
		UI:         &quietUI{out: o.Err},
	})
}

// listen serves pprof's handlers on its host:port (else addr) until ctx
// ends.
func listen(ctx context.Context, a *driver.HTTPServerArgs, addr string, out io.Writer) error {
	l, err := net.Listen("tcp", net.JoinHostPort(a.Hostport, ""))
	if err != nil {
		l, err = net.Listen("tcp", addr)
		if err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	for path, h := range a.Handlers {
		mux.Handle(path, h)
	}
	fmt.Fprintf(out, "pprof UI: http://%s/ (flame graph: /flamegraph); ^C stops it\n", l.Addr())
	srv := &http.Server{Handler: mux}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// driverFlags implements pprof's driver.FlagSet over a fixed argument
// list.
type driverFlags struct {
	args  []string
	bools map[string]*bool
	ints  map[string]*int
	flts  map[string]*float64
	strs  map[string]*string
	lists map[string]*[]*string
}

func newFlagset(args []string) *driverFlags {
	return &driverFlags{args: args, bools: map[string]*bool{}, ints: map[string]*int{}, flts: map[string]*float64{}, strs: map[string]*string{}, lists: map[string]*[]*string{}}
}

func (f *driverFlags) Bool(n string, d bool, _ string) *bool {
	v := d
	f.bools[n] = &v
	return &v
}
func (f *driverFlags) Int(n string, d int, _ string) *int {
	v := d
	f.ints[n] = &v
	return &v
}
func (f *driverFlags) Float64(n string, d float64, _ string) *float64 {
	v := d
	f.flts[n] = &v
	return &v
}
func (f *driverFlags) String(n string, d string, _ string) *string {
	v := d
	f.strs[n] = &v
	return &v
}
func (f *driverFlags) StringList(n string, d string, _ string) *[]*string {
	v := []*string{}
	f.lists[n] = &v
	return &v
}
func (f *driverFlags) ExtraUsage() string   { return "" }
func (f *driverFlags) AddExtraUsage(string) {}

// Parse applies "-name=value" and "-name" arguments and returns the rest.
func (f *driverFlags) Parse(usage func()) []string {
	var rest []string
	for _, a := range f.args {
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case f.bools[name] != nil:
			*f.bools[name] = !hasVal || val == "true"
		case f.strs[name] != nil:
			*f.strs[name] = val
		case f.ints[name] != nil:
			*f.ints[name], _ = strconv.Atoi(val)
		case f.flts[name] != nil:
			*f.flts[name], _ = strconv.ParseFloat(val, 64)
		case f.lists[name] != nil:
			v := val
			*f.lists[name] = append(*f.lists[name], &v)
		default:
			usage()
		}
	}
	return rest
}

// quietUI sends pprof's messages to stderr.
type quietUI struct{ out io.Writer }

func (u *quietUI) ReadLine(string) (string, error)     { return "", fmt.Errorf("no terminal") }
func (u *quietUI) Print(args ...any)                   { fmt.Fprint(u.out, args...) }
func (u *quietUI) PrintErr(args ...any)                { fmt.Fprintln(u.out, args...) }
func (u *quietUI) IsTerminal() bool                    { return false }
func (u *quietUI) WantBrowser() bool                   { return false }
func (u *quietUI) SetAutoComplete(func(string) string) {}
