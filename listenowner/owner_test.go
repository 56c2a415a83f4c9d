//go:build linux || darwin

package listenowner_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/listenownertest"
	"github.com/krad-ade/krad/kradtest/tcptest"
	"github.com/krad-ade/krad/listenowner"
)

// hasIPv6 reports whether this system can listen on [::1]; a kernel without IPv6 has no
// /proc/net/tcp6 either.
func hasIPv6() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// The listeners a test starts, and the loopback addresses a client may dial to reach each.
var listeners = []struct {
	addr  string
	dials []string
	v6    bool
}{
	{addr: "127.0.0.1:0", dials: []string{"127.0.0.1"}},
	{addr: "0.0.0.0:0", dials: []string{"127.0.0.1"}},
	{addr: "[::ffff:127.0.0.1]:0", dials: []string{"127.0.0.1"}, v6: true},
	{addr: "[::1]:0", dials: []string{"::1"}, v6: true},
	{addr: "[::]:0", dials: []string{"127.0.0.1", "::1"}, v6: true},
}

// dial connects to host at port and closes the connection when t ends.
func dial(t *testing.T, host string, port int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestCheckOurs: a listener of this process's passes, whether it accepted the connection yet or
// not, on every loopback form.
func TestCheckOurs(t *testing.T) {
	ipv6 := hasIPv6()
	for _, l := range listeners {
		for _, host := range l.dials {
			for _, accepted := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s dialed at %s, accepted %t", l.addr, host, accepted), func(t *testing.T) {
					if l.v6 && !ipv6 {
						t.Skip("no IPv6 on this system")
					}
					ln, err := net.Listen("tcp", l.addr)
					if err != nil {
						t.Fatal(err)
					}
					defer ln.Close()
					conn := dial(t, host, ln.Addr().(*net.TCPAddr).Port)
					if accepted {
						c, err := ln.Accept()
						if err != nil {
							t.Fatal(err)
						}
						defer c.Close()
					}
					if err := listenowner.Check(conn); err != nil {
						t.Errorf("got %v, want nil", err)
					}
					if uid, err := listenowner.Owner(conn); uid != os.Getuid() || err != nil {
						t.Errorf("Owner: got %d, %v, want %d", uid, err, os.Getuid())
					}
					if uid, err := listenowner.ProcOwner(conn); uid != os.Getuid() || err != nil {
						t.Errorf("from /proc: got %d, %v, want %d", uid, err, os.Getuid())
					}
				})
			}
		}
	}
}

// TestCheckForeign: a listener of another user's is refused with *ForeignListenerError, whether
// it accepted the connection yet or not, on every loopback form, and nothing reaches it.
func TestCheckForeign(t *testing.T) {
	ipv6 := hasIPv6()
	for _, l := range listeners {
		for _, accept := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s accepting %t", l.addr, accept), func(t *testing.T) {
				if l.v6 && !ipv6 {
					t.Skip("no IPv6 on this system")
				}
				sq := listenownertest.Start(t, l.addr, accept)
				for _, host := range l.dials {
					t.Run("dialed at "+host, func(t *testing.T) {
						conn := dial(t, host, sq.Port)
						if accept {
							waitAccepted(t, conn)
						}
						err := listenowner.Check(conn)
						var foreign *listenowner.ForeignListenerError
						if !errors.As(err, &foreign) {
							t.Fatalf("got %v, want a *ForeignListenerError", err)
						}
						want := listenowner.ForeignListenerError{
							Addr: netip.AddrPortFrom(netip.MustParseAddr(host), uint16(sq.Port)),
							UID:  listenownertest.Nobody,
							Self: os.Getuid(),
						}
						if *foreign != want {
							t.Errorf("got %+v, want %+v", *foreign, want)
						}
						wantMsg := fmt.Sprintf("the listener at %s belongs to uid %d, not you (uid %d)", want.Addr, want.UID, want.Self)
						if err.Error() != wantMsg {
							t.Errorf("got message %q, want %q", err, wantMsg)
						}
						if uid, err := listenowner.Owner(conn); uid != listenownertest.Nobody || err != nil {
							t.Errorf("Owner: got %d, %v, want %d", uid, err, listenownertest.Nobody)
						}
						if uid, err := listenowner.ProcOwner(conn); uid != listenownertest.Nobody || err != nil {
							t.Errorf("from /proc: got %d, %v, want %d", uid, err, listenownertest.Nobody)
						}
						if accept {
							conn.Close()
							if got := sq.Received(t, 5*time.Second); len(got) != 0 {
								t.Errorf("the squatter received %q, want nothing", got)
							}
						}
					})
				}
			})
		}
	}
}

// TestCheckForeignAcceptor: the listener is ours, but another user's process accepts its
// connections (it was handed the listener): what is written would reach that process, so
// Check refuses on Linux, which shows the accepting process's user. macOS shows the listener's.
func TestCheckForeignAcceptor(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sq := listenownertest.Adopt(t, ln)
	conn := dial(t, "127.0.0.1", sq.Port)
	waitAccepted(t, conn)
	if runtime.GOOS == "darwin" {
		// XNU gives a connection its listener's credential and keeps it past the accept: the
		// user that made the listener, and handed it over, is who Check judges (doc.go).
		if err := listenowner.Check(conn); err != nil {
			t.Errorf("got %v, want nil: the listener is ours", err)
		}
		return
	}
	var foreign *listenowner.ForeignListenerError
	if err := listenowner.Check(conn); !errors.As(err, &foreign) || foreign.UID != listenownertest.Nobody {
		t.Errorf("got %v, want a *ForeignListenerError for uid %d", err, listenownertest.Nobody)
	}
}

// TestCheckNoListener: when the listener is gone and the far end closed, nothing serves the
// connection, and Check says so rather than pass.
func TestCheckNoListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if err := listenowner.Check(conn); !errors.Is(err, listenowner.ErrNoListener) {
		t.Errorf("got %v, want ErrNoListener", err)
	}
}

// TestCheckNotLoopback: Check judges only TCP connections to loopback.
func TestCheckNotLoopback(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := listenowner.Check(a); !errors.Is(err, listenowner.ErrNotLoopback) {
		t.Errorf("a pipe: got %v, want ErrNotLoopback", err)
	}

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	u, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if err := listenowner.Check(u); !errors.Is(err, listenowner.ErrNotLoopback) {
		t.Errorf("UDP: got %v, want ErrNotLoopback", err)
	}

	t.Run("an address of this computer's that is not loopback", func(t *testing.T) {
		ip := nonLoopback(t)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		conn := dial(t, ip.String(), ln.Addr().(*net.TCPAddr).Port)
		if err := listenowner.Check(conn); !errors.Is(err, listenowner.ErrNotLoopback) {
			t.Errorf("got %v, want ErrNotLoopback", err)
		}
	})
}

// nonLoopback is an IPv4 address of this computer's that is not loopback, or skips t.
func nonLoopback(t *testing.T) netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() {
				return ip.Unmap()
			}
		}
	}
	t.Skip("this computer has no address but loopback")
	return netip.Addr{}
}

// waitAccepted waits until the far end of conn is held by a process, as /proc/net/tcp shows it:
// the squatter accepted it.
func waitAccepted(t *testing.T, conn net.Conn) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !listenowner.Accepted(conn) {
		if time.Now().After(deadline) {
			t.Fatal("the squatter did not accept the connection within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkCheck is the cost of one Check on a connection to a listener of ours, accepted: two
// reads of /proc/net/tcp at most, each a walk of the kernel's table of every connection.
func BenchmarkCheck(b *testing.B) {
	conn, _ := tcptest.Pair(b)
	for b.Loop() {
		if err := listenowner.Check(conn); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFarEndHeld: seen from the accepting side, the client's socket is held while it is open and
// after it shut down its writing side (a half-close, as nc -N does), and no longer once the
// client closed it; both through sock_diag and through /proc. Either way the accepting side reads
// only the end of input.
func TestFarEndHeld(t *testing.T) {
	ipv6 := hasIPv6()
	for _, host := range []string{"127.0.0.1", "::1"} {
		if host == "::1" && !ipv6 {
			continue
		}
		for _, reset := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reset=%v", host, reset), func(t *testing.T) {
				ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				client := dial(t, host, ln.Addr().(*net.TCPAddr).Port)
				server, err := ln.Accept()
				if err != nil {
					t.Fatal(err)
				}
				defer server.Close()
				want := func(when string, held bool) {
					t.Helper()
					for name, f := range map[string]func(net.Conn) (bool, error){"sock_diag": listenowner.FarEndHeld, "proc": listenowner.ProcFarEndHeld} {
						got, err := f(server)
						if err != nil || got != held {
							t.Errorf("%s, %s: held %v, %v; want %v", when, name, got, err, held)
						}
					}
				}
				want("open", true)
				if err := client.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
				_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := server.Read(make([]byte, 1)); n != 0 || err == nil {
					t.Fatalf("after the half-close the server read %d, %v; want the end of input", n, err)
				}
				want("half-closed", true)
				if reset {
					// Unread bytes on the client's side make its close a reset: its socket is gone.
					_, _ = server.Write([]byte("unread"))
					time.Sleep(50 * time.Millisecond)
				}
				client.Close()
				time.Sleep(50 * time.Millisecond) // the close reaches the server's side
				want("closed", false)
			})
		}
	}
}

func TestFarEndHeldNotLoopback(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if _, err := listenowner.FarEndHeld(c1); !errors.Is(err, listenowner.ErrNotLoopback) {
		t.Errorf("FarEndHeld(net.Pipe) = %v, want ErrNotLoopback", err)
	}
}
