package forward

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
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

// TestQuickAcks: a first hop's TCP connection acknowledges at once each time it has read,
// where the kernel, left to itself, delays the acknowledgement of a connection that answers what
// it reads (the 40 ms that each connection's first session waited on sshd's Nagle).
func TestQuickAcks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, quick := range []bool{false, true} {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		sock := client.(*net.TCPConn)
		var conn net.Conn = sock
		if quick {
			conn = quickAcks(sock, sock)
			if _, ok := conn.(*quickAckConn); !ok {
				t.Fatalf("quickAcks(a TCP connection) = %T, want a *quickAckConn", conn)
			}
		}
		// Requests and answers, as an SSH client's: the kernel learns to delay its ACKs.
		buf := make([]byte, 16)
		delayed := false
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
		client.Close()
		server.Close()
		if quick && delayed {
			t.Errorf("with quickAcks, a read left the connection delaying its acknowledgements")
		}
		if !quick && !delayed {
			t.Logf("without quickAcks, the kernel never delayed an acknowledgement here: the check above proves less")
		}
		t.Logf("quick=%v delayed=%v", quick, delayed)
	}
}

// TestQuickAcksOnlyTCP: a connection that is not TCP (a ProxyCommand's pipes, a channel through
// a bastion) is left as it is.
func TestQuickAcksOnlyTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := quickAcks(a, a); got != a {
		t.Errorf("quickAcks(a pipe) = %T, want the pipe itself", got)
	}
}
