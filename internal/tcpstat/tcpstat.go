// Package tcpstat reads this computer's IPv4 TCP sockets from /proc/net/tcp (Linux), for tests
// that check what a server holds: its connections in CLOSE_WAIT, what it wrote that its
// clients have not read.
package tcpstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The states of /proc/net/tcp, in its hex.
const (
	Established = "01"
	CloseWait   = "08"
)

// Socket is one line of /proc/net/tcp.
type Socket struct {
	State   string // Established, CloseWait, …
	TxQueue int    // bytes written and not yet acknowledged by the peer
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
		t.Fatalf("tcpstat: port %q: %v", port, err)
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
		out = append(out, Socket{State: f[3], TxQueue: int(n)})
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
