// Package hangup tells a connection whose far end closed from one whose far end only shut down
// its writing side (a half-close, as nc -N does after its line). Both read as the end of input;
// a server that answers after the end of input needs to know which, since a client that closed
// has left and one that half-closed waits for its answer.
//
// On Linux, for a socket pair or any AF_UNIX stream socket, the kernel says it: poll reports
// POLLHUP once the peer's socket is closed, and only POLLRDHUP after a half-close; Wait sleeps in
// the runtime's poller until then, at no cost. For TCP on loopback the far end is a socket of
// this computer: Wait looks it up every PollEvery (package listenowner, through sock_diag), and
// the peer has closed once no process holds it. Elsewhere, and for other connections, Wait
// cannot tell and says so.
package hangup

import "errors"

// ErrUnknown is Wait's answer for a connection it cannot watch (not TCP on loopback nor AF_UNIX,
// or a system other than Linux): the caller takes the end of input for a close, as it must
// without Wait.
var ErrUnknown = errors.New("hangup: cannot tell a close from a half-close on this connection")
