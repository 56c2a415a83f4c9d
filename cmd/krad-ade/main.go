// Command krad-ade is the agents app: the bus, its tokens and api.json, and the environments, on
// this computer and on SSH hosts (through package bridge), with their terminals. See package
// appmain, whose Run this is. Run by krad mcp with desktop.ServeMCPArg first, it is krad mcp's
// server instead (package desktop says why).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/krad-ade/krad/cmd/krad-ade/appmain"
	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/cmd/krad/desktop"
	"github.com/krad-ade/krad/mcpserve"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == desktop.ServeMCPArg {
		os.Exit(serveMCP(os.Args[2:]))
	}
	os.Exit(appmain.Run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// serveMCP is krad mcp's server, run in krad-ade's program, which links the MCP SDK, by krad's
// krad mcp (package desktop): args are krad's, after its name.
func serveMCP(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Run(ctx, append([]string{"krad"}, args...), os.Getenv, os.Stdin, os.Stdout, os.Stderr,
		cli.Options{Discover: desktop.Discover, MCP: mcpserve.Serve})
}
