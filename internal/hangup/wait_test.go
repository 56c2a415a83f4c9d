//go:build linux || darwin

package hangup_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/hangup"
	"github.com/krad-ade/krad/internal/sockpair"
	"github.com/krad-ade/krad/kradtest/tcptest"
)

// socketPair is a connected pair of AF_UNIX stream sockets, as local.Server.Pipe makes them.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	a, b, err := sockpair.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// tcpPair is tcptest.Pair, typed as socketPair is.
func tcpPair(t *testing.T) (net.Conn, net.Conn) { return tcptest.Pair(t) }

// TestWait: the server reads the client's line and the end of input; Wait goes on waiting after
// the client's half-close, and returns once the client closes.
func TestWait(t *testing.T) {
	for name, pair := range map[string]func(*testing.T) (net.Conn, net.Conn){"socket pair": socketPair, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			client, server := pair(t)
			_, _ = io.WriteString(client, "line\n")
			if err := client.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
			if got, err := io.ReadAll(server); err != nil || string(got) != "line\n" {
				t.Fatalf("read %q, %v", got, err)
			}
			_ = server.SetReadDeadline(time.Time{})
			done := make(chan error, 1)
			go func() { done <- hangup.Wait(context.Background(), server) }()
			select {
			case err := <-done:
				t.Fatalf("Wait returned %v after a half-close", err)
			case <-time.After(5 * hangup.PollEvery):
			}
			// The server can still answer.
			_, _ = io.WriteString(server, "answer\n")
			_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
			if got, err := io.ReadAll(io.LimitReader(client, 7)); err != nil || string(got) != "answer\n" {
				t.Fatalf("the half-closed client read %q, %v", got, err)
			}
			client.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Wait after the close: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Wait did not return within 10 s of the client's close")
			}
		})
	}
}

// TestWaitEnds: Wait returns ctx's error when ctx ends, leaving the connection's read deadline
// in the past as its doc says, for every kind of connection; and the connection's error when it
// is closed under it.
func TestWaitEnds(t *testing.T) {
	for name, pair := range map[string]func(*testing.T) (net.Conn, net.Conn){"socket pair": socketPair, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			client, server := pair(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- hangup.Wait(ctx, server) }()
			time.Sleep(50 * time.Millisecond) // Wait is waiting
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Wait after its ctx ended: %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Wait did not return when its ctx ended")
			}
			// Bytes wait to be read, yet the read fails at once: the deadline is past.
			_, _ = io.WriteString(client, "x")
			if _, err := server.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("a read after Wait's ctx ended: %v, want the deadline that Wait set", err)
			}
		})
	}
	_, server := socketPair(t)
	done := make(chan error, 1)
	go func() { done <- hangup.Wait(context.Background(), server) }()
	time.Sleep(50 * time.Millisecond)
	server.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Wait on a connection closed under it: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return when its connection was closed")
	}
}

func TestWaitUnknown(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := hangup.Wait(context.Background(), a); !errors.Is(err, hangup.ErrUnknown) {
		t.Errorf("Wait(net.Pipe) = %v, want ErrUnknown", err)
	}
}
