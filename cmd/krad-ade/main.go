// Command krad-ade is the agents app: the bus, its tokens and api.json, and (in later issues) the
// environments, their terminals and the SSH bridge. See package launch.
package main

import (
	"context"
	"os"

	"github.com/krad-ade/krad/cmd/krad-ade/launch"
)

func main() {
	os.Exit(launch.Run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
