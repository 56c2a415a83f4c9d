// Command krad-static is krad for SSH hosts: built with CGO_ENABLED=0 for linux/amd64 and
// linux/arm64 by build/linux-static/build, it finds the bus through the KRAD_ADE_* variables
// only, and links no code that reads api.json (a test keeps it so). krad-ade installs it on each
// host as krad and krad-ade-agents. The forwarded port on a host is open to every user of it, so
// before it writes the token this krad checks that the listener is its own user's (package
// listenowner), as every krad does on Linux.
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
	code := cli.Run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr, cli.Options{})
	stop()
	os.Exit(code)
}
