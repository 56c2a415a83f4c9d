package main

import (
	"fmt"
	"os/exec"
	"runtime"
)

// child is a process krad-bench started and waits for.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // what cmd.Wait returned; read it after done is closed
}

// startChild starts cmd, with a parent-death signal where there is one (childAttr, unless cmd
// has attributes of its own that include it: terminalAttr), and waits
// for it in the background.
//
// The kernel sends the parent-death signal when the thread that started the child ends, not the
// process, and Go ends a thread when a goroutine locked to it returns. So the child is started
// and waited for on a goroutine that locks its thread and never unlocks it: the thread lives as
// long as the child, and the signal comes only if krad-bench itself is gone.
func startChild(cmd *exec.Cmd) (*child, error) {
	c := &child{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		defer close(c.done)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = childAttr()
		}
		if err := cmd.Start(); err != nil {
			started <- err
			c.err = err
			return
		}
		started <- nil
		c.err = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return c, nil
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }
