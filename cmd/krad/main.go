// Command krad is the CLI of krad-ade's agents bus, for people, scripts and agents. Called as
// krad-ade-agents, it is the agents' companion. Package cli holds the commands and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/krad-ade/krad/cmd/krad/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr, cli.Options{Discover: discover})
	stop()
	os.Exit(code)
}
