// Package host reads the machine once: what plan.json records about it
// and what doctor judges. Everything is read from a root directory ("/"
// on a live system, a fake tree in tests), so it is testable and never
// runs a process.
package host

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Host is what plan.json records about the machine: what decides whether
// numbers from two runs can be compared. The first nine fields are
// schema version 1's; the rest were added with omitempty.
type Host struct {
	Hostname  string `json:"hostname"`
	CPU       string `json:"cpu"`
	NProc     int    `json:"nproc"`
	MemoryMB  int    `json:"memory_mb"`
	Kernel    string `json:"kernel"`
	Governor  string `json:"governor,omitempty"`
	Turbo     string `json:"turbo,omitempty"`
	THP       string `json:"thp,omitempty"`
	HugePages string `json:"huge_pages,omitempty"`

	// Governors counts the CPUs per scaling governor (empty when the
	// kernel exposes none: a VM, or a fixed clock).
	Governors map[string]int `json:"governors,omitempty"`
	// TurboSource is the sysfs knob Turbo was read from.
	TurboSource string `json:"turbo_source,omitempty"`
	// SMT is "on", "off" or "" when not exposed.
	SMT string `json:"smt,omitempty"`
	// HugePagesFree and MemAvailableMB are read when the plan is made.
	HugePagesFree  int     `json:"huge_pages_free,omitempty"`
	MemAvailableMB int     `json:"mem_available_mb,omitempty"`
	Load1          float64 `json:"load1,omitempty"`
	// OnlineCPUs counts /sys/devices/system/cpu/online.
	OnlineCPUs int `json:"online_cpus,omitempty"`
	// PerfParanoid is kernel.perf_event_paranoid; "" when not exposed.
	PerfParanoid string `json:"perf_paranoid,omitempty"`
	// Hypervisor is set on a virtual machine: the DMI vendor or product
	// when exposed, else "unknown hypervisor" from the CPU's hypervisor
	// flag.
	Hypervisor string `json:"hypervisor,omitempty"`
	// Container names the container runtime abtest runs in, if any.
	Container string `json:"container,omitempty"`
	// CPUQuota is the CPU time the cgroup may use, in CPUs (0: no quota).
	CPUQuota float64 `json:"cpu_quota,omitempty"`
	// StealPct is the share of CPU time since boot the hypervisor gave to
	// others (/proc/stat steal).
	StealPct float64 `json:"steal_pct,omitempty"`
}

// Virtual reports whether numbers on this host share physical CPUs with
// someone else's work: a VM or a container with a CPU quota.
func (h Host) Virtual() bool { return h.Hypervisor != "" || h.CPUQuota > 0 }

// Read reads the host's description from root ("/" on a live system;
// tests pass a fake tree).
func Read(root string) Host {
	read := func(p string) string { return readFile(root, p) }
	h := Host{NProc: runtime.NumCPU(), Kernel: read("proc/sys/kernel/osrelease"), Hostname: read("proc/sys/kernel/hostname")}
	h.readCPUInfo(read("proc/cpuinfo"))
	h.readMeminfo(read("proc/meminfo"))
	h.readFrequency(root, read)
	if v := read("sys/kernel/mm/transparent_hugepage/enabled"); v != "" {
		h.THP = Selected(v)
	}
	switch read("sys/devices/system/cpu/smt/active") {
	case "1":
		h.SMT = "on"
	case "0":
		h.SMT = "off"
	}
	if f := strings.Fields(read("proc/loadavg")); len(f) > 0 {
		h.Load1, _ = strconv.ParseFloat(f[0], 64)
	}
	h.OnlineCPUs = countCPUs(read("sys/devices/system/cpu/online"))
	h.PerfParanoid = PerfParanoid(root)
	if h.Hypervisor != "" {
		for _, p := range []string{"sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name"} {
			if v := read(p); v != "" {
				h.Hypervisor = v
				break
			}
		}
	}
	h.Container = container(root, read)
	h.CPUQuota = cpuQuota(read)
	h.StealPct = steal(read("proc/stat"))
	return h
}

// readFile is root/p's content, trimmed; "" when unreadable.
func readFile(root, p string) string {
	data, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Memory reads only /proc/meminfo under root: MemoryMB, MemAvailableMB
// and the huge pages (Read reads everything).
func Memory(root string) Host {
	var h Host
	h.readMeminfo(readFile(root, "proc/meminfo"))
	return h
}

// PerfParanoid is kernel.perf_event_paranoid under root; "" when not
// exposed.
func PerfParanoid(root string) string {
	return readFile(root, "proc/sys/kernel/perf_event_paranoid")
}

func (h *Host) readCPUInfo(s string) {
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if h.CPU == "" {
				h.CPU = strings.TrimSpace(v)
			}
		case "flags":
			if h.Hypervisor == "" && strings.Contains(" "+v+" ", " hypervisor ") {
				h.Hypervisor = "unknown hypervisor"
			}
		}
	}
}

func (h *Host) readMeminfo(s string) {
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.Atoi(f[0])
		switch k {
		case "MemTotal":
			h.MemoryMB = n / 1024
		case "MemAvailable":
			h.MemAvailableMB = n / 1024
		case "HugePages_Total":
			h.HugePages = f[0]
		case "HugePages_Free":
			h.HugePagesFree = n
		}
	}
}

func (h *Host) readFrequency(root string, read func(string) string) {
	govs, _ := filepath.Glob(filepath.Join(root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
	for _, g := range govs {
		if data, err := os.ReadFile(g); err == nil {
			if h.Governors == nil {
				h.Governors = map[string]int{}
			}
			h.Governors[strings.TrimSpace(string(data))]++
		}
	}
	h.Governor = read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	if v := read("sys/devices/system/cpu/intel_pstate/no_turbo"); v != "" {
		h.Turbo, h.TurboSource = map[string]string{"0": "on", "1": "off"}[v], "intel_pstate"
	} else if v := read("sys/devices/system/cpu/cpufreq/boost"); v != "" {
		h.Turbo, h.TurboSource = map[string]string{"1": "on", "0": "off"}[v], "cpufreq boost"
	}
}

// Selected is the bracketed choice of a sysfs list: "always [madvise] never".
func Selected(v string) string {
	if i := strings.Index(v, "["); i >= 0 {
		if j := strings.Index(v[i:], "]"); j > 0 {
			return v[i+1 : i+j]
		}
	}
	return v
}

// countCPUs counts a CPU list such as "0-3,8".
func countCPUs(v string) int {
	n := 0
	for _, part := range strings.Split(v, ",") {
		if part == "" {
			continue
		}
		a, b, isRange := strings.Cut(part, "-")
		x, err := strconv.Atoi(a)
		if err != nil {
			continue
		}
		y := x
		if isRange {
			y, _ = strconv.Atoi(b)
		}
		n += y - x + 1
	}
	return n
}

func container(root string, read func(string) string) string {
	switch {
	case exists(filepath.Join(root, ".dockerenv")):
		return "docker"
	case exists(filepath.Join(root, "run/.containerenv")):
		return "podman"
	}
	cg := read("proc/1/cgroup")
	for _, name := range []string{"kubepods", "docker", "lxc", "containerd"} {
		if strings.Contains(cg, name) {
			return name
		}
	}
	return ""
}

// cpuQuota reads the cgroup's CPU limit, v2 (cpu.max) or v1
// (cfs_quota_us / cfs_period_us), in CPUs.
func cpuQuota(read func(string) string) float64 {
	if f := strings.Fields(read("sys/fs/cgroup/cpu.max")); len(f) == 2 && f[0] != "max" {
		q, _ := strconv.ParseFloat(f[0], 64)
		p, _ := strconv.ParseFloat(f[1], 64)
		if p > 0 {
			return q / p
		}
	}
	q, _ := strconv.ParseFloat(read("sys/fs/cgroup/cpu/cpu.cfs_quota_us"), 64)
	p, _ := strconv.ParseFloat(read("sys/fs/cgroup/cpu/cpu.cfs_period_us"), 64)
	if q > 0 && p > 0 {
		return q / p
	}
	return 0
}

// steal is the steal share of all CPU time since boot, from /proc/stat's
// first line: cpu user nice system idle iowait irq softirq steal ….
func steal(stat string) float64 {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var total, st float64
	for i, s := range f[1:] {
		v, _ := strconv.ParseFloat(s, 64)
		if i < 8 {
			total += v
		}
		if i == 7 {
			st = v
		}
	}
	if total == 0 {
		return 0
	}
	return 100 * st / total
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Runnable is how many tasks besides the caller are running or ready to
// run, averaged over n looks at /proc/loadavg's running count, every
// apart. Unlike the 1-minute load average it does not remember a build
// that ended a moment ago.
func Runnable(root string, n int, every time.Duration) float64 {
	var sum float64
	var seen int
	for i := range n {
		if i > 0 {
			time.Sleep(every)
		}
		data, err := os.ReadFile(filepath.Join(root, "proc/loadavg"))
		f := strings.Fields(string(data))
		if err != nil || len(f) < 4 {
			continue
		}
		running, _, ok := strings.Cut(f[3], "/")
		r, err := strconv.Atoi(running)
		if !ok || err != nil {
			continue
		}
		// The caller is running as it reads, and so may be other
		// threads of its own (the Go runtime's).
		sum += float64(max(0, r-ownRunning(root)))
		seen++
	}
	if seen == 0 {
		return 0
	}
	return sum / float64(seen)
}

// ownRunning is how many threads of this process are running (at least
// the one that asks).
func ownRunning(root string) int {
	stats, _ := filepath.Glob(filepath.Join(root, "proc/self/task/*/stat"))
	n := 0
	for _, f := range stats {
		data, err := os.ReadFile(f)
		// The state follows the command's closing parenthesis.
		if i := bytes.LastIndexByte(data, ')'); err == nil && i >= 0 && i+2 < len(data) && data[i+2] == 'R' {
			n++
		}
	}
	return max(1, n)
}
