package forward

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/internal/hangup"
	"github.com/krad-ade/krad/internal/sockpair"
	"github.com/krad-ade/krad/kradtest/floodtest"
	"github.com/krad-ade/krad/kradtest/tcptest"
)

// pairTarget is a Target whose connections are socket pairs, as the app's bus makes them
// (local.Server.Pipe): each dial sends the target's end on targets.
func pairTarget(t testing.TB, targets chan<- net.Conn) func(context.Context) (net.Conn, error) {
	return func(context.Context) (net.Conn, error) {
		forward, target, err := sockpair.New()
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { forward.Close(); target.Close() })
		targets <- target
		return forward, nil
	}
}

// nextTarget is the target's end of the next connection the forward opens, with a deadline of
// 30 s for the test's reads and writes on it.
func nextTarget(t *testing.T, targets <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case target := <-targets:
		_ = target.SetDeadline(time.Now().Add(30 * time.Second))
		return target
	case <-time.After(10 * time.Second):
		t.Fatal("the forward did not open a connection to the target")
		return nil
	}
}

// hungUp says whether hangup.Wait on c returns within d: c's far end has closed.
func hungUp(c net.Conn, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return hangup.Wait(ctx, c) == nil
}

// TestForwardCarriesCloses: through a real sshd's forward, a client on the host that shuts down
// its writing side after its line reaches the target as a half-close (it still gets its
// answer); one that closes reaches it as a close; and the target's close closes the host's side
// too, though the client there sends nothing more.
func TestForwardCarriesCloses(t *testing.T) {
	e := newEnv(t)
	e.startBuild()
	targets := make(chan net.Conn, 1)
	cfg := e.cfg("build")
	cfg.Target = pairTarget(t, targets)
	r := run(t, cfg)
	st, _ := r.connected(0)
	connect := func(send string) (client, target net.Conn) {
		t.Helper()
		client, err := net.Dial("tcp", st.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		_ = client.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.WriteString(client, send)
		return client, nextTarget(t, targets)
	}
	readAll := func(c net.Conn) string {
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return string(got)
	}

	t.Run("half-close", func(t *testing.T) {
		client, target := connect("line\n")
		_ = client.(*net.TCPConn).CloseWrite()
		if got := readAll(target); got != "line\n" {
			t.Fatalf("the target read %q", got)
		}
		if hungUp(target, 3*hostEndsEvery) {
			t.Fatal("the host's half-close reached the target as a close")
		}
		_, _ = io.WriteString(target, "answer\n")
		target.Close()
		if got := readAll(client); got != "answer\n" {
			t.Errorf("the half-closed client got %q, want its answer", got)
		}
	})
	t.Run("close", func(t *testing.T) {
		client, target := connect("line\n")
		client.Close()
		if got := readAll(target); got != "line\n" {
			t.Fatalf("the target read %q", got)
		}
		if !hungUp(target, 10*time.Second) {
			t.Error("the host's close did not reach the target as a close within 10 s")
		}
	})
	t.Run("the target closes", func(t *testing.T) {
		client, target := connect("part of a line")
		buf := make([]byte, 14)
		if _, err := io.ReadFull(target, buf); err != nil {
			t.Fatal(err)
		}
		target.Close() // as the bus does to a connection it drops
		if got := readAll(client); got != "" {
			t.Fatalf("the client read %q", got)
		}
		if !hungUp(client, 10*time.Second) {
			t.Error("the host's side of the connection stayed open after the target closed")
		}
	})
}

// TestPipeTargetCloseUnknown: a target connection whose close hangup cannot tell from a
// half-close (net.Pipe here) has its end of input taken for a close, as hangup says: pipe closes
// both sides, though the host's client sends nothing more. Before, it held them open until the
// client left.
func TestPipeTargetCloseUnknown(t *testing.T) {
	client, remote := tcptest.Pair(t)
	local, target := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(context.Background(), remote, local, nil)
	}()
	_, _ = io.WriteString(client, "part of a line")
	buf := make([]byte, 14)
	_ = target.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(target, buf); err != nil {
		t.Fatal(err)
	}
	target.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("pipe held both sides open after a target whose close cannot be told closed")
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Write([]byte("more")); err == nil {
		_, err = client.Read(buf)
		if err == nil {
			t.Error("the host's side is still open")
		}
	}
}

// TestHeldClients: a client of the forward counts as held while a process holds a socket
// connected to the forward's own address, 127.0.0.1:port (IPv4, or mapped in tcp6); a socket in
// FIN_WAIT2 (no inode) does not, and neither does another process's socket to another address
// on the same port, even from the very address of a client that closed.
func TestHeldClients(t *testing.T) {
	ap := netip.MustParseAddrPort
	const port = 41877
	socks := []socket{
		{Local: ap("127.0.0.1:50001"), Remote: ap("127.0.0.1:41877"), State: 1, Inode: 11},
		{Local: ap("[::ffff:127.0.0.1]:50002"), Remote: ap("[::ffff:127.0.0.1]:41877"), State: 1, Inode: 12},
		{Local: ap("127.0.0.1:50003"), Remote: ap("127.0.0.1:41877"), State: 5, Inode: 0},
		{Local: ap("127.0.0.1:50003"), Remote: ap("127.0.0.2:41877"), State: 1, Inode: 13},
		{Local: ap("127.0.0.1:50004"), Remote: ap("[::1]:41877"), State: 1, Inode: 14},
		{Local: ap("127.0.0.1:41877"), Remote: ap("127.0.0.1:50001"), State: 1, Inode: 15}, // sshd's end
	}
	got := heldClients(socks, port)
	want := map[netip.AddrPort]bool{ap("127.0.0.1:50001"): true, ap("127.0.0.1:50002"): true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heldClients = %v, want %v", got, want)
	}
}

// TestHostEndsShellStuck: the shell that reads the host's sockets for closed clients has the
// deadline of every host command. Here the host's ~/.bashrc waits for good in the shells that
// start while a file is there (as it does for the first that watches): that shell is dropped at
// the deadline, a new one reads the sockets once the .bashrc is fixed, and a client that closed
// meanwhile reaches the target as a close. Before, the stuck shell held the watch for good, and
// the close never came through.
func TestHostEndsShellStuck(t *testing.T) {
	e := newEnv(t)
	s := e.startBuild()
	dir := t.TempDir()
	hold, stuck := filepath.Join(dir, "hold"), filepath.Join(dir, "stuck")
	bashrc := fmt.Sprintf("if [ -e '%s' ]; then while [ -e '%s' ]; do sleep 0.1; done; fi\n", hold, stuck)
	if err := os.WriteFile(filepath.Join(s.Home, ".bashrc"), []byte(bashrc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(stuck) }) // the stuck shells end with the test
	targets := make(chan net.Conn, 1)
	cfg := e.cfg("build")
	cfg.CommandTimeout = 2 * time.Second
	cfg.Target = pairTarget(t, targets)
	r := run(t, cfg)
	st, _ := r.connected(0)
	for _, f := range []string{hold, stuck} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	client, err := net.Dial("tcp", st.Addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(client, "line\n")
	target := nextTarget(t, targets)
	client.Close()
	if got, err := io.ReadAll(target); err != nil || string(got) != "line\n" {
		t.Fatalf("the target read %q, %v", got, err)
	}
	// The watch's first shell starts within a second, and waits in the .bashrc.
	time.Sleep(2 * hostEndsEvery)
	if hungUp(target, 0) {
		t.Fatal("the close came through while every new shell on the host waited")
	}
	_ = target.SetReadDeadline(time.Time{}) // hangup.Wait set it in the past when it gave up
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	if !hungUp(target, 20*time.Second) {
		t.Error("the host's close did not reach the target within 20 s of the .bashrc's fix: the stuck shell held the watch")
	}
}

// tcpTable is this machine's TCP sockets, /proc/net/tcp and tcp6.
func tcpTable(t *testing.T) []socket {
	t.Helper()
	var table []byte
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil && f == "/proc/net/tcp" {
			t.Fatal(err)
		}
		table = append(table, b...)
	}
	return parseProcNetTCP(table)
}

// openTo counts this machine's established TCP connections to addr (the forward, on the host
// that this machine is), from the clients' side.
func openTo(t *testing.T, addr netip.AddrPort) int {
	n := 0
	for _, s := range tcpTable(t) {
		if unmapAddrPort(s.Remote) == addr && s.State == 0x01 {
			n++
		}
	}
	return n
}

// TestEarlyConnectionsBounded: while the forward is open on the host but not yet checked (the
// host's ~/.bashrc holds the check), another user of the host (uid 65534) floods it with
// connections that each send 64,000 bytes. The forward holds maxEarly of them, which nothing
// reads yet, and closes the others at once, rather than hold every one with what SSH's window
// lets it send; once the check passes, the forward carries as before.
func TestEarlyConnectionsBounded(t *testing.T) {
	e := newEnv(t)
	s := e.startBuild()
	hold := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hold) })
	bashrc := "while [ -e '" + hold + "' ]; do sleep 0.1; done\n"
	if err := os.WriteFile(filepath.Join(s.Home, ".bashrc"), []byte(bashrc), 0o600); err != nil {
		t.Fatal(err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	fwd := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	cfg := e.cfg("build")
	cfg.CommandTimeout = 2 * time.Minute
	cfg.PreferredPort = port
	r := run(t, cfg)
	listening := func() bool {
		for _, s := range tcpTable(t) {
			if s.Local == fwd && s.State == tcpListen {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(30 * time.Second)
	for !listening() {
		if time.Now().After(deadline) {
			t.Fatalf("the forward did not open on port %d within 30 s: %s", port, r.c.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}

	const past = 20
	f := floodtest.Start(t, floodtest.Options{Addr: fwd.String(), Conns: maxEarly + past, Partial: 64000, AsNobody: true})
	f.Wait(t, 60*time.Second)
	deadline = time.Now().Add(20 * time.Second)
	for n := openTo(t, fwd); n != maxEarly; n = openTo(t, fwd) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the flood's %d connections are open, want the forward to hold %d and close the others", n, maxEarly+past, maxEarly)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if n := openTo(t, fwd); n != maxEarly {
		t.Fatalf("%d of the flood's connections are open a second later, want the %d held", n, maxEarly)
	}
	if st := r.c.Status(); st.State != Connecting {
		t.Fatalf("status %s, want connecting while the .bashrc holds the check", st)
	}

	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	st, _ := r.connected(0)
	carries(t, st.Addr)
}

// TestHostEndsReadMisses: a read of the host's sockets that misses a client's line, as a read of
// /proc/net/tcp can while other sockets open and close (the kernel lists it a page at a time),
// does not end the client's connection: a half-closed client keeps its connection through
// reads that miss it every other time, and its close still comes through. Here the host's grep,
// once the test turns it on, prints every other read with no socket lines at all. Before, one
// such read was taken for the client's close, and a Wait sent through nc -N ended with no
// answer (bridge TestHalfCloseThroughTheForward, run 20, on a loaded machine).
func TestHostEndsReadMisses(t *testing.T) {
	e := newEnv(t)
	s := e.startBuild()
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("no grep")
	}
	bin, state := t.TempDir(), t.TempDir()
	missing := filepath.Join(state, "missing")
	wrapper := fmt.Sprintf(`#!/bin/sh
if [ -e '%[1]s' ]; then
	n=$(cat '%[2]s' 2>/dev/null || echo 0)
	echo $((n + 1)) > '%[2]s'
	if [ $((n %% 2)) -eq 0 ]; then
		'%[3]s' "$@" | '%[3]s' -i local_address
		exit 0
	fi
fi
exec '%[3]s' "$@"
`, missing, filepath.Join(state, "reads"), grep)
	if err := os.WriteFile(filepath.Join(bin, "grep"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Home, ".bashrc"), []byte("PATH='"+bin+"':$PATH\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := make(chan net.Conn, 1)
	cfg := e.cfg("build")
	cfg.Target = pairTarget(t, targets)
	r := run(t, cfg)
	st, _ := r.connected(0)
	if err := os.WriteFile(missing, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	client, err := net.Dial("tcp", st.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	_, _ = io.WriteString(client, "line\n")
	_ = client.(*net.TCPConn).CloseWrite()
	target := nextTarget(t, targets)
	if got, err := io.ReadAll(target); err != nil || string(got) != "line\n" {
		t.Fatalf("the target read %q, %v", got, err)
	}
	if hungUp(target, 4*hostEndsEvery) {
		t.Fatal("a read of the host's sockets that missed the half-closed client ended its connection")
	}
	reads, _ := os.ReadFile(filepath.Join(state, "reads"))
	if n, _ := strconv.Atoi(strings.TrimSpace(string(reads))); n < 2 {
		t.Fatalf("the host's sockets were read %d times while the client waited, want a missed read and more", n)
	}
	_ = target.SetReadDeadline(time.Time{}) // hangup.Wait set it in the past when it gave up
	client.Close()
	if !hungUp(target, 10*time.Second) {
		t.Error("the client's close did not reach the target within 10 s")
	}
}
