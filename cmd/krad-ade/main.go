// Command krad-ade is the agents app: the bus, its tokens and api.json, and the environments, on
// this computer and on SSH hosts (through package bridge), with their terminals. See package
// launch, whose Run this is.
package main

import (
	"context"
	"os"

	"github.com/krad-ade/krad/cmd/krad-ade/launch"
)

func main() {
	os.Exit(launch.Run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
