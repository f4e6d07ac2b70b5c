package workload

import (
	"sync"
	"syscall"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// pgbenchFiles is what pgbench opens besides one socket per client (its
// own check: "need at least clients+3 open files").
const pgbenchFiles = 3

// OpenFiles is the number of files pgbench may open on this host: this
// process's soft RLIMIT_NOFILE, which every child inherits. Go raises
// its own soft limit to the hard one at start and would hand children
// the original (often 1024) back (go.dev/issue/46279); setting the
// limit once here keeps the raised one for them, so the limit checked is
// the limit pgbench gets. 0 means unknown.
var OpenFiles = sync.OnceValue(func() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0 // children get the original limit, which is unknown
	}
	return lim.Cur
})

// CheckClients refuses a client count pgbench cannot open on this host
// (-c; pgbench itself would fail every run with "need at least N open
// files").
func CheckClients(clients int) error {
	if clients < 1 {
		return exitcode.BadInputf("-c %d: want at least 1 client", clients)
	}
	need := uint64(clients) + pgbenchFiles
	if have := OpenFiles(); have != 0 && need > have {
		return exitcode.BadInputf("-c %d: pgbench needs %d open files but may open %d here (RLIMIT_NOFILE): lower -c, or raise the limit (ulimit -n %d) and run again", clients, need, have, need)
	}
	return nil
}
