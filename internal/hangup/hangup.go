// Package hangup tells a connection whose far end closed from one whose far end only shut down
// its writing side (a half-close, as nc -N does after its line). Both read as the end of input;
// a server that answers after the end of input needs to know which, since a client that closed
// has left and one that half-closed waits for its answer.
//
// For a socket pair or any AF_UNIX stream socket, the kernel says it: on Linux, poll reports
// POLLHUP once the peer's socket is closed, and only POLLRDHUP after a half-close; on macOS, the
// socket can send no more (POLLHUP on a poll for POLLOUT) once the peer closed, and still can
// after a half-close (hup_darwin.go cites XNU). Wait sleeps in the runtime's poller until then,
// at no cost. For TCP on loopback the far end is a socket of this computer: Wait looks it up
// every PollEvery (package listenowner: sock_diag on Linux, the net.inet.tcp.pcblist_n sysctl on
// macOS), and the peer has closed once no process holds it. On other systems, and for other
// connections, Wait cannot tell and says so.
package hangup

import "errors"

// ErrUnknown is Wait's answer for a connection it cannot watch (not TCP on loopback nor AF_UNIX,
// or a system other than Linux and macOS): the caller takes the end of input for a close, as it must
// without Wait.
var ErrUnknown = errors.New("hangup: cannot tell a close from a half-close on this connection")
