//go:build unix

package desktop

import (
	"fmt"
	"os"
	"syscall"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/internal/termsafe"
)

// execProgram replaces this process with path, run as argv: same pid, so the agent's CLI that
// started krad mcp signals and waits for the server itself.
func execProgram(path string, argv []string) error {
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return cli.WithHint(fmt.Errorf("run krad-ade's MCP server (%s): %w", termsafe.Quote(path), err),
			"check that it is krad-ade's program, built for this computer, and that it may run")
	}
	return nil
}
