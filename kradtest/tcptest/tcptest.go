// Package tcptest is TCP on loopback for tests: a connected pair, and this computer's IPv4
// sockets on a port as /proc/net/tcp (Linux) shows them, for tests that check what a server
// holds: its connections in CLOSE_WAIT, what it wrote that its clients have not read.
package tcptest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Pair is a TCP connection on loopback: the client's end and the server's, closed when t ends.
func Pair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// The states of /proc/net/tcp, in its hex.
const (
	Established = "01"
	CloseWait   = "08"
)

// Socket is one line of /proc/net/tcp.
type Socket struct {
	State      string // Established, CloseWait, …
	TxQueue    int    // bytes written and not yet acknowledged by the peer
	RemotePort int    // the peer's port: which client's connection it is, on a server's port
}

// Local returns the sockets whose local port is port, a decimal number.
func Local(t testing.TB, port string) []Socket {
	t.Helper()
	raw, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("tcptest: port %q: %v", port, err)
	}
	suffix := fmt.Sprintf(":%04X", p)
	var out []Socket
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], suffix) {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		n, _ := strconv.ParseInt(tx, 16, 64)
		_, rport, _ := strings.Cut(f[2], ":")
		r, _ := strconv.ParseInt(rport, 16, 32)
		out = append(out, Socket{State: f[3], TxQueue: int(n), RemotePort: int(r)})
	}
	return out
}

// Count is how many sockets whose local port is port are in state.
func Count(t testing.TB, port, state string) int {
	t.Helper()
	n := 0
	for _, s := range Local(t, port) {
		if s.State == state {
			n++
		}
	}
	return n
}

// Peers is the set of peer ports of the sockets whose local port is port and that are in state:
// on a server's port, which clients' connections are in it.
func Peers(t testing.TB, port, state string) map[int]bool {
	t.Helper()
	peers := map[int]bool{}
	for _, s := range Local(t, port) {
		if s.State == state {
			peers[s.RemotePort] = true
		}
	}
	return peers
}
