package forward

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// quickAcks makes conn, the TCP connection sock (or a wrapper of it) to a host's first hop,
// acknowledge at once each segment it reads, instead of after Linux's delayed-ACK timer (40 ms
// at the least). See [quickAckConn]. Any other connection is returned as it is.
func quickAcks(conn, sock net.Conn) net.Conn {
	tcp, ok := sock.(*net.TCPConn)
	if !ok || !quickAck {
		return conn
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return conn
	}
	return &quickAckConn{Conn: conn, raw: raw}
}

// A quickAckConn sets TCP_QUICKACK on its socket after a read that returned bytes but did not
// fill the buffer, the socket drained and the reader about to wait: which sends an ACK the kernel
// was holding, and acknowledges at once what comes next. The kernel leaves quick-ACK mode by
// itself, so it is set again each time. A read that filled the buffer has more behind it, which
// the kernel acknowledges as it streams in: setting nothing there keeps a bulk read at the cost
// of a plain one (BenchmarkQuickAckRead).
//
// Why: an sshd sends with Nagle's algorithm on until a session's command starts (only then
// does it set TCP_NODELAY), and a bastion, which runs no session for us, for the connection's
// whole life. When it writes two replies back to back, the second waits in its kernel until
// the first is acknowledged; and a client that has nothing to send until that second reply
// comes delays the acknowledgement, by 40 ms on Linux. Every connection's first session paid
// that: its channel's confirmation came 40 ms late (strace of sshd 9.2 shows the wait;
// BenchmarkConnect measures it), and each round trip through a bastion could pay it again.
// Acknowledging at once costs a system call per read and a few more ACKs on the wire.
type quickAckConn struct {
	net.Conn
	raw syscall.RawConn
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && n < len(b) {
		_ = c.raw.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
		})
	}
	return n, err
}
