package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/krad-ade/krad/internal/capped"
)

// Local is the [Host] that runs each command on this computer, as a command line for /bin/sh,
// with env as its environment (nil: this process's). It keeps the limits and the errors of
// [SSH] (an *ExitError says "on this computer"), so that a script written for a host's login
// shell, as package tokenfile's are, runs here the same way. When ctx ends first, the command's
// processes are killed (its whole process group, on Unix) and Run returns at once.
func Local(env []string) Host { return localHost{env} }

type localHost struct{ env []string }

// localWaitDelay is how long Run waits, after the command's shell ended, for processes it left
// that still hold its output open.
const localWaitDelay = time.Second

func (h localHost) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run on this computer: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = h.env
	cmd.Stdin = stdin
	cmd.WaitDelay = localWaitDelay
	ownGroup(cmd)
	// A command that prints without end is cut off: killed, as on a cancel.
	stdout := capped.First(MaxStdout).OnCut(func() { killGroup(cmd) })
	stderr := capped.First(MaxStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run on this computer: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		killGroup(cmd)
		return stdout.Bytes(), fmt.Errorf("run on this computer: %w", context.Cause(ctx))
	}
	out := stdout.Bytes()
	if stdout.Cut() {
		return out, ErrStdoutTooLong
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &exit):
		return out, &ExitError{Status: exit.ExitCode(), Signal: signalOf(exit), Stderr: stderr.Bytes(), Truncated: stderr.Cut(), local: true}
	}
	return out, fmt.Errorf("run on this computer: %w", err)
}
