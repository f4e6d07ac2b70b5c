package doctor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestFixHost: as root, the governor, turbo and THP knobs of a fake host
// are set, each change is said, and the undo script (named by the time)
// writes the old values back; not root, it is exit 2 and nothing
// changes; a quiet host has nothing to change.
func TestFixHost(t *testing.T) {
	files := map[string]string{
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
		"sys/devices/system/cpu/intel_pstate/no_turbo":         "0\n",
		"sys/kernel/mm/transparent_hugepage/enabled":           "[always] madvise never\n",
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root, dir := tree(t, files), filepath.Join(t.TempDir(), "results")
	var out bytes.Buffer
	if err := FixHost(&out, root, dir, 1000, now); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("not root: %v", err)
	}
	if _, err := os.Stat(dir); err == nil || out.Len() != 0 {
		t.Errorf("not root: wrote %s, said %q", dir, out.String())
	}
	if err := FixHost(&out, root, dir, 0, now); err != nil {
		t.Fatal(err)
	}
	undo := filepath.Join(dir, "doctor-undo-20260102T030405Z.sh")
	for _, want := range []string{"cpu governor: powersave → performance", "turbo: 0 → 1", "transparent huge pages: always → madvise", "to undo: sh " + undo} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")); string(got) != "performance\n" {
		t.Errorf("governor = %q", got)
	}
	script, err := os.ReadFile(undo)
	if err != nil || !strings.Contains(string(script), "echo powersave > "+filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")) {
		t.Errorf("undo script %q, %v", script, err)
	}
	out.Reset()
	if err := FixHost(&out, root, dir, 0, now); err != nil || !strings.Contains(out.String(), "nothing to change") {
		t.Errorf("second fix: %q, %v", out.String(), err)
	}
}

// TestWriteText: the table, then why and fix of each finding that is
// not OK, then the overall status.
func TestWriteText(t *testing.T) {
	var out bytes.Buffer
	WriteText(&out, []Finding{
		{Check: "turbo", Status: Warn, Value: "on", Why: "clocks vary", Fix: "turn it off"},
		{Check: "smt", Status: OK, Value: "off"},
	})
	want := string(Warn) + "  turbo  on\n" + string(OK) + "    smt    off\n\nturbo: on\n  why: clocks vary\n  fix: turn it off\n\noverall: " + string(Warn) + "\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
