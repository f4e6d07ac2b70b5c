// Command abtest builds PostgreSQL commits and A/B-benchmarks them.
//
// main only wires the process to Main, which tests call with buffers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(processMain())
}

// processMain runs abtest for this process: its arguments, streams,
// environment and signals. The first SIGINT or SIGTERM cancels the
// context (pgbench is stopped, clusters this run started are stopped,
// finished results kept); a second one ends abtest at once.
func processMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	home, _ := os.UserHomeDir()
	return Main(ctx, os.Args, &Env{
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Getenv:  os.Getenv,
		Getwd:   os.Getwd,
		Home:    home,
		Now:     time.Now,
		Geteuid: os.Geteuid,
		Environ: os.Environ(),
	})
}
