package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// ErrNotServing is returned by Pipe before Serve runs or after it returned.
var ErrNotServing = errors.New("local: the bus is not serving")

// Pipe opens a connection to the bus that does not go through its listener: one end of a
// socket pair, whose other end the bus serves as it would an accepted connection from origin,
// checks and all. The SSH bridge carries each connection a host makes to its forward this way,
// with the origin FromForward(environment), which spares a TCP connection on this computer and
// tells the bus which environment speaks. Both ends support CloseWrite, as TCP's do.
func (s *Server) Pipe(_ context.Context, origin Origin) (net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("local: socket pair: %w", err)
	}
	client, err := fileConn(fds[0], "krad-bus-client")
	if err != nil {
		syscall.Close(fds[1])
		return nil, err
	}
	server, err := fileConn(fds[1], "krad-bus-server")
	if err != nil {
		client.Close()
		return nil, err
	}
	s.mu.Lock()
	ctx := s.serving
	if ctx == nil || ctx.Err() != nil {
		s.mu.Unlock()
		client.Close()
		server.Close()
		return nil, ErrNotServing
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.serveConn(ctx, server, origin, s.piped)
	}()
	return client, nil
}

// fileConn makes a net.Conn of a socket's file descriptor, which it takes over.
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() // FileConn dups it
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("local: socket pair: %w", err)
	}
	return c, nil
}
