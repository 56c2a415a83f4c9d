package forward

import (
	"net"
	"sync"
	"time"
)

// A heldConn is the TCP connection to a host's first hop. A link whose keepalives went
// unanswered (the network dropped: a laptop's sleep, a Wi-Fi gone) is not closed on it but held
// ([Conn.hold]) until the next connection reaches the host, and then reset. Closed while the path
// is down, its FIN would wait in this computer's kernel for a retransmission timer backed off to
// seconds, and the host's sshd would keep the old session, and our forward's port, that long
// after the network came back: each reconnect would have to find that session and end it
// (Conn.endStaleSession) before it got its port back. The reset goes at the moment a new
// connection has shown that the path works, so the host hears of the old connection's end while
// the new one is still on its handshake.
type heldConn struct {
	net.Conn

	mu     sync.Mutex
	held   bool        // Close leaves the socket open: the reset is [heldConn.reset]'s
	done   bool        // closed or reset
	expiry *time.Timer // the reset after maxAge, while held
}

// hold keeps the socket open past the link's Close, whose reads and writes under way fail at
// once (a deadline in the past), for at most maxAge: then it is reset all the same. It says
// whether it did: false when the connection was closed already.
func (c *heldConn) hold(maxAge time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.held = true
	_ = c.Conn.SetDeadline(time.Unix(1, 0))
	c.expiry = time.AfterFunc(maxAge, c.reset)
	return true
}

// Close closes the connection, unless it is held.
func (c *heldConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held || c.done {
		return nil
	}
	c.done = true
	return c.Conn.Close()
}

// reset closes the connection with a TCP reset (SO_LINGER 0), which the host's kernel acts on at
// once, where a FIN would wait for the data before it to be acknowledged.
func (c *heldConn) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.done = true
	if c.expiry != nil {
		c.expiry.Stop() // a reset before maxAge: no timer left behind for it
	}
	if tc, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Conn.Close()
}

// maxHeld is how long a held connection waits for a connection to the host to reach it before
// it is reset all the same (with the path still down, to no effect on the host).
const maxHeld = 10 * time.Minute

// hold keeps hc until the next connection reaches the host (resetHeld), or maxHeld.
func (c *Conn) hold(hc *heldConn) {
	if !hc.hold(maxHeld) {
		return
	}
	c.heldMu.Lock()
	c.held = append(c.held, hc)
	c.heldMu.Unlock()
}

// resetHeld resets the connections held since the last: a connection to the host's first hop
// has just been made, so the path works and the resets reach the host.
func (c *Conn) resetHeld() {
	c.heldMu.Lock()
	held := c.held
	c.held = nil
	c.heldMu.Unlock()
	for _, hc := range held {
		hc.reset()
	}
}
