// Package netnstest gives a test a network of its own on this machine: a Linux network namespace,
// made by the test and removed when it ends, joined to this computer's namespace by a veth pair
// with an address on each side. Programs started in it (Net.Command) are "other machines" with
// their own address and loopback, and the test can cut the way to them all at once (Net.Cut: this
// computer's end of the pair goes down, as a laptop's Wi-Fi does) and bring it back (Net.Restore).
//
// It needs root and iproute2's ip; without them it skips the test, except when the CI variable is
// set: there the scripts run as root and install iproute2, and a missing one fails the test.
package netnstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Net is a network namespace joined to this computer's by a veth pair.
type Net struct {
	Name string // the namespace's name, for ip netns exec
	// Here is this computer's address on the pair, There the namespace's: 10.231.N.1 and .2.
	Here, There string
	// Link is this computer's end of the pair, Peer the namespace's.
	Link, Peer string

	once    sync.Once
	dials   chan dialRequest
	dialErr error
}

var seq atomic.Int32

// New makes a namespace with a veth pair to this one, on a /24 of 10.231.0.0/16 that no other
// link of this computer has (chosen under a lock that test processes running at once share),
// and removes both when the test ends.
func New(t testing.TB) *Net {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("netnstest: network namespaces are Linux's; this test runs on Linux only")
	}
	testbin.Need(t, "ip", "iproute2")
	testbin.NeedRoot(t, "a network namespace")
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "krad-netnstest.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	addrs, err := exec.Command("ip", "-o", "-4", "addr").Output()
	if err != nil {
		t.Fatalf("ip addr: %v", err)
	}
	k := int(seq.Add(1))
	n := -1
	for i := range 250 {
		if c := (os.Getpid()*7 + k + i) % 250; !strings.Contains(string(addrs), fmt.Sprintf(" 10.231.%d.", c)) {
			n = c
			break
		}
	}
	if n < 0 {
		t.Fatal("netnstest: every /24 of 10.231.0.0/16 is taken")
	}
	nt := &Net{
		Name:  fmt.Sprintf("krad-test-%d-%d", os.Getpid(), k),
		Here:  fmt.Sprintf("10.231.%d.1", n),
		There: fmt.Sprintf("10.231.%d.2", n),
		Link:  fmt.Sprintf("kr%d-%d", os.Getpid()%100000, k%100),
	}
	nt.Peer = nt.Link + "p"
	peer, link := nt.Peer, nt.Link
	t.Cleanup(func() {
		nt.once.Do(func() {}) // no dialer starts after this
		if nt.dials != nil {
			close(nt.dials)
		}
		_ = exec.Command("ip", "link", "del", link).Run()
		_ = exec.Command("ip", "netns", "del", nt.Name).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", nt.Name},
		{"link", "add", link, "type", "veth", "peer", "name", peer, "netns", nt.Name},
		{"addr", "add", nt.Here + "/24", "dev", link},
		{"link", "set", link, "up"},
		{"-n", nt.Name, "addr", "add", nt.There + "/24", "dev", peer},
		{"-n", nt.Name, "link", "set", peer, "up"},
		{"-n", nt.Name, "link", "set", "lo", "up"},
	} {
		ip(t, args...)
	}
	return nt
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Command is a command to run in the namespace (ip netns exec).
func (n *Net) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Wrap is the argv that runs argv in the namespace, for a helper that starts programs itself.
func (n *Net) Wrap(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.Name}, argv...)
}

// Cut takes this computer's end of the pair down: every connection to the namespace stalls (its
// packets have no way), and new ones fail, until Restore. The kernel says so to whoever listens
// (rtnetlink), as for a Wi-Fi that goes away.
func (n *Net) Cut(t testing.TB) { t.Helper(); ip(t, "link", "set", n.Link, "down") }

// Restore brings this computer's end of the pair back up, with its address and route.
func (n *Net) Restore(t testing.TB) {
	t.Helper()
	ip(t, "link", "set", n.Link, "up")
}

// Up says whether the link on this side is up and carrying (after Restore, the kernel takes a
// moment to bring the veth's carrier back).
func (n *Net) Up() bool {
	out, err := exec.Command("ip", "-o", "link", "show", n.Link).Output()
	return err == nil && strings.Contains(string(out), "state UP")
}

// WaitUp waits until Up, at most d.
func (n *Net) WaitUp(t testing.TB, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !n.Up(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the link %s is not up %s after Restore", n.Link, d)
		}
	}
}

// Dial opens a connection from inside the namespace, as a program there would (to its own
// loopback, say): its socket is made by a thread that entered the namespace.
func (n *Net) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.once.Do(n.startDialer)
	if n.dialErr != nil {
		return nil, n.dialErr
	}
	reply := make(chan dialed, 1)
	select {
	case n.dials <- dialRequest{ctx, network, addr, reply}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d := <-reply
	return d.c, d.err
}

type dialRequest struct {
	ctx           context.Context
	network, addr string
	reply         chan<- dialed
}

type dialed struct {
	c   net.Conn
	err error
}

// startDialer starts the goroutine that makes Dial's sockets: locked to a thread that entered
// the namespace, and never unlocked, so that the thread ends with it rather than go back to Go
// in another namespace. (The socket stays in the namespace it was made in, whatever thread then
// reads it.)
func (n *Net) startDialer() {
	n.dials = make(chan dialRequest)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + n.Name)
		if err == nil {
			err = setns(int(f.Fd()))
			f.Close()
		}
		ready <- err
		if err != nil {
			return
		}
		for r := range n.dials {
			var d net.Dialer
			c, err := d.DialContext(r.ctx, r.network, r.addr)
			r.reply <- dialed{c, err}
		}
	}()
	if err := <-ready; err != nil {
		n.dialErr = fmt.Errorf("enter network namespace %s: %w", n.Name, err)
	}
}
