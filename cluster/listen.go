package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// CheckListen checks a listen_addresses value before it reaches a
// configuration: postgres -C does not parse it (only a starting
// postmaster does, and then exits FATAL), so a bad value used to stop a
// running cluster and leave it down. The value is a comma-separated list
// (PostgreSQL's SplitGUCList syntax) of *, addresses or host names that
// resolve. Errors are ErrSetting with exit 2.
func CheckListen(ctx context.Context, listen string) error {
	names, ok := splitGUCList(listen)
	if !ok {
		return exitcode.BadInputf("%w: listen_addresses %q: invalid list syntax; give a comma-separated list of host names or addresses, or *", ErrSetting, listen)
	}
	for _, n := range names {
		if n == "*" || net.ParseIP(n) != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := net.DefaultResolver.LookupHost(cctx, n)
		cancel()
		if err != nil {
			return exitcode.BadInputf("%w: listen_addresses %q: host %q does not resolve: %v", ErrSetting, listen, n, err)
		}
	}
	return nil
}

func isGUCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// splitGUCList splits s as PostgreSQL's SplitGUCList does: names
// separated by commas, each bare (no blanks, no comma) or double-quoted
// ("" for a quote), blanks around them ignored; no name may be empty.
func splitGUCList(s string) ([]string, bool) {
	i := 0
	skip := func() {
		for i < len(s) && isGUCSpace(s[i]) {
			i++
		}
	}
	skip()
	if i == len(s) {
		return nil, true
	}
	var names []string
	for {
		var name strings.Builder
		if s[i] == '"' {
			i++
			for {
				end := strings.IndexByte(s[i:], '"')
				if end < 0 {
					return nil, false
				}
				name.WriteString(s[i : i+end])
				i += end + 1
				if i < len(s) && s[i] == '"' {
					name.WriteByte('"')
					i++
					continue
				}
				break
			}
		} else {
			start := i
			for i < len(s) && s[i] != ',' && !isGUCSpace(s[i]) {
				i++
			}
			name.WriteString(s[start:i])
		}
		if name.Len() == 0 {
			return nil, false
		}
		names = append(names, name.String())
		skip()
		switch {
		case i == len(s):
			return names, true
		case s[i] == ',':
			i++
			skip()
			if i == len(s) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
}

// undoLaunch puts back what a failed launch changed. A server that ran
// before is never left down by a restart that failed, whatever the
// reason (a setting the server refused, an address it cannot bind):
// the old include comes back and the server starts again as it was. A
// new cluster is removed only when a setting was refused. A cluster left
// stopped keeps no socket directory.
func (m *Manager) undoLaunch(ctx context.Context, s *startup, err error) {
	ranBefore := s.running && s.prev != nil
	if !ranBefore {
		if errors.Is(err, ErrSetting) {
			m.restore(s)
		} else {
			m.socketDone(s.name, s.conf.SocketDir, s.dir)
		}
		return
	}
	m.restore(s)
	if rerr := m.start(ctx, s.prev); rerr != nil {
		m.logf("cluster %s: starting it again as it was: %v", s.name, rerr)
		return
	}
	m.logf("cluster %s: running again as it was", s.name)
}
