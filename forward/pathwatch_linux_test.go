package forward

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/krad-ade/krad/kradtest/netnstest"
)

// TestNetworkChangesSeen: the kernel's word that a link went down or came up reaches the path
// watch, once for each change however many messages it takes (a link that goes down takes its
// routes with it). The socket is opened in a network namespace the test makes, whose link the
// test takes down and up: nothing else changes there. The link makes no IPv6 link-local address:
// one comes a second or so after the link is up (once its duplicate address detection is done),
// a change of its own, which a loaded machine saw land in the next step's window.
func TestNetworkChangesSeen(t *testing.T) {
	n := netnstest.New(t)
	ipIn(t, n.Name, "link", "set", n.Peer, "addrgenmode", "none")
	f := routeSocketIn(t, n.Name)
	stop := make(chan struct{})
	defer close(stop)
	said := make(chan string, 10)
	go watchRoute(stop, f, func(s string) { said <- s })
	expect := func(what string) {
		t.Helper()
		select {
		case s := <-said:
			if s != "this computer's network changed" {
				t.Errorf("after %s: %q", what, s)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing said within 10 s of %s", what)
		}
		// The change's other messages come within the settle time: no second word for them. A
		// busy machine may hold one of them back past it (the kernel's link watch sends a
		// carrier's change later, on its own work queue): one more word then, never one a
		// message (a link coming up sends a dozen).
		words := 1
		for quiet := false; !quiet; {
			select {
			case s := <-said:
				words++
				t.Logf("after %s, word %d: %q", what, words, s)
			case <-time.After(3 * networkSettle):
				quiet = true
			}
		}
		if words > 2 {
			t.Errorf("after %s, %d words, want one (two on a busy machine)", what, words)
		}
	}
	time.Sleep(3 * networkSettle)
	select {
	case s := <-said:
		t.Fatalf("said %q before any change", s)
	default:
	}
	ipIn(t, n.Name, "link", "set", n.Peer, "down")
	expect("the link going down")
	ipIn(t, n.Name, "link", "set", n.Peer, "up")
	expect("the link coming up")
	ipIn(t, n.Name, "addr", "add", "10.232.1.1/32", "dev", "lo")
	expect("an address added")
}

func ipIn(t *testing.T, ns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s %v: %v\n%s", ns, args, err, out)
	}
}

// routeSocketIn is openRoute in the named network namespace: opened from a thread that enters
// it, and comes back (a thread that cannot come back is not given back to Go: it ends with its
// goroutine).
func routeSocketIn(t *testing.T, ns string) *os.File {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	got := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		here, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			got <- result{err: err}
			return
		}
		defer here.Close()
		there, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			got <- result{err: err}
			return
		}
		defer there.Close()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			got <- result{err: err}
			return
		}
		f, err := openRoute()
		if unix.Setns(int(here.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		got <- result{f, err}
	}()
	r := <-got
	if r.err != nil {
		t.Fatalf("open an rtnetlink socket in namespace %s: %v", ns, r.err)
	}
	return r.f
}
