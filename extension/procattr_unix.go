//go:build unix

package extension

import (
	"os/exec"
	"syscall"

	"github.com/krad-ade/krad/internal/procgroup"
)

// setProcAttr starts the extension in a process group of its own, so that a Ctrl-C meant for the
// app's terminal does not reach it: the app stops it, in order.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// exited says whether the process pid, the extension's, has exited, though its connection may
// not have told yet: a zombie, or reaped by the SDK's wait.
func exited(pid int) bool { return procgroup.Exited(pid) }
