package build

// Nothing may run an install's binaries while a build installs over
// them: Servers stops abtest's clusters, InstallUsers finds the rest.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/procfs"
)

// Servers stops what runs an install's binaries; cluster.Manager is one.
type Servers interface {
	// StopUsing stops the servers running the binaries under install
	// and returns their names.
	StopUsing(ctx context.Context, install string) ([]string, error)
}

// ErrInUse: a running process executes binaries of the install prefix a
// build would install over.
var ErrInUse = errors.New("build: install in use")

// stopServers makes sure nothing runs the binaries of install before a
// build installs over them: a server would go on running the replaced
// (deleted) binary, and load the new build's libraries into the old
// server's backends. Servers stops abtest's clusters; any process left
// executing install's binaries is refused, with its pid.
func (b *Builder) stopServers(ctx context.Context, install string) ([]string, error) {
	var stopped []string
	if b.Servers != nil {
		var err error
		if stopped, err = b.Servers.StopUsing(ctx, install); err != nil {
			return stopped, err
		}
	}
	if users := InstallUsers(install); len(users) > 0 {
		return stopped, exitcode.Failure(fmt.Errorf("%w: pid %d runs %s; stop that server before installing over it (abtest switch NAME --stop)", ErrInUse, users[0].PID, users[0].Exe))
	}
	return stopped, nil
}

// User is a process that executes a binary of an install prefix.
type User struct {
	PID int
	Exe string
}

// InstallUsers lists the processes executing a binary under install's
// bin directory (a replaced one included: /proc/PID/exe then ends in
// " (deleted)").
func InstallUsers(install string) []User {
	bin, err := filepath.Abs(filepath.Join(install, "bin"))
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	var out []User
	for _, st := range procfs.All() {
		exe, err := procfs.Exe(st.PID)
		if err != nil || !st.Alive() {
			continue
		}
		if strings.HasPrefix(strings.TrimSuffix(exe, " (deleted)"), bin+"/") {
			out = append(out, User{PID: st.PID, Exe: exe})
		}
	}
	return out
}
