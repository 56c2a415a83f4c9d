//go:build linux || darwin

package forward

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/procgroup"
)

// startProxyCommand runs command, a ProxyCommand with its tokens expanded, as the connection to
// the host at addr.
func startProxyCommand(command, addr string) (*commandConn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &commandConn{command: command, addr: addr, r: outR, w: inW, stderr: capped.Last(stderrTail), exited: make(chan struct{})}
	// exec, as ssh does: the command is the group's leader, so its exit is the connection's end.
	cmd := exec.Command("/bin/sh", "-c", "exec "+command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process outside the group (one that left it with setsid) may hold stderr open: reaping
	// waits that long for it, no longer.
	cmd.WaitDelay = killGrace
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, err
	}
	c.cmd = cmd
	go func() {
		procgroup.WaitExited(cmd.Process.Pid)
		close(c.exited)
	}()
	return c, nil
}

// Close ends the command's process group and reaps the command; see [commandConn]. It returns
// once all of that is done, and may be called more than once.
func (c *commandConn) Close() error {
	c.closeOnce.Do(func() {
		if c.ending.Load() {
			waitFor(c.exited, exitGrace)
		}
		select {
		case <-c.exited:
			c.own = true
		default:
		}
		c.w.Close()
		c.r.Close()
		if !c.own {
			c.signal(syscall.SIGTERM)
			waitFor(c.exited, killGrace)
		}
		// Whatever is left of the group: the command if it ignored SIGTERM, and what it started
		// that did not end with it. Until the command is reaped its pid, which is the group's
		// id, cannot name another group, so the signal reaches no stranger.
		c.signal(syscall.SIGKILL)
		<-c.exited
		c.waitErr = c.cmd.Wait()
	})
	return nil
}

// signal sends sig to the command's process group, and to the command itself should it have
// left the group (setpgid): Close must not wait forever for a command it did not reach.
func (c *commandConn) signal(sig syscall.Signal) {
	syscall.Kill(-c.cmd.Process.Pid, sig)
	syscall.Kill(c.cmd.Process.Pid, sig)
}
