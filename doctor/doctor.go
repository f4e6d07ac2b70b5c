// Package doctor checks whether a host gives numbers that can be
// trusted: frequency scaling, turbo, SMT, transparent huge pages, load,
// memory, perf, the build tools and the server's account. Each finding
// says why it matters for the numbers and how to fix it. The matrix
// records the findings in plan.json and the report shows them.
package doctor

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// Statuses.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Finding is one check's outcome.
type Finding = results.Finding

func finding(check, status, value, why, fix string) Finding {
	return Finding{Check: check, Status: status, Value: value, Why: why, Fix: fix}
}

// Host is what the checks read: a root directory (/ on a live system, a
// fake tree in tests), a PATH lookup and the run-as account's name.
type Host struct {
	Root     string
	LookPath func(string) (string, error)
	RunAs    string
	// Euid is the effective uid (os.Geteuid on a live system).
	Euid int
}

// Live is the host abtest runs on.
func Live(runAs string) Host {
	return Host{Root: "/", LookPath: exec.LookPath, RunAs: runAs, Euid: os.Geteuid()}
}

func (h Host) read(p string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(h.Root, p))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(data)), true
}

// Check runs every check.
func Check(h Host) []Finding {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }

	// CPU frequency governor.
	govs := map[string]int{}
	cpus, _ := filepath.Glob(filepath.Join(h.Root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	for _, c := range cpus {
		data, err := os.ReadFile(c)
		if err == nil {
			govs[strings.TrimSpace(string(data))]++
		}
	}
	switch {
	case len(govs) == 0:
		add(finding("cpu governor", OK, "not exposed (VM or fixed frequency)", "", ""))
	case len(govs) == 1 && govs["performance"] > 0:
		add(finding("cpu governor", OK, "performance", "", ""))
	default:
		add(finding("cpu governor", Warn, joinCounts(govs), "a scaling governor changes the clock under load: the same work takes different time from run to run", "cpupower frequency-set -g performance"))
	}

	// Turbo / boost.
	if v, ok := h.read("sys/devices/system/cpu/intel_pstate/no_turbo"); ok {
		if v == "0" {
			add(finding("turbo", Warn, "on (intel_pstate)", "turbo frequency depends on temperature and on how many cores are busy: A and B get different clocks", "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"))
		} else {
			add(finding("turbo", OK, "off", "", ""))
		}
	} else if v, ok := h.read("sys/devices/system/cpu/cpufreq/boost"); ok {
		if v == "1" {
			add(finding("turbo", Warn, "on (cpufreq boost)", "boost frequency depends on temperature and load: A and B get different clocks", "echo 0 > /sys/devices/system/cpu/cpufreq/boost"))
		} else {
			add(finding("turbo", OK, "off", "", ""))
		}
	} else {
		add(finding("turbo", OK, "not exposed", "", ""))
	}

	// SMT.
	if v, ok := h.read("sys/devices/system/cpu/smt/active"); ok && v == "1" {
		add(finding("smt", Warn, "active", "sibling hyperthreads share a core: a client or another cell on the sibling steals cycles from the server", "pin with -C to whole cores, or echo off > /sys/devices/system/cpu/smt/control"))
	} else {
		add(finding("smt", OK, "inactive or not exposed", "", ""))
	}

	// THP.
	if v, ok := h.read("sys/kernel/mm/transparent_hugepage/enabled"); ok {
		sel := v
		if i := strings.Index(v, "["); i >= 0 {
			if j := strings.Index(v[i:], "]"); j > 0 {
				sel = v[i+1 : i+j]
			}
		}
		if sel == "always" {
			add(finding("transparent huge pages", Warn, "always", "khugepaged compacts memory in the background and page faults vary: latency outliers that come and go", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"))
		} else {
			add(finding("transparent huge pages", OK, sel, "", ""))
		}
	}

	// Huge pages for shared_buffers.
	if mi, ok := h.read("proc/meminfo"); ok {
		vals := meminfo(mi)
		if vals["HugePages_Total"] == 0 {
			add(finding("huge pages", OK, "none reserved (shared_buffers uses normal pages)", "", ""))
		} else {
			add(finding("huge pages", OK, fmt.Sprintf("%d reserved, %d free", vals["HugePages_Total"], vals["HugePages_Free"]), "", ""))
		}
		avail := vals["MemAvailable"] / 1024
		total := vals["MemTotal"] / 1024
		if total > 0 && avail*5 < total {
			add(finding("free memory", Warn, fmt.Sprintf("%d of %d MB available", avail, total), "under memory pressure the page cache is evicted and the kernel reclaims: I/O and latency change between cells", "stop what uses the memory"))
		} else {
			add(finding("free memory", OK, fmt.Sprintf("%d of %d MB available", avail, total), "", ""))
		}
	}

	// Load.
	if v, ok := h.read("proc/loadavg"); ok {
		f := strings.Fields(v)
		load, _ := strconv.ParseFloat(f[0], 64)
		n := nproc(h)
		if n > 0 && load > 0.5*float64(n) {
			add(finding("load average", Warn, fmt.Sprintf("%.2f on %d CPUs", load, n), "other work competes with the benchmark for CPU: numbers drift with it", "run on an idle host, or at night"))
		} else {
			add(finding("load average", OK, fmt.Sprintf("%.2f on %d CPUs", load, n), "", ""))
		}
	}

	// perf.
	if _, err := h.LookPath("perf"); err != nil {
		add(finding("perf", Warn, "not installed", "without perf, --perf and abtest perf record cannot say where the time went", "apt-get install linux-perf"))
	} else if v, ok := h.read("proc/sys/kernel/perf_event_paranoid"); ok {
		n, _ := strconv.Atoi(v)
		if n > 1 && h.Euid != 0 {
			add(finding("perf", Warn, "perf_event_paranoid "+v, "profiling the server's processes needs perf_event_paranoid ≤ 1 (or root)", "sysctl kernel.perf_event_paranoid=1"))
		} else {
			add(finding("perf", OK, "installed, perf_event_paranoid "+v, "", ""))
		}
	}

	// Build tools.
	tools := []struct{ name, pkg string }{{"cc", "build-essential"}, {"make", "make"}, {"meson", "meson"}, {"ninja", "ninja-build"}, {"bison", "bison"}, {"flex", "flex"}, {"ccache", "ccache"}, {"git", "git"}}
	var missing []string
	var pkgs []string
	for _, t := range tools {
		if _, err := h.LookPath(t.name); err != nil {
			missing = append(missing, t.name)
			pkgs = append(pkgs, t.pkg)
		}
	}
	if len(missing) == 0 {
		add(finding("build tools", OK, "cc make meson ninja bison flex ccache git", "", ""))
	} else {
		st := Warn
		for _, m := range missing {
			if m == "cc" || m == "make" || m == "git" {
				st = Fail
			}
		}
		add(finding("build tools", st, "missing: "+strings.Join(missing, " "), "abtest cannot build PostgreSQL without them (ccache only makes rebuilds cheap; meson/ninja are for PostgreSQL ≥ 16)", "apt-get install "+strings.Join(pkgs, " ")))
	}

	// The server's account.
	if h.Euid == 0 {
		name := h.RunAs
		if name == "" {
			name = "postgres"
		}
		if u, err := user.Lookup(name); err != nil {
			add(finding("run-as account", Fail, name+" does not exist", "PostgreSQL refuses to run as root; abtest runs it as an unprivileged account", "adduser --system "+name+", or pass --run-as USER"))
		} else if u.Uid == "0" {
			add(finding("run-as account", Fail, name+" is root", "PostgreSQL refuses to run as root", "pass --run-as an unprivileged USER"))
		} else {
			add(finding("run-as account", OK, name+" (uid "+u.Uid+")", "", ""))
		}
	} else {
		add(finding("run-as account", OK, "not root: the server runs as the caller", "", ""))
	}
	return out
}

func meminfo(s string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			out[k] = n
		}
	}
	return out
}

func nproc(h Host) int {
	v, ok := h.read("sys/devices/system/cpu/online")
	if !ok {
		return 0
	}
	n := 0
	for _, part := range strings.Split(v, ",") {
		a, b, isRange := strings.Cut(part, "-")
		x, _ := strconv.Atoi(a)
		y := x
		if isRange {
			y, _ = strconv.Atoi(b)
		}
		n += y - x + 1
	}
	return n
}

func joinCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Worst returns the worst status among findings.
func Worst(fs []Finding) string {
	w := OK
	for _, f := range fs {
		if f.Status == Fail {
			return Fail
		}
		if f.Status == Warn {
			w = Warn
		}
	}
	return w
}
