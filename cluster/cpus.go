package cluster

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
)

// AllowedCPUs returns the CPUs this process may run on (its affinity),
// ascending: not the host's online count (host.Host.OnlineCPUs).
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// ParseCPUs turns a -C value into CPU numbers: a count N takes the first N
// of online, a list such as "0-3,8" names them. Every CPU must be online.
func ParseCPUs(spec string, online []int) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	isOnline := map[int]bool{}
	for _, c := range online {
		isOnline[c] = true
	}
	if n, err := strconv.Atoi(spec); err == nil && !strings.ContainsAny(spec, ",-") {
		if n < 1 || n > len(online) {
			return nil, exitcode.BadInputf("-C %d: this machine has %d CPUs online (%s); pass 1 to %d, or a list such as 0-1", n, len(online), proc.CPUList(online), len(online))
		}
		return append([]int(nil), online[:n]...), nil
	}
	seen := map[int]bool{}
	var cpus []int
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, exitcode.BadInputf("-C %q: want a CPU count (2) or a CPU list (0-3,8)", spec)
		}
		for c := a; c <= b; c++ {
			if !isOnline[c] {
				return nil, exitcode.BadInputf("-C %q: CPU %d is not online (online: %s)", spec, c, proc.CPUList(online))
			}
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// Others returns the online CPUs not in cpus: where pgbench runs when the
// server is pinned.
func Others(cpus, online []int) []int {
	in := map[int]bool{}
	for _, c := range cpus {
		in[c] = true
	}
	var out []int
	for _, c := range online {
		if !in[c] {
			out = append(out, c)
		}
	}
	return out
}

// PickCPUs is ParseCPUs over the CPUs this process may run on: what a
// -C flag means.
func PickCPUs(spec string) ([]int, error) {
	online, err := AllowedCPUs()
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	return ParseCPUs(spec, online)
}
