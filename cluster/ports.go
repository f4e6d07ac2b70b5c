package cluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// Holder describes who listens on a TCP port, as far as /proc shows it.
type Holder struct {
	PID     int
	Command string
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "another process (not visible to this user)"
	}
	return fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
}

// PortHolder reports whether something listens on TCP port (any address,
// IPv4 or IPv6), and who, when /proc lets us see it.
func PortHolder(port int) (Holder, bool) {
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		// /proc/net may be hidden; a bind attempt is the last word.
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return Holder{}, true
		}
		l.Close()
		return Holder{}, false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if !inodes[inode] {
			continue
		}
		pidDir := filepath.Dir(filepath.Dir(fd))
		pid, _ := strconv.Atoi(filepath.Base(pidDir))
		cmd, _ := os.ReadFile(filepath.Join(pidDir, "cmdline"))
		c := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if len(c) > 80 {
			c = c[:80] + "…"
		}
		return Holder{PID: pid, Command: c}, true
	}
	return Holder{}, true
}

// listeningInodes returns the socket inodes in LISTEN state on port.
func listeningInodes(port int) map[string]bool {
	out := map[string]bool{}
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st ... inode (index 9)
			if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], hexPort) {
				continue
			}
			out[fields[9]] = true
		}
		fh.Close()
	}
	return out
}

// choosePort returns the port for cluster name: the one asked for, else
// its previous one, else (or with AutoPort) the first free one from
// FirstPort. A port held by a process abtest did not start is refused,
// and so is the port of another running abtest cluster.
func (m *Manager) choosePort(name, dir string, prev *State, opts Options) (int, error) {
	own, _ := PID(dir)
	taken := m.portsOfOthers(name)
	free := func(port int) (string, bool) {
		if other, ok := taken[port]; ok {
			return "abtest cluster " + other, false
		}
		h, busy := PortHolder(port)
		if busy && (own == 0 || h.PID != own) {
			return h.String(), false
		}
		return "", true
	}
	port := opts.Port
	if port == 0 && !opts.AutoPort && prev != nil {
		// A remembered port is a preference, not a demand: another
		// cluster may have been given it since.
		who, ok := free(prev.Port)
		if ok {
			return prev.Port, nil
		}
		m.logf("cluster %s: its port %d is now held by %s; picking a free one", name, prev.Port, who)
	}
	if port != 0 && !opts.AutoPort {
		if port < 1 || port > 65535 {
			return 0, exitcode.BadInputf("-p %d: not a port number", port)
		}
		if who, ok := free(port); !ok {
			return 0, exitcode.BadInputf("%w: port %d is held by %s; abtest will not touch it: pass -p auto or another -p", ErrPortBusy, port, who)
		}
		return port, nil
	}
	for p := FirstPort; p < FirstPort+1000; p++ {
		if _, ok := free(p); ok {
			return p, nil
		}
	}
	return 0, exitcode.Failure(fmt.Errorf("%w: no free port in %d-%d", ErrPortBusy, FirstPort, FirstPort+999))
}

// portsOfOthers maps the ports of abtest's other running clusters to their
// names, and those of the clusters a build stopped to start again
// (StopRecord): a run that stops the user's cluster must not give its
// port to its own, which a kill -9 would leave holding it.
func (m *Manager) portsOfOthers(name string) map[int]string {
	out := map[int]string{}
	states, _ := filepath.Glob(filepath.Join(m.Root, "*", stateFile))
	for _, f := range states {
		other := filepath.Base(filepath.Dir(f))
		if other == name {
			continue
		}
		st, err := m.ReadState(other)
		if err != nil {
			continue
		}
		if _, running := PID(st.DataDir); running {
			out[st.Port] = other
		} else if st.Stopped != nil {
			out[st.Port] = other + " (stopped by a build, to be started again)"
		}
	}
	return out
}
