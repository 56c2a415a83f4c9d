//go:build linux

package tcptest

import (
	"net"
	"testing"
	"time"
)

// pair is Pair, and the server's port.
func pair(t *testing.T) (string, net.Conn, net.Conn) {
	client, server := Pair(t)
	_, port, _ := net.SplitHostPort(server.LocalAddr().String())
	return port, client, server
}

// eventually waits up to 10 s for ok.
func eventually(ok func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestCloseWait: the server's end of a connection its client closed, and it did not, is in
// CLOSE_WAIT; before, it is established.
func TestCloseWait(t *testing.T) {
	port, client, _ := pair(t)
	if got := Count(t, port, Established); got != 1 {
		t.Errorf("%d established sockets on port %s, want the server's 1", got, port)
	}
	client.Close()
	if !eventually(func() bool { return Count(t, port, CloseWait) == 1 }) {
		t.Errorf("%d sockets in CLOSE_WAIT on port %s, want the server's 1", Count(t, port, CloseWait), port)
	}
}

// TestTxQueue: what the server writes that a client does not read, past what the client's
// buffers take, waits in the server's send queue.
func TestTxQueue(t *testing.T) {
	port, _, server := pair(t)
	go func() {
		server.SetWriteDeadline(time.Now().Add(10 * time.Second))
		server.Write(make([]byte, 64<<20)) // blocks once the buffers are full
	}()
	most := func() int {
		n := 0
		for _, s := range Local(t, port) {
			n = max(n, s.TxQueue)
		}
		return n
	}
	if !eventually(func() bool { return most() > 0 }) {
		t.Errorf("the server's send queue stayed empty")
	}
}
