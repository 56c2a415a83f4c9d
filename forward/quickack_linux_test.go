package forward

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/krad-ade/krad/kradtest/tcptest"
)

// delayedAcking says whether the kernel would delay the acknowledgement of what sock reads next:
// TCP_QUICKACK reads 0 in that mode (Linux's "pingpong" mode, which a connection enters once it
// answers what it reads, as an SSH client does), 1 when it acknowledges at once.
func delayedAcking(t *testing.T, sock *net.TCPConn) bool {
	t.Helper()
	raw, err := sock.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v == 0
}

// tcpPair is tcptest.Pair, its client's end as the TCP connection it is.
func tcpPair(t *testing.T) (client *net.TCPConn, server net.Conn) {
	c, server := tcptest.Pair(t)
	return c.(*net.TCPConn), server
}

// pingPong sends requests through conn, the client's end of sock, and reads the server's answers
// through it, as an SSH client does, and says whether the kernel delayed its acknowledgement
// after any of the reads.
func pingPong(t *testing.T, conn net.Conn, sock *net.TCPConn, server net.Conn) (delayed bool) {
	t.Helper()
	buf := make([]byte, 16)
	for range 20 {
		if _, err := conn.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			t.Fatal(err)
		}
		delayed = delayed || delayedAcking(t, sock)
	}
	return delayed
}

// TestQuickAcks: a first hop's TCP connection acknowledges at once each time it has read,
// where the kernel, left to itself, delays the acknowledgement of a connection that answers what
// it reads (the 40 ms that each connection's first session waited on sshd's Nagle).
func TestQuickAcks(t *testing.T) {
	sock, server := tcpPair(t)
	if !pingPong(t, sock, sock, server) {
		t.Skip("without quickAcks, the kernel never delayed an acknowledgement here: there is nothing for them to change")
	}
	sock, server = tcpPair(t)
	conn := quickAcks(sock, sock)
	if _, ok := conn.(*quickAckConn); !ok {
		t.Fatalf("quickAcks(a TCP connection) = %T, want a *quickAckConn", conn)
	}
	if pingPong(t, conn, sock, server) {
		t.Errorf("with quickAcks, a read left the connection delaying its acknowledgements")
	}
}

// TestHopConn: the connection dialHop gives the SSH client for a direct first hop acknowledges at
// once what it reads, counts it for the link, and is held through a heldConn; a hop that is not
// direct (a ProxyCommand's pipes, a channel through a bastion) is neither held nor changed but
// for the count.
func TestHopConn(t *testing.T) {
	sock, server := tcpPair(t)
	l := newLink()
	defer l.close()
	conn, raw := hopConn(sock, true, l)
	if _, ok := raw.(*heldConn); !ok {
		t.Errorf("raw = %T, want the heldConn the link holds", raw)
	}
	if pingPong(t, conn, sock, server) {
		t.Errorf("a direct first hop's connection left the kernel delaying its acknowledgements")
	}
	if got, want := l.received.Load(), int64(20*len("pong")); got != want {
		t.Errorf("the link counted %d bytes read, want %d", got, want)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	conn, raw = hopConn(a, false, nil)
	if conn != a || raw != a {
		t.Errorf("hopConn(a pipe, not direct) = %T, %T, want the pipe itself", conn, raw)
	}
}

// BenchmarkQuickAckRead is what the quick ACKs cost a bulk read: 64 MiB sent through a loopback
// TCP connection and read through quickAcks, beside the same read of a plain connection,
// alternating in the same run (read-… and plain-read-…, the time for the 64 MiB):
//
//	go test -run '^$' -bench QuickAckRead -benchtime 20x ./forward
func BenchmarkQuickAckRead(b *testing.B) {
	const size = 64 << 20
	read := func(quick bool) time.Duration {
		c, server := tcptest.Pair(b)
		defer c.Close()
		conn := c
		if quick {
			conn = quickAcks(c, c)
		}
		go func() {
			defer server.Close()
			chunk := make([]byte, 32<<10)
			for sent := 0; sent < size; sent += len(chunk) {
				if _, err := server.Write(chunk); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 4096) // x/crypto/ssh reads its connection through a bufio.Reader of this size
		began := time.Now()
		got := 0
		for {
			n, err := conn.Read(buf)
			got += n
			if err != nil {
				break
			}
		}
		took := time.Since(began)
		if got != size {
			b.Fatalf("read %d bytes, want %d", got, size)
		}
		return took
	}
	var quick, plain []time.Duration
	for range b.N {
		quick = append(quick, read(true))
		plain = append(plain, read(false))
	}
	reportDurations(b, "read", quick)
	reportDurations(b, "plain-read", plain)
}
