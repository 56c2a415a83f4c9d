//go:build linux || darwin

package listenowner

import (
	"net"
	"os"
)

// Check returns nil when the socket that would receive what is written on conn belongs to this
// process's user (os.Getuid), a *ForeignListenerError when it belongs to another, and another
// error when it cannot tell: conn is not TCP to loopback (ErrNotLoopback), no socket serves it
// (ErrNoListener), the kernel's table of sockets cannot be read (/proc/net/tcp, or macOS's
// net.inet.tcp.pcblist_n), or it records no owner for the socket that serves conn
// (ErrNoOwner). Only nil means "safe to send".
func Check(conn net.Conn) error {
	remote, uid, err := owner(conn)
	if err != nil {
		return err
	}
	if self := os.Getuid(); uid != self {
		return &ForeignListenerError{Addr: remote, UID: uid, Self: self}
	}
	return nil
}

// Owner returns the uid that owns the socket serving conn, as Check decides it: the far end of
// the connection when the kernel's table shows it held, else the listener the kernel would pick
// for it (when listeners tie, one that is not this process's user's, if any). Its errors are
// Check's.
func Owner(conn net.Conn) (int, error) {
	_, uid, err := owner(conn)
	return uid, err
}
