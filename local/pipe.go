package local

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/internal/sockpair"
)

// ErrNotServing is returned by Pipe before Serve runs or after it returned.
var ErrNotServing = errors.New("local: the bus is not serving")

// Pipe opens a connection to the bus that does not go through its listener: one end of a
// socket pair, whose other end the bus serves as it would an accepted connection from origin,
// checks and all. The SSH bridge carries each connection a host makes to its forward this way,
// with the origin FromForward(environment), which spares a TCP connection on this computer and
// tells the bus which environment speaks. Both ends support CloseWrite, as TCP's do.
func (s *Server) Pipe(_ context.Context, origin access.Origin) (net.Conn, error) {
	client, server, err := sockpair.New()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	s.mu.Lock()
	ctx := s.serving
	if ctx == nil || ctx.Err() != nil {
		s.mu.Unlock()
		client.Close()
		server.Close()
		return nil, ErrNotServing
	}
	in := s.inletLocked(origin)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.serveConn(ctx, server, in)
	}()
	return client, nil
}
