package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/results"
)

func tree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func find(fs []Finding, check string) Finding {
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	return Finding{}
}

func allTools(string) (string, error) { return "/usr/bin/x", nil }

func TestNoisyHost(t *testing.T) {
	root := tree(t, map[string]string{
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
		"sys/devices/system/cpu/intel_pstate/no_turbo":         "0\n",
		"sys/devices/system/cpu/smt/active":                    "1\n",
		"sys/devices/system/cpu/online":                        "0-1\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "[always] madvise never\n",
		"proc/meminfo":                        "MemTotal: 16000000 kB\nMemAvailable: 1000000 kB\nHugePages_Total: 0\nHugePages_Free: 0\n",
		"proc/loadavg":                        "3.50 2.00 1.00 2/300 1234\n",
		"proc/sys/kernel/perf_event_paranoid": "3\n",
	})
	missing := func(name string) (string, error) {
		if name == "meson" || name == "ninja" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + name, nil
	}
	fs := Check(Host{Facts: host.Read(root), LookPath: missing, Euid: 1000})
	for check, want := range map[string]results.FindingStatus{
		"cpu governor": Warn, "turbo": Warn, "smt": Warn, "transparent huge pages": Warn,
		"free memory": Warn, "load average": Warn, "perf": Warn, "build tools": Warn, "run-as account": OK,
	} {
		f := find(fs, check)
		if f.Status != want {
			t.Errorf("%s: %+v, want %s", check, f, want)
		}
		if f.Status != OK && (f.Why == "" || f.Fix == "") {
			t.Errorf("%s: a finding must say why it matters and how to fix it: %+v", check, f)
		}
	}
	if f := find(fs, "build tools"); !strings.Contains(f.Fix, "ninja-build") || !strings.Contains(f.Value, "meson") {
		t.Errorf("build tools: %+v", f)
	}
	if Worst(fs) != Warn {
		t.Errorf("worst = %s", Worst(fs))
	}
}

func TestQuietHost(t *testing.T) {
	root := tree(t, map[string]string{
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
		"sys/devices/system/cpu/intel_pstate/no_turbo":         "1\n",
		"sys/devices/system/cpu/smt/active":                    "0\n",
		"sys/devices/system/cpu/online":                        "0-7\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "always [madvise] never\n",
		"proc/meminfo":                        "MemTotal: 16000000 kB\nMemAvailable: 15000000 kB\nHugePages_Total: 512\nHugePages_Free: 512\n",
		"proc/loadavg":                        "0.10 0.20 0.30 1/300 1234\n",
		"proc/sys/kernel/perf_event_paranoid": "1\n",
	})
	fs := Check(Host{Facts: host.Read(root), LookPath: allTools, Euid: 1000})
	for _, f := range fs {
		if f.Status != OK {
			t.Errorf("%s: %+v on a quiet host", f.Check, f)
		}
	}
	if f := find(fs, "huge pages"); !strings.Contains(f.Value, "512 reserved") {
		t.Errorf("huge pages: %+v", f)
	}
}

func TestRootNeedsAnAccount(t *testing.T) {
	root := tree(t, map[string]string{"proc/loadavg": "0 0 0 1/1 1\n"})
	fs := Check(Host{Facts: host.Read(root), LookPath: allTools, Euid: 0, RunAs: "no-such-user-abtest"})
	if f := find(fs, "run-as account"); f.Status != Fail || !strings.Contains(f.Fix, "--run-as") {
		t.Errorf("run-as: %+v", f)
	}
	fs = Check(Host{Facts: host.Read(root), LookPath: allTools, Euid: 0, RunAs: "root"})
	if f := find(fs, "run-as account"); f.Status != Fail {
		t.Errorf("run-as root: %+v", f)
	}
	if Worst(fs) != Fail {
		t.Error("worst should be fail")
	}
}

// On a VM (the hypervisor CPU flag) in a container with a CPU quota and
// steal time, doctor says what that does to the numbers instead of
// rating the hidden frequency knobs "ok".
func TestVirtualHost(t *testing.T) {
	root := tree(t, map[string]string{
		"proc/cpuinfo":                        "processor\t: 0\nmodel name\t: Fake EPYC\nflags\t\t: fpu sse2 hypervisor avx2\n",
		"proc/meminfo":                        "MemTotal: 16000000 kB\nMemAvailable: 15000000 kB\nHugePages_Total: 0\n",
		"proc/loadavg":                        "0.10 0.20 0.30 1/300 1234\n",
		"proc/stat":                           "cpu  1000 0 500 7000 100 0 100 300 0 0\ncpu0 1 2 3\n",
		"sys/fs/cgroup/cpu.max":               "150000 100000\n",
		".dockerenv":                          "",
		"sys/class/dmi/id/sys_vendor":         "QEMU\n",
		"sys/devices/system/cpu/online":       "0-1\n",
		"proc/sys/kernel/perf_event_paranoid": "2\n",
	})
	h := host.Read(root)
	if h.Hypervisor != "QEMU" || h.Container != "docker" || h.CPUQuota != 1.5 || h.StealPct < 3.3 || h.StealPct > 3.4 || !h.Virtual() {
		t.Fatalf("facts = %+v", h)
	}
	fs := Check(Host{Facts: h, LookPath: allTools, Euid: 0, RunAs: "root"})
	for check, want := range map[string]results.FindingStatus{"virtualization": Warn, "steal time": Warn, "cpu quota": Warn} {
		if f := find(fs, check); f.Status != want || f.Why == "" || f.Fix == "" {
			t.Errorf("%s: %+v, want %s with why and fix", check, f, want)
		}
	}
	if f := find(fs, "cpu governor"); !strings.Contains(f.Value, "hypervisor") {
		t.Errorf("governor on a VM: %+v", f)
	}
	if f := find(fs, "virtualization"); !strings.Contains(f.Fix, "--instructions") {
		t.Errorf("virtualization fix: %+v", f)
	}
}

// TestInstructionsFinding: without valgrind, doctor warns that
// --instructions will be skipped and says how to install it.
func TestInstructionsFinding(t *testing.T) {
	root := tree(t, map[string]string{"proc/loadavg": "0.10 0.20 0.30 1/300 1234\n"})
	noValgrind := func(name string) (string, error) {
		if name == "valgrind" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + name, nil
	}
	if f := find(Check(Host{Facts: host.Read(root), LookPath: noValgrind, Euid: 1000}), "instructions"); f.Status != Warn || !strings.Contains(f.Fix, "valgrind") {
		t.Errorf("without valgrind: %+v", f)
	}
	if f := find(Check(Host{Facts: host.Read(root), LookPath: allTools, Euid: 1000}), "instructions"); f.Status != OK {
		t.Errorf("with valgrind: %+v", f)
	}
}
