//go:build unix

package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/krad-ade/krad/internal/capped"
)

// lockSetup takes the flock of admin's setup, waiting while another terminal's run holds it
// (calling waiting once, first), until ctx ends. waited says whether it had to wait: the setup
// may have ended meanwhile.
func lockSetup(ctx context.Context, admin string, waiting func()) (unlock func(), waited bool, err error) {
	f, err := os.OpenFile(filepath.Join(admin, setupLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		waited = true
		waiting()
		_, err = flockOne(ctx, []*os.File{f})
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return func() { f.Close() }, waited, nil
}

// setupHeld says whether a terminal holds admin's setup lock now: its run is live.
func setupHeld(admin string) bool {
	f, err := os.OpenFile(filepath.Join(admin, setupLockFile), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK)
}

// runSetupCommand runs s's command in dir, in a process group of its own, within its limit.
func runSetupCommand(ctx context.Context, dir string, s *Setup, env []string, out io.Writer) setupRun {
	tail := capped.Last(setupTail)
	w := io.MultiWriter(ignoreErrors{out}, tail)
	cmd := exec.Command("/bin/sh", "-c", s.Command)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process the setup left in the background may hold its output open: the setup has ended
	// all the same once its own shell has.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return setupRun{code: -1, why: fmt.Sprintf("could not start: %v", err)}
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.Duration(s.TimeoutSecs) * time.Second
	timer := time.NewTimer(limit)
	defer timer.Stop()
	// stop ends the whole process group: SIGTERM, then SIGKILL after the grace.
	stop := func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(setupGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // what outlived its shell
	}
	var run setupRun
	select {
	case <-done:
	case <-timer.C:
		stop()
		run.why = fmt.Sprintf("stopped at its time limit of %v (its whole process group)", limit)
	case <-ctx.Done():
		stop()
		run.interrupted = true
	}
	run.code, run.tail = -1, tail.String()
	if ps := cmd.ProcessState; ps != nil {
		run.code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			run.code = 128 + int(ws.Signal())
			if run.why == "" {
				run.why = "killed by signal " + ws.Signal().String()
			}
		}
	}
	if run.why == "" && run.code != 0 {
		run.why = fmt.Sprintf("exited with %d", run.code)
	}
	return run
}
