package forward

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/tcptest"
)

// heldPair is a TCP connection on loopback: this side as a heldConn, and the host's side.
func heldPair(t *testing.T) (*heldConn, net.Conn) {
	c, s := tcptest.Pair(t)
	return &heldConn{Conn: c}, s
}

// readsReset says whether the host's side is told of a reset within d.
func readsReset(s net.Conn, d time.Duration) error {
	_ = s.SetReadDeadline(time.Now().Add(d))
	_, err := s.Read(make([]byte, 1))
	return err
}

// A held connection's Close leaves the host's side open; it is reset when its time is up, and
// a reset before then stops its timer: a wake's many losses leave no timers behind for 10 min.
func TestHeldConnection(t *testing.T) {
	hc, s := heldPair(t)
	if !hc.hold(300 * time.Millisecond) {
		t.Fatal("hold of an open connection: false")
	}
	if err := hc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := readsReset(s, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the host's side, just after the held connection's Close: %v, want nothing yet", err)
	}
	if err := readsReset(s, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the host's side, once the hold's time was up: %v, want a reset", err)
	}

	hc, s = heldPair(t)
	hc.hold(time.Hour)
	hc.reset()
	if err := readsReset(s, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the host's side after the reset: %v, want a reset", err)
	}
	if hc.expiry.Stop() {
		t.Error("the reset left the hold's timer running")
	}
	if hc.hold(time.Hour) {
		t.Error("hold of a connection reset already: true")
	}
}
