package forward

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// commandConn is the connection to a host through its ProxyCommand, as ssh makes it: the command
// runs under /bin/sh with exec, in a process group of its own, with the app's environment; its
// stdin and stdout are the connection, and the last stderrTail bytes of its stderr are kept to
// say why it ended. Its ends are os.Pipe files, which take deadlines, so the handshake's
// deadline holds as it does over TCP.
//
// Close ends the whole group, the command and whatever it started: SIGTERM, then SIGKILL after
// killGrace, and reaps the command, so that no process outlives the connection.
type commandConn struct {
	command string
	addr    string // the host's address, for RemoteAddr
	cmd     *exec.Cmd
	r, w    *os.File       // our ends of the command's stdout and stdin
	stderr  *capped.Buffer // the last stderrTail bytes

	exited chan struct{} // closed once the command has exited, before it is reaped
	ending atomic.Bool   // the command closed its stdout, or its stdin

	closeOnce sync.Once
	own       bool  // the command exited by itself, before Close signalled it
	waitErr   error // what reaping it said
}

const (
	// stderrTail is how much of a ProxyCommand's stderr is kept: enough for its last lines.
	stderrTail = 2048
	// killGrace is how long a ProxyCommand has to end after SIGTERM, before SIGKILL.
	killGrace = time.Second
	// exitGrace is how long a ProxyCommand that closed its stdout or stdin has to exit by
	// itself before Close signals it, so that its own status, not our signal, says why it
	// ended.
	exitGrace = 500 * time.Millisecond
)

func (c *commandConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.ending.Store(true)
	}
	return n, err
}

func (c *commandConn) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		c.ending.Store(true)
	}
	return n, err
}

func (c *commandConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetReadDeadline(t), c.w.SetWriteDeadline(t))
}

func (c *commandConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *commandConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

// LocalAddr is the command's end of the connection; RemoteAddr the host's address as
// ssh_config gives it (knownhosts reads a remote address as host:port).
func (c *commandConn) LocalAddr() net.Addr  { return commandAddr("stdio") }
func (c *commandConn) RemoteAddr() net.Addr { return commandAddr(c.addr) }

// commandAddr is an address at an end of a ProxyCommand.
type commandAddr string

func (commandAddr) Network() string  { return "proxycommand" }
func (a commandAddr) String() string { return string(a) }

// exitError says how the command ended when it exited by itself, else nil: the cause of a
// connection that ended, rather than the end of input the SSH library saw. Call it after Close;
// a nil c (no ProxyCommand) has none.
func (c *commandConn) exitError() error {
	if c == nil || !c.own {
		return nil
	}
	return &proxyError{command: c.command, err: c.waitErr, said: c.said()}
}

// said returns the last line the command wrote to its stderr, safe to print.
func (c *commandConn) said() string { return termsafe.LastLine(c.stderr.String(), 300) }

// proxyError is a ProxyCommand that exited: its status, and the last line of its stderr.
type proxyError struct {
	command string
	err     error // what Wait returned: nil for status 0
	said    string
}

func (e *proxyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ProxyCommand %s", strconv.Quote(e.command))
	var ee *exec.ExitError
	switch {
	case e.err == nil:
		b.WriteString(" exited with status 0")
	case errors.As(e.err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			fmt.Fprintf(&b, " was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
		} else {
			fmt.Fprintf(&b, " exited with status %d", ee.ExitCode())
		}
	default:
		fmt.Fprintf(&b, " ended: %v", e.err)
	}
	if e.said != "" {
		b.WriteString(": ")
		b.WriteString(e.said)
	}
	return b.String()
}

func (e *proxyError) Unwrap() error { return e.err }

// waitFor waits for ch to close, at most d. It says whether it did.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
