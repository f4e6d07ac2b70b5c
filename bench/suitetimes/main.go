// Command suitetimes reads the `go test -json` output of a suite run
// (bench/suite.sh writes one) and prints what issue 27 asks of the
// suite's figures: its wall time, each package's, and the slowest
// top-level tests. Given two files (before, after), it prints the
// slowest of each side by side.
//
//	go run ./bench/suitetimes [-n 15] RUN.json [AFTER.json]
//
// A test's time is go test's Elapsed: for a parallel test it includes
// the time it waited for a slot or a build lock.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"time"
)

// event is the part of a test2json event read here.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// timed is a package's or test's outcome and seconds.
type timed struct {
	name, action string
	seconds      float64
}

// suite is one run's figures.
type suite struct {
	wall            time.Duration
	packages, tests []timed
	failed          int
}

func main() {
	n := flag.Int("n", 15, "how many of the slowest tests to print")
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 {
		fmt.Fprintln(os.Stderr, "usage: suitetimes [-n 15] RUN.json [AFTER.json]")
		os.Exit(2)
	}
	var runs []*suite
	for _, f := range flag.Args() {
		s, err := read(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "suitetimes:", err)
			os.Exit(1)
		}
		runs = append(runs, s)
		fmt.Printf("%s: %s wall, %d packages, %d tests failed\n", f, s.wall.Round(time.Second), len(s.packages), s.failed)
	}
	fmt.Println()
	if len(runs) == 1 {
		fmt.Println("| package | seconds | |\n|---|---|---|")
		for _, p := range runs[0].packages {
			fmt.Printf("| %s | %.1f | %s |\n", p.name, p.seconds, p.action)
		}
		fmt.Println()
	}
	header := "| test | seconds |"
	rule := "|---|---|"
	if len(runs) == 2 {
		header, rule = "| before | seconds | after | seconds |", "|---|---|---|---|"
	}
	fmt.Println(header + "\n" + rule)
	for i := range *n {
		line := ""
		for _, s := range runs {
			if i < len(s.tests) {
				t := s.tests[i]
				line += fmt.Sprintf("| %s | %.1f ", t.name, t.seconds)
			} else {
				line += "| | "
			}
		}
		fmt.Println(line + "|")
	}
}

// read reads one run's events: the wall time from the first event to
// the last, each package's and each top-level test's Elapsed, slowest
// first.
func read(file string) (*suite, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &suite{}
	var first, last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line of go's own output (a build failure)
		}
		if !e.Time.IsZero() {
			if first.IsZero() {
				first = e.Time
			}
			last = e.Time
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		switch {
		case e.Test == "":
			s.packages = append(s.packages, timed{path.Base(e.Package), e.Action, e.Elapsed})
		case !isSubtest(e.Test):
			name := e.Test
			if b := path.Base(e.Package); b != "abtest" {
				name = b + " " + name
			}
			s.tests = append(s.tests, timed{name, e.Action, e.Elapsed})
			if e.Action == "fail" {
				s.failed++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(s.packages) == 0 {
		return nil, fmt.Errorf("%s: no package's result: not the output of go test -json", file)
	}
	s.wall = last.Sub(first)
	for _, l := range [][]timed{s.packages, s.tests} {
		sort.SliceStable(l, func(i, j int) bool { return l[i].seconds > l[j].seconds })
	}
	return s, nil
}

func isSubtest(name string) bool {
	for _, r := range name {
		if r == '/' {
			return true
		}
	}
	return false
}
