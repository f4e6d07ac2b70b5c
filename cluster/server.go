package cluster

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// DataDirAt asks the server listening on port for its data directory.
// host is a host name or socket directory and user a role; empty ones
// are libpq's defaults. It works for any local server, not only one
// abtest started: perf record -p PORT profiles a server by its data
// directory.
func DataDirAt(ctx context.Context, port int, host, user string) (string, error) {
	conn := fmt.Sprintf("port=%d dbname=postgres sslmode=disable connect_timeout=5", port)
	if host != "" {
		conn += " host=" + host
	}
	if user != "" {
		conn += " user=" + user
	}
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return "", exitcode.Failure(fmt.Errorf("cannot connect to port %d: %v", port, err))
	}
	defer c.Close(ctx)
	var dir string
	if err := c.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return "", exitcode.Failure(err)
	}
	return dir, nil
}

// RunningProcesses returns a function that lists the processes of the
// server running in dir (Processes), or a usage error when none runs
// there now.
func RunningProcesses(dir string) (func() []int, error) {
	if len(Processes(dir)) == 0 {
		return nil, exitcode.BadInputf("no running server in %s (its postmaster.pid must be readable here)", dir)
	}
	return func() []int { return Processes(dir) }, nil
}
