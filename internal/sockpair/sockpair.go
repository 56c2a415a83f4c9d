// Package sockpair makes connected pairs of AF_UNIX stream sockets as net.Conns: what the bus
// hands the SSH bridge for each forwarded connection (local.Server.Pipe), and what tests of code
// that talks over such a pair use. Both ends are *net.UnixConn: they support CloseWrite, as TCP's
// do, and the kernel reports a close apart from a half-close (package internal/hangup).
package sockpair

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// New returns the two ends of a new socket pair, close-on-exec.
func New() (net.Conn, net.Conn, error) {
	fds, err := socketpair()
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	a, err := fileConn(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	b, err := fileConn(fds[1])
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// fileConn makes a net.Conn of a socket's file descriptor, which it takes over.
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "socketpair")
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("socket pair: %w", err)
	}
	return c, nil
}
