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

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/results"
)

// Statuses, the vocabulary's (results.FindingStatus) under short names.
const (
	OK   = results.FindingOK
	Warn = results.FindingWarn
	Fail = results.FindingFail
)

// Finding is one check's outcome.
type Finding = results.Finding

func finding(check string, status results.FindingStatus, value, why, fix string) Finding {
	return Finding{Check: check, Status: status, Value: value, Why: why, Fix: fix}
}

// Host is what the checks judge: the machine's facts (read once by
// internal/host), a PATH lookup and the run-as account's name.
type Host struct {
	Facts    host.Host
	LookPath func(string) (string, error)
	RunAs    string
	// Euid is the effective uid (os.Geteuid on a live system).
	Euid int
	// Results is the results root (BENCH_RESULTS_DIR) whose newest run
	// tells the measured noise (Noise); "" skips that check.
	Results string
}

// Live is the host abtest runs on, its runs under results ("": none).
func Live(runAs, results string) Host {
	return Host{Facts: host.Read("/"), LookPath: exec.LookPath, RunAs: runAs, Euid: os.Geteuid(), Results: results}
}

// Check runs every check.
func Check(h Host) []Finding {
	f := h.Facts
	out := append(virtualization(f), frequency(f)...)
	out = append(out, memory(f)...)
	out = append(out, load(f))
	out = append(out, perfCheck(h), instructions(h), buildTools(h), runAs(h))
	if f, ok := measuredNoise(h.Results); ok {
		out = append(out, f)
	}
	return out
}

// virtualization says what a VM or a CPU quota does to the numbers: the
// frequency knobs below are then the hypervisor's, not ours.
func virtualization(f host.Host) []Finding {
	var out []Finding
	if f.Hypervisor != "" {
		out = append(out, finding("virtualization", Warn, "virtual machine ("+f.Hypervisor+")",
			"a VM shares physical CPUs with other guests and its clock is the hypervisor's: on a 2-core VM TPS varied 5–8 % between cells and was bimodal with scheduling, so small TPS changes are invisible",
			"for CPU-cost changes gate on instruction counts (matrix --instructions); for throughput use a dedicated host"))
	} else {
		out = append(out, finding("virtualization", OK, "bare metal (no hypervisor flag)", "", ""))
	}
	if f.StealPct >= 1 {
		out = append(out, finding("steal time", Warn, fmt.Sprintf("%.1f%% since boot", f.StealPct),
			"the hypervisor ran other guests on these CPUs: the benchmark loses time it cannot see", "use a dedicated or pinned-vCPU instance"))
	}
	if f.CPUQuota > 0 {
		out = append(out, finding("cpu quota", Warn, fmt.Sprintf("%.2f CPUs (cgroup, %s)", f.CPUQuota, orNone(f.Container)),
			"a CFS quota throttles the server in 100 ms periods once it is used up: throughput steps and latency outliers that depend on load", "run without a CPU limit, or pin with -C below the quota"))
	}
	return out
}

func frequency(f host.Host) []Finding {
	var out []Finding
	hidden := "not exposed (fixed frequency)"
	if f.Hypervisor != "" {
		hidden = "not exposed: the hypervisor decides (see virtualization)"
	}
	switch {
	case len(f.Governors) == 0:
		out = append(out, finding("cpu governor", OK, hidden, "", ""))
	case len(f.Governors) == 1 && f.Governors["performance"] > 0:
		out = append(out, finding("cpu governor", OK, "performance", "", ""))
	default:
		out = append(out, finding("cpu governor", Warn, joinCounts(f.Governors), "a scaling governor changes the clock under load: the same work takes different time from run to run", "cpupower frequency-set -g performance, or abtest doctor --fix"))
	}
	switch {
	case f.Turbo == "on" && f.TurboSource == "intel_pstate":
		out = append(out, finding("turbo", Warn, "on (intel_pstate)", "turbo frequency depends on temperature and on how many cores are busy: A and B get different clocks", "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo, or abtest doctor --fix"))
	case f.Turbo == "on":
		out = append(out, finding("turbo", Warn, "on (cpufreq boost)", "boost frequency depends on temperature and load: A and B get different clocks", "echo 0 > /sys/devices/system/cpu/cpufreq/boost, or abtest doctor --fix"))
	case f.Turbo == "off":
		out = append(out, finding("turbo", OK, "off", "", ""))
	default:
		out = append(out, finding("turbo", OK, hidden, "", ""))
	}
	switch f.SMT {
	case "on":
		out = append(out, finding("smt", Warn, "active", "sibling hyperthreads share a core: a client or another cell on the sibling steals cycles from the server", "pin with -C to whole cores, or echo off > /sys/devices/system/cpu/smt/control"))
	case "off":
		out = append(out, finding("smt", OK, "inactive", "", ""))
	default:
		out = append(out, finding("smt", OK, hidden, "", ""))
	}
	return out
}

func memory(f host.Host) []Finding {
	var out []Finding
	switch f.THP {
	case "":
	case "always":
		out = append(out, finding("transparent huge pages", Warn, "always", "khugepaged compacts memory in the background and page faults vary: latency outliers that come and go", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or abtest doctor --fix"))
	default:
		out = append(out, finding("transparent huge pages", OK, f.THP, "", ""))
	}
	if f.MemoryMB == 0 {
		return out
	}
	if f.HugePages == "" || f.HugePages == "0" {
		out = append(out, finding("huge pages", OK, "none reserved (shared_buffers uses normal pages)", "", ""))
	} else {
		out = append(out, finding("huge pages", OK, fmt.Sprintf("%s reserved, %d free", f.HugePages, f.HugePagesFree), "", ""))
	}
	if f.MemAvailableMB*5 < f.MemoryMB {
		out = append(out, finding("free memory", Warn, fmt.Sprintf("%d of %d MB available", f.MemAvailableMB, f.MemoryMB), "under memory pressure the page cache is evicted and the kernel reclaims: I/O and latency change between cells", "stop what uses the memory"))
	} else {
		out = append(out, finding("free memory", OK, fmt.Sprintf("%d of %d MB available", f.MemAvailableMB, f.MemoryMB), "", ""))
	}
	return out
}

func load(f host.Host) Finding {
	n := f.OnlineCPUs
	if n > 0 && f.Load1 > 0.5*float64(n) {
		return finding("load average", Warn, fmt.Sprintf("%.2f on %d CPUs", f.Load1, n), "other work competes with the benchmark for CPU: numbers drift with it", "run on an idle host, or at night")
	}
	return finding("load average", OK, fmt.Sprintf("%.2f on %d CPUs", f.Load1, n), "", "")
}

func perfCheck(h Host) Finding {
	v := h.Facts.PerfParanoid
	if _, err := h.LookPath("perf"); err != nil {
		return finding("perf", Warn, "not installed", "without perf, --perf and abtest perf record cannot say where the time went", "apt-get install linux-perf")
	}
	if n, _ := strconv.Atoi(v); n > 1 && h.Euid != 0 {
		return finding("perf", Warn, "perf_event_paranoid "+v, "profiling the server's processes needs perf_event_paranoid ≤ 1 (or root)", "sysctl kernel.perf_event_paranoid=1")
	}
	return finding("perf", OK, "installed, perf_event_paranoid "+v, "", "")
}

// instructions judges whether matrix/bench --instructions can count:
// valgrind works on any host; perf stat needs a PMU, which most VMs lack
// and which only running perf could tell (doctor runs nothing).
func instructions(h Host) Finding {
	if _, err := h.LookPath("valgrind"); err != nil {
		return finding("instructions", Warn, "valgrind not installed", "without valgrind, --instructions (instructions per transaction, the noise-free CPU-cost metric) is skipped unless perf stat can read the CPU's counter", "apt-get install valgrind")
	}
	return finding("instructions", OK, "valgrind installed", "", "")
}

func buildTools(h Host) Finding {
	tools := []struct{ name, pkg string }{{"cc", "build-essential"}, {"make", "make"}, {"meson", "meson"}, {"ninja", "ninja-build"}, {"bison", "bison"}, {"flex", "flex"}, {"ccache", "ccache"}, {"git", "git"}}
	var missing, pkgs []string
	for _, t := range tools {
		if _, err := h.LookPath(t.name); err != nil {
			missing = append(missing, t.name)
			pkgs = append(pkgs, t.pkg)
		}
	}
	if len(missing) == 0 {
		return finding("build tools", OK, "cc make meson ninja bison flex ccache git", "", "")
	}
	st := Warn
	for _, m := range missing {
		if m == "cc" || m == "make" || m == "git" {
			st = Fail
		}
	}
	return finding("build tools", st, "missing: "+strings.Join(missing, " "), "abtest cannot build PostgreSQL without them (ccache only makes rebuilds cheap; meson/ninja are for PostgreSQL ≥ 16)", "apt-get install "+strings.Join(pkgs, " "))
}

// runAs checks the server's account when abtest runs as root.
func runAs(h Host) Finding {
	if h.Euid != 0 {
		return finding("run-as account", OK, "not root: the server runs as the caller", "", "")
	}
	name := h.RunAs
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	switch {
	case err != nil:
		return finding("run-as account", Fail, name+" does not exist", "PostgreSQL refuses to run as root; abtest runs it as an unprivileged account", "adduser --system "+name+", or pass --run-as USER")
	case u.Uid == "0":
		return finding("run-as account", Fail, name+" is root", "PostgreSQL refuses to run as root", "pass --run-as an unprivileged USER")
	}
	return finding("run-as account", OK, name+" (uid "+u.Uid+")", "", "")
}

func orNone(s string) string {
	if s == "" {
		return "no container"
	}
	return s
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
func Worst(fs []Finding) results.FindingStatus {
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

// Fix is one host setting doctor --fix changes: safe (a sysfs knob, no
// reboot) and reversible (Undo writes the old value back).
type Fix struct {
	Check string `json:"check"`
	// Path is relative to the host root.
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Fixes lists what doctor --fix would change on the host at root: the
// governor of every CPU to performance, turbo off, THP to madvise. It
// reads the knobs themselves, so a hidden knob (a VM) yields nothing.
func Fixes(root string) []Fix {
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	var out []Fix
	govs, _ := filepath.Glob(filepath.Join(root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	sort.Strings(govs)
	for _, g := range govs {
		rel, _ := filepath.Rel(root, g)
		if v := read(rel); v != "" && v != "performance" {
			out = append(out, Fix{Check: "cpu governor", Path: rel, From: v, To: "performance"})
		}
	}
	if v := read("sys/devices/system/cpu/intel_pstate/no_turbo"); v == "0" {
		out = append(out, Fix{Check: "turbo", Path: "sys/devices/system/cpu/intel_pstate/no_turbo", From: "0", To: "1"})
	} else if v := read("sys/devices/system/cpu/cpufreq/boost"); v == "1" {
		out = append(out, Fix{Check: "turbo", Path: "sys/devices/system/cpu/cpufreq/boost", From: "1", To: "0"})
	}
	const thp = "sys/kernel/mm/transparent_hugepage/enabled"
	if v := read(thp); v != "" && host.Selected(v) == "always" {
		out = append(out, Fix{Check: "transparent huge pages", Path: thp, From: "always", To: "madvise"})
	}
	return out
}

// Apply writes each fix's new value under root, stopping at the first
// failure; it returns the fixes applied, for Undo.
func Apply(root string, fixes []Fix) ([]Fix, error) {
	var done []Fix
	for _, f := range fixes {
		if err := os.WriteFile(filepath.Join(root, f.Path), []byte(f.To+"\n"), 0); err != nil {
			return done, fmt.Errorf("doctor --fix: %s: writing %s: %w", f.Check, f.Path, err)
		}
		done = append(done, f)
	}
	return done, nil
}

// UndoScript is a shell script that writes every fix's old value back.
func UndoScript(root string, fixes []Fix) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# written by abtest doctor --fix: run it to undo what it changed\nset -e\n")
	for _, f := range fixes {
		fmt.Fprintf(&b, "echo %s > %s\n", f.From, filepath.Join(root, f.Path))
	}
	return b.String()
}
