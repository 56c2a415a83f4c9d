//go:build !unix

package desktop

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/krad-ade/krad/cmd/krad/cli"
	"github.com/krad-ade/krad/internal/termsafe"
)

// execProgram runs path as argv with this process's streams and waits for it: where a process
// cannot be replaced, krad stays between the agent's CLI and the server, and exits as it does.
func execProgram(path string, argv []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		return cli.WithHint(fmt.Errorf("run krad-ade's MCP server (%s): %w", termsafe.Quote(path), err),
			"check that it is krad-ade's program, built for this computer, and that it may run")
	}
	os.Exit(0)
	return nil
}
