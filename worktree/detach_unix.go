//go:build unix

package worktree

import (
	"os/exec"
	"syscall"
)

// detach runs cmd in a session of its own, without a controlling terminal: a git that goes to
// the network (ssh under it, a credential helper) must ask through the askpass, never on the
// terminal the app's UI draws on (/dev/tty).
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
