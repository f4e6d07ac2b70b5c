// Package host reads the machine once: what plan.json records about it
// and what doctor judges. Everything is read from a root directory ("/"
// on a live system, a fake tree in tests), so it is testable and never
// runs a process.
package host

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Host is what plan.json records about the machine: what decides whether
// numbers from two runs can be compared.
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
}

// ReadHost reads the host's description from root ("/" on a live system;
// tests pass a fake tree).
func Read(root string) Host {
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	h := Host{NProc: runtime.NumCPU(), Kernel: read("proc/sys/kernel/osrelease"), Hostname: read("proc/sys/kernel/hostname")}
	for _, l := range strings.Split(read("proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			h.CPU = strings.TrimSpace(v)
			break
		}
	}
	for _, l := range strings.Split(read("proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			h.MemoryMB = kb / 1024
		}
		if v, ok := strings.CutPrefix(l, "HugePages_Total:"); ok {
			h.HugePages = strings.TrimSpace(v)
		}
	}
	h.Governor = read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	if v := read("sys/devices/system/cpu/intel_pstate/no_turbo"); v != "" {
		h.Turbo = map[string]string{"0": "on", "1": "off"}[v]
	} else if v := read("sys/devices/system/cpu/cpufreq/boost"); v != "" {
		h.Turbo = map[string]string{"1": "on", "0": "off"}[v]
	}
	if v := read("sys/kernel/mm/transparent_hugepage/enabled"); v != "" {
		if i := strings.Index(v, "["); i >= 0 {
			if j := strings.Index(v[i:], "]"); j > 0 {
				v = v[i+1 : i+j]
			}
		}
		h.THP = v
	}
	return h
}
