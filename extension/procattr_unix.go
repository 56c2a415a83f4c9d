//go:build unix

package extension

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts the extension in a process group of its own, so that a Ctrl-C meant for the
// app's terminal does not reach it: the app stops it, in order.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
