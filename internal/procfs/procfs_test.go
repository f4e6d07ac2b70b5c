package procfs

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A comm with spaces and parentheses, as a process may name itself.
	line := "4242 (post) (gres x) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 9 3 20 0 1 0 123456 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	s, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{PID: 4242, Comm: "post) (gres x", State: 'S', PPID: 17, UTime: 250, STime: 75, CUTime: 9, CSTime: 3, StartTicks: 123456}
	if s != want {
		t.Errorf("ParseStat = %+v\nwant        %+v", s, want)
	}
	if s.CPUTicks(false) != 325 || s.CPUTicks(true) != 337 || !s.Alive() {
		t.Errorf("CPUTicks = %d/%d, Alive %v", s.CPUTicks(false), s.CPUTicks(true), s.Alive())
	}
	if z, _ := ParseStat([]byte("1 (a) Z 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5")); z.Alive() {
		t.Error("a zombie counts as alive")
	}
	for _, bad := range []string{"", "1 a S", "x (a) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", "1 (a) S 0 0"} {
		if _, err := ParseStat([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseStat(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

// TestLiveProcess reads a child it starts: parent, children, start time,
// executable, command line, and that it is gone once reaped.
func TestLiveProcess(t *testing.T) {
	before := time.Now()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	s, err := ReadStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if s.PPID != os.Getpid() || !s.Alive() {
		t.Errorf("stat = %+v; want ppid %d, alive", s, os.Getpid())
	}
	if kids := Children(os.Getpid()); !slices.Contains(kids, pid) {
		t.Errorf("Children(self) = %v, want %d among them", kids, pid)
	}
	st, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// btime is whole seconds, start ticks are 1/100 s.
	if st.Before(before.Add(-2*time.Second)) || st.After(time.Now().Add(2*time.Second)) {
		t.Errorf("StartTime = %v, want close to %v", st, before)
	}
	if exe, err := Exe(pid); err != nil || !slices.Contains([]string{"/usr/bin/sleep", "/bin/sleep"}, exe) {
		t.Errorf("Exe = %q, %v", exe, err)
	}
	if args, err := Cmdline(pid); err != nil || !slices.Equal(args, []string{"sleep", "30"}) {
		t.Errorf("Cmdline = %q, %v", args, err)
	}
	wd, _ := os.Getwd()
	if cwd, err := Cwd(pid); err != nil || cwd != wd {
		t.Errorf("Cwd = %q, %v; want %s", cwd, err, wd)
	}
	if ticks, ok := TreeTicks(os.Getpid()); !ok || ticks < 0 {
		t.Errorf("TreeTicks(self) = %d, %v", ticks, ok)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if Alive(pid) {
		t.Errorf("pid %d alive after it was reaped", pid)
	}
}

// childStats reads the children from the kernel's per-thread lists
// and finds the same processes, zombies included, as a walk of every
// process's stat.
func TestChildStats(t *testing.T) {
	var pids []int
	for i := 0; i < 3; i++ {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
	}
	// An exited child that is not reaped yet: its time is not in
	// cutime, so the tree's total needs it.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	for end := time.Now().Add(10 * time.Second); Alive(zombie.Process.Pid) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	pidsOf := func(ss []Stat) []int {
		var out []int
		for _, s := range ss {
			out = append(out, s.PID)
		}
		slices.Sort(out)
		return out
	}
	got, walked := pidsOf(childStats(os.Getpid())), pidsOf(walkChildren(os.Getpid()))
	for _, p := range append(pids, zombie.Process.Pid) {
		if !slices.Contains(got, p) {
			t.Errorf("childStats(self) = %v, want %d among them", got, p)
		}
	}
	if !slices.Equal(got, walked) {
		t.Errorf("childStats(self) = %v, a walk of /proc found %v", got, walked)
	}
	if kids := Children(os.Getpid()); slices.Contains(kids, zombie.Process.Pid) || len(kids) != len(got)-1 {
		t.Errorf("Children(self) = %v: want the live ones of %v", kids, got)
	}
}

func TestSchedstat(t *testing.T) {
	d, err := ParseSchedstat([]byte("123456789 42 7\n"))
	if err != nil || d != 123456789 {
		t.Fatalf("%v, %v", d, err)
	}
	if _, err := ParseSchedstat([]byte("\n")); err == nil {
		t.Error("an empty schedstat parsed")
	}
	if _, err := ParseSchedstat([]byte("x 1 2")); err == nil {
		t.Error("a schedstat without a number parsed")
	}
	// The main thread has run; the whole process's time agrees with
	// its utime+stime ticks over a busy loop of 10 ticks.
	if d := mustRunTime(t); d <= 0 {
		t.Errorf("schedstat: run time %v", d)
	}
	ticks := func() int64 {
		st, err := ReadStat(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return st.CPUTicks(false)
	}
	self0, ticks0 := SelfCPU(), ticks()
	for end := time.Now().Add(10 * time.Second); ticks()-ticks0 < 10 && time.Now().Before(end); {
	}
	d, want := SelfCPU()-self0, time.Duration(ticks()-ticks0)*time.Second/ClockTicks
	if d < want-30*time.Millisecond || d > want+30*time.Millisecond {
		t.Errorf("getrusage: %v over a loop of %v in ticks", d, want)
	}
}

func mustRunTime(t *testing.T) time.Duration {
	t.Helper()
	d, err := RunTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
