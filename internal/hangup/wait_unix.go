//go:build linux || darwin

package hangup

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/krad-ade/krad/listenowner"
)

// PollEvery is how often Wait looks up the far end of a TCP connection.
const PollEvery = 200 * time.Millisecond

// Wait returns nil once the far end of conn has closed, to be called after reading conn reached
// the end of input. It returns ctx.Err() when ctx ends first, the connection's error when conn is
// closed under it, and ErrUnknown at once for a connection it cannot watch. When ctx ends while
// it waits, it sets conn's read deadline in the past (that is how a wait in the poller is woken),
// for every kind of connection alike: the caller reads no more from conn.
//
// For TCP, a far end that cannot be looked up (the tables refused) counts as still held: Wait
// keeps looking rather than take a half-close for a close.
func Wait(ctx context.Context, conn net.Conn) error {
	var wait func() error
	switch c := conn.(type) {
	case *net.UnixConn:
		wait = func() error { return waitHUP(ctx, c) }
	case *net.TCPConn:
		wait = func() error { return pollFarEnd(ctx, c) }
	default:
		return ErrUnknown
	}
	past := func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) }
	stop := context.AfterFunc(ctx, past)
	defer stop()
	err := wait()
	if ctx.Err() != nil {
		past() // AfterFunc's may not have run yet when a wait returns on ctx alone
	}
	return err
}

// waitHUP waits in the runtime's poller until the peer closed. Each time the socket becomes
// ready to read, peerClosed says whether it is the hang-up (ready only to read the end of input
// again is not): the peer's close wakes the socket's readers on both systems. Wait's read
// deadline wakes it when ctx ends.
func waitHUP(ctx context.Context, c *net.UnixConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	err = rc.Read(func(fd uintptr) bool { return peerClosed(int(fd)) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// pollFarEnd looks the far end up every PollEvery until no process holds it.
func pollFarEnd(ctx context.Context, c *net.TCPConn) error {
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		held, err := listenowner.FarEndHeld(c)
		switch {
		case errors.Is(err, listenowner.ErrNotLoopback):
			return ErrUnknown
		case err == nil && !held:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
