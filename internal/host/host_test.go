package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadHostFakeTree(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"proc/cpuinfo":              "processor : 0\nmodel name\t: Fake CPU @ 3GHz\n",
		"proc/meminfo":              "MemTotal:       24684092 kB\nHugePages_Total:       0\n",
		"proc/sys/kernel/osrelease": "6.1.0-fake\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
		"sys/devices/system/cpu/intel_pstate/no_turbo":         "1\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "always [madvise] never\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(c), 0o644)
	}
	h := Read(root)
	if h.CPU != "Fake CPU @ 3GHz" || h.MemoryMB != 24105 || h.Kernel != "6.1.0-fake" || h.Governor != "performance" || h.Turbo != "off" || h.THP != "madvise" || h.HugePages != "0" {
		t.Errorf("host = %+v", h)
	}
}

// TestRunnable: the running count of /proc/loadavg less the caller,
// averaged; 0 when it cannot be read.
func TestRunnable(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	if got := Runnable(root, 2, 0); got != 0 {
		t.Errorf("no loadavg: %v", got)
	}
	os.WriteFile(filepath.Join(root, "proc/loadavg"), []byte("3.10 2.00 1.50 4/321 9999\n"), 0o644)
	if got := Runnable(root, 3, 0); got != 3 {
		t.Errorf("4 running: %v, want 3 besides the caller", got)
	}
	os.WriteFile(filepath.Join(root, "proc/loadavg"), []byte("3.10 2.00 1.50 1/321 9999\n"), 0o644)
	if got := Runnable(root, 1, 0); got != 0 {
		t.Errorf("only the caller: %v", got)
	}
	if got := Runnable("/", 3, time.Millisecond); got < 0 {
		t.Errorf("this host: %v", got)
	}
}
