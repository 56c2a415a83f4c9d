package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// The local terminals' token file. Terminals on this computer get KRAD_ADE_TOKEN, as the spec
// says, and KRAD_ADE_TOKEN_FILE beside it, which krad reads first: a terminal's environment
// cannot change, so a terminal that outlives a run of the app would hold a dead token, while the
// file is rewritten at every start. It is the very file SSH hosts get, put by the same
// package tokenfile script, here run by sh on this computer: ~/.krad-ade/run/<instance>/token,
// mode 0600 in owner-only folders that refuse symlinks and other users' folders, written through
// a temporary file renamed into place, its path the same for every run of this app instance (the
// instance names the computer, the user and the config folder). It lives there rather than in
// the config folder, which people keep in dotfiles repositories and sync; a token is runtime state.

// localShell runs package tokenfile's scripts on this computer: its commands are command lines
// for a shell, as an SSH host's login shell gets them.
type localShell struct {
	env []string // the app's environment, whose HOME holds ~/.krad-ade
}

// maxScriptOutput bounds what a script may print; tokenfile's print a line or two.
const maxScriptOutput = 64 << 10

func (h localShell) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = h.env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.Len() > maxScriptOutput {
		return nil, fmt.Errorf("sh printed more than %d KiB", maxScriptOutput>>10)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		msg := strings.TrimSpace(stderr.String())
		return stdout.Bytes(), fmt.Errorf("sh: %v: %s", exit, termsafe.Escape(msg, 400))
	}
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("sh: %w", err)
	}
	return stdout.Bytes(), nil
}
