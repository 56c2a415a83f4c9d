// Command krad is the CLI of krad-ade's agents bus, for people, scripts and agents. Called as
// krad-ade-agents, it is the agents' companion. Package cli holds the commands and exit codes.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/cmd/krad/desktop"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr, cli.Options{Discover: desktop.Discover, MCP: execMCP})
	stop()
	os.Exit(code)
}

// execMCP is krad mcp's server: krad-ade's program, in this process's place (package desktop), so
// that krad links no MCP SDK. cli has found the bus and read the flags by then; krad-ade reads
// them again from the same arguments and environment.
func execMCP(context.Context, cli.MCPConfig, io.Reader, io.Writer) error {
	return desktop.ExecMCPServer(os.Args)
}
