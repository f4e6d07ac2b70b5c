// Command abtest builds PostgreSQL commits and A/B-benchmarks them.
//
// main only wires the process to Main, which tests call with buffers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handlers: a second
		// ^C ends abtest at once.
		<-ctx.Done()
		stop()
	}()
	home, _ := os.UserHomeDir()
	os.Exit(Main(ctx, os.Args, &Env{
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
		Getwd:  os.Getwd,
		Home:   home,
	}))
}
