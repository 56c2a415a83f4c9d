//go:build linux || darwin

package sshconfig

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/procgroup"
	"github.com/krad-ade/krad/internal/termsafe"
)

// runMatchExec runs command as ssh runs a Match exec: sh -c, with stdin and stdout on /dev/null
// and the app's environment, and returns its exit status. The command runs in a process group of
// its own; when it runs past limit the group is ended (SIGTERM, then SIGKILL after killGrace),
// and that is an error, as is a command killed by a signal (ssh gives up on the config then).
// Processes it leaves running when it exits by itself are left alone, as ssh leaves them.
func runMatchExec(command string, limit time.Duration) (int, error) {
	stderr := capped.Last(stderrTail)
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process it left behind may hold stderr open: reaping waits that long for it.
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan struct{})
	go func() {
		procgroup.WaitExited(cmd.Process.Pid)
		close(exited)
	}()
	late := !waitFor(exited, limit)
	if late {
		// Until the command is reaped its pid, the group's id, names no other group.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if !waitFor(exited, killGrace) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	err := cmd.Wait()
	said := termsafe.LastLine(stderr.String(), 300)
	var ee *exec.ExitError
	switch {
	case late:
		err = fmt.Errorf("%w (%s): it was ended", errExecTimeout, limit)
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		return 0, nil
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), nil
	}
	if said != "" {
		err = fmt.Errorf("%w: %s", err, said)
	}
	return 0, err
}

// waitFor waits for ch to close, at most d. It says whether it did.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
