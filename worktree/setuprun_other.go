//go:build !unix

package worktree

import (
	"context"
	"errors"
	"io"
)

// lockSetup fails where there is no flock: groups' setups run on Unix hosts.
func lockSetup(context.Context, string, func()) (func(), bool, error) {
	return nil, false, errors.New("setup commands run on Unix hosts only")
}

func setupHeld(string) bool { return false }

func runSetupCommand(context.Context, string, *Setup, []string, io.Writer) setupRun {
	return setupRun{code: -1, why: "setup commands run on Unix hosts only"}
}
