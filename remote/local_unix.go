//go:build unix

package remote

import (
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup starts cmd in a process group of its own, so that killGroup reaches what it started.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// signalOf is the signal that ended the command, as ssh names it ("KILL"), or "".
func signalOf(e *exec.ExitError) string {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
	}
	return ""
}
