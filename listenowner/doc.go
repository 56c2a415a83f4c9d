// Package listenowner tells whether the listener behind a loopback TCP connection belongs to this
// process's user, so that a client can refuse to send a secret to a port another user took.
//
//	conn, err := net.Dial("tcp", "127.0.0.1:41877")
//	…
//	if err := listenowner.Check(conn); err != nil {
//		conn.Close() // the token is not written
//		return err   // a *ForeignListenerError when another user listens there
//	}
//
// # Why
//
// krad-ade's bus on an SSH host is a reverse forward: a loopback port that every user of that
// host can connect to, and, once the forward is gone (the network dropped, the app quit), bind.
// A client that finds its endpoint in KRAD_ADE_ENDPOINT and its token in a file would then hand
// the token to whoever bound the port first. With Check before the token is written, the client
// sends it only to a socket of its own user.
//
// # How
//
// On Linux, Check asks the kernel through sock_diag netlink for just the sockets that matter, the
// far end of conn and the TCP listeners, and reads /proc/net/tcp and /proc/net/tcp6 where
// netlink is refused; both see the network namespace of the calling process, which is the
// connection's (loopback does not cross namespaces), and tests hold both to the same answers. It
// looks for the far
// end of conn itself, once a process accepted it: that process reads what is written, and the
// line's uid is its user. Before the accept, the connection waits in the queue of the listener
// the kernel handed it to, which it finds the way the kernel does: bound to the address itself
// (127.0.0.1:PORT, or ::ffff:127.0.0.1:PORT in tcp6), else to a wildcard (0.0.0.0:PORT, then
// [::]:PORT); for [::1], [::1]:PORT then [::]:PORT. It compares that owner with os.Getuid. Every
// doubt is a refusal: no socket found, a table that cannot be read or is not in the format it
// knows.
//
// On macOS, Check reads the kernel's list of TCP sockets, the net.inet.tcp.pcblist_n sysctl
// that netstat reads (pcblist.go cites the XNU sources of its layout), and judges it the same
// way: the far end of conn while a process holds it, else the listener the kernel's lookup would
// pick (in_pcblookup_hash_locked in XNU's bsd/netinet/in_pcb.c: the address itself, then
// 0.0.0.0, then an IPv6 socket's wildcard; the list shows IPV6_V6ONLY, so a [::] that takes no
// IPv4 is not counted). The socket's uid there is the uid of the credential it was made with;
// XNU gives a connection the listener's credential, and keeps it past the accept, where Linux
// shows the accepting process's user. A socket that the list shows without an owner (a flow of a
// user-space network stack) is a refusal too (ErrNoOwner).
//
// The legitimate listeners pass: the app's own bus on this computer is the user's process, and
// an SSH reverse forward's listener on a host is made and accepted by the user's sshd session
// process, which runs as the user (with OpenSSH's privilege separation, only the pre-auth and
// monitor processes are root, and they hold no forwards).
//
// # The far end of a connection
//
// The same lookup of the far end serves a server: [FarEndHeld] tells whether a process still
// holds the client's socket of a loopback connection. A client that shut down its writing side
// after its request (nc -N) and one that closed its socket both read as the end of input; only
// the first still holds its socket (the other's lingers, held by no process, or is gone). The bus
// uses it so that a half-close does not cancel a request, while a close does.
//
// # What it does not protect
//
//   - Root, and the user's own processes: both can read the token file itself, so Check does
//     not try to stop them. A listener of root's is refused like another user's (unless the
//     client runs as root), but root can also hand a listener to a process of the user's, or
//     read the secret out of the client's memory.
//   - Systems other than Linux and macOS: there Check returns nil and the port is trusted. The
//     static CLI runs on Linux hosts only; on a laptop with another system, the app holds its
//     port while it runs, and the exposure is a port it left behind that another user of the same
//     laptop took.
//
// Timing leaves no gap that matters: a connection waiting to be accepted is reset when its
// listener closes, so no listener that takes the port after Check can receive what was written
// on a connection Check passed; and once accepted, the accepting process is what Check judges.
//
// Cost: through sock_diag, Check takes about 0.1 ms (BenchmarkCheck), however many connections
// the host holds. Each read of /proc/net/tcp walks the kernel's table of every TCP socket,
// TIME_WAIT ones included: about 2 ms on an idle machine and 40 ms on one holding 30,000
// connections in TIME_WAIT. The fallback reads tcp6 only when tcp does not settle the question,
// and parses only the lines of the endpoint's port. On macOS each Check copies the whole list,
// 616 bytes a socket; parsing it for 30,000 sockets in TIME_WAIT takes about 1 ms on Linux
// (BenchmarkParsePCBList, beside the same sockets read from /proc/net/tcp's text). The sysctl's
// own cost has not been measured on a Mac.
package listenowner
