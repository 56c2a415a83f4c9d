package listenowner

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ForeignListenerError is Check's refusal: the socket that would receive what is written on the
// connection belongs to another user.
type ForeignListenerError struct {
	// Addr is the address the connection went to: the endpoint, not the listener's wildcard.
	Addr netip.AddrPort
	// UID owns the listener (or the socket it made for this connection).
	UID int
	// Self is this process's uid, which UID is not.
	Self int
}

func (e *ForeignListenerError) Error() string {
	return fmt.Sprintf("the listener at %s belongs to uid %d, not you (uid %d)", e.Addr, e.UID, e.Self)
}

// ErrNoListener is wrapped by Check's and Owner's error when no socket in the kernel's table
// (/proc/net/tcp and tcp6 on Linux, net.inet.tcp.pcblist_n on macOS) serves the connection: the
// listener closed in the meantime, or /proc shows another network namespace than the one the
// connection is in.
var ErrNoListener = errors.New("no listener found")

// ErrNoOwner is wrapped by Check's and Owner's error on macOS when the socket that serves the
// connection is, in the kernel's list, a flow of a user-space network stack, for which the kernel
// records no owner: nothing proves whose it is.
var ErrNoOwner = errors.New("the kernel records no owner for the socket")

// ErrNotLoopback is returned for a connection that is not TCP to a loopback address: only there
// does this computer's table of sockets show who listens.
var ErrNotLoopback = errors.New("not a TCP connection to a loopback address")

// ends are the two ends of conn, the client's and the listener's, with IPv4-mapped addresses
// unmapped; ErrNotLoopback unless conn is TCP to a loopback address.
func ends(conn net.Conn) (local, remote netip.AddrPort, err error) {
	l, ok1 := conn.LocalAddr().(*net.TCPAddr)
	r, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || l == nil || r == nil {
		return local, remote, ErrNotLoopback
	}
	local, remote = unmap(l.AddrPort()), unmap(r.AddrPort())
	if !remote.Addr().IsLoopback() || remote.Port() == 0 {
		return netip.AddrPort{}, netip.AddrPort{}, ErrNotLoopback
	}
	return local, remote, nil
}
