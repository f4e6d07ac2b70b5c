package matrix

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
)

func baseOptions() Options {
	return Options{
		Commits: "base=master,patch=REL_15_STABLE", Workloads: "select1", Axes: map[string][]string{"clients": {"8,16"}}, PgssMax: "5000",
		Seconds: 30, Warmup: 5, PerfWindow: 10, Repeats: 8, Build: "release", Protocol: "simple", Order: "abba",
		NameTemplate: "%c", Now: time.Unix(100, 7),
	}
}

// TestOptionsRequest: the lists, axes and durations are typed; the seed
// comes from the clock unless given; the perf window is at most -d;
// a quoted --set value keeps its commas.
func TestOptionsRequest(t *testing.T) {
	o := baseOptions()
	o.Perf, o.PerfWindow, o.Seconds = true, 60, 20
	o.Axes["settings"] = []string{`search_path="a, b",c`, "work_mem=4MB"}
	r, err := o.Request()
	if err != nil {
		t.Fatal(err)
	}
	ax, _ := r.planAxes()
	if len(r.Commits) != 2 || r.Commits[1].Ref != "REL_15_STABLE" || fmt.Sprint(ax.Clients) != "[8 16]" || ax.CPUs != nil ||
		r.Duration != 20*time.Second || r.Warmup != 5*time.Second || r.PerfWindow != 20*time.Second || r.Seed != time.Unix(100, 7).UnixNano()%1_000_000_007 {
		t.Errorf("request = %+v", r)
	}
	if got := fmt.Sprint(ax.Settings); got != "[{pg_stat_statements.max [5000]} {search_path [a, b c]} {work_mem [4MB]}]" {
		t.Errorf("settings = %s", got)
	}
	o.Seed, o.Given = 42, func(f string) bool { return f == "seed" }
	if r, _ := o.Request(); r.Seed != 42 {
		t.Errorf("given seed: %d", r.Seed)
	}
}

// TestOptionsPreset: --preset full fills what was not given and keeps
// what was; the preset's CPU counts above the host's are dropped.
func TestOptionsPreset(t *testing.T) {
	o := baseOptions()
	o.Preset = "full"
	o.Given = func(f string) bool { return f == "clients" }
	r, err := o.Request()
	if err != nil {
		t.Fatal(err)
	}
	ax, _ := r.planAxes()
	if fmt.Sprint(r.Workloads) != "[select1 churn slow_churn within_max]" || fmt.Sprint(ax.Clients) != "[8 16]" || r.Repeats != 8 ||
		r.Duration != 30*time.Second || fmt.Sprint(ax.Settings[0].Values) != "[1000 5000]" || len(ax.CPUs) == 0 || len(ax.CPUs) > 3 {
		t.Errorf("preset request = %+v", r)
	}
}

// TestOptionsBadInput: every value the flags can get wrong is exit 2
// with a message naming the flag.
func TestOptionsBadInput(t *testing.T) {
	for want, change := range map[string]func(*Options){
		"--preset \"quick\"":             func(o *Options) { o.Preset = "quick" },
		"-k SPEC[,SPEC…] is required":    func(o *Options) { o.Commits = "" },
		"-c \"8,x\"":                     func(o *Options) { o.Axes["clients"] = []string{"8,x"} },
		"-C \"0\"":                       func(o *Options) { o.Axes["cpus"] = []string{"0"} },
		"-m 99: pg_stat_statements.max":  func(o *Options) { o.PgssMax = "99" },
		"--set \"work_mem\"":             func(o *Options) { o.Axes["settings"] = []string{"work_mem"} },
		"use -m for pg_stat_statements":  func(o *Options) { o.Axes["settings"] = []string{"pg_stat_statements.max=100"} },
		"-d 86401: want 0 to 86400":      func(o *Options) { o.Seconds = 86401 },
		"--warmup -1":                    func(o *Options) { o.Warmup = -1 },
		"give --seed N":                  func(o *Options) { o.Shard = "1/2" },
		"one commit has nothing":         func(o *Options) { o.Commits = "base=master" },
		"unknown workload":               func(o *Options) { o.Workloads = "nosuch" },
		"build type":                     func(o *Options) { o.Build = "fast" },
		"--perf-window 99999999: want 0": func(o *Options) { o.Perf, o.PerfWindow = true, 99999999 },
	} {
		o := baseOptions()
		change(&o)
		_, err := o.Request()
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v (exit %d)", want, err, exitcode.Code(err))
		}
	}
}

// TestResumePlan: plan options given again are refused, naming them;
// otherwise the stored plan is read.
func TestResumePlan(t *testing.T) {
	dir := t.TempDir()
	if _, err := ResumePlan(dir, func(f string) bool { return f == "clients" || f == "repeats" }); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "drop --clients, --repeats (or") {
		t.Errorf("given options: %v", err)
	}
	if _, err := ResumePlan(dir, nil); err == nil {
		t.Error("a directory without a plan resumed")
	}
}
