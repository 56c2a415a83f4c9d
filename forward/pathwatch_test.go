package forward

import (
	"strings"
	"testing"
	"time"
)

// TestSleepsSeenInTheClocks: a tick whose wall clock ran ahead of the monotonic clock by the
// sleep gap or more says the computer slept, with how long; ticks whose clocks agree, or differ
// by less (a small step of NTP's), or whose wall clock went back, say nothing.
func TestSleepsSeenInTheClocks(t *testing.T) {
	base := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	type reading struct {
		wall time.Duration // since base
		mono time.Duration
	}
	readings := []reading{
		{0, 0},
		{time.Second, time.Second}, // a tick
		{2*time.Second + 900*time.Millisecond, 2 * time.Second}, // NTP's step: 0.9 s, not sleep
		{95 * time.Second, 3 * time.Second},                     // 92 s asleep
		{96 * time.Second, 4 * time.Second},                     // a tick
		{90 * time.Second, 5 * time.Second},                     // the clock set back: not sleep
		{93 * time.Second, 6 * time.Second},                     // 2 s ahead: the gap, counted
	}
	tick := make(chan time.Time)
	stop := make(chan struct{})
	i := 0
	clocks := func() (time.Time, time.Duration) {
		r := readings[i]
		i++
		return base.Add(r.wall), r.mono
	}
	said := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		sleeps(stop, tick, clocks, func(s string) { said <- s })
		close(done)
	}()
	for range len(readings) - 1 {
		tick <- time.Time{}
	}
	close(stop)
	<-done
	close(said)
	var got []string
	for s := range said {
		got = append(got, s)
	}
	want := []string{"the computer slept (its clock jumped 1m31s ahead)", "the computer slept (its clock jumped 2s ahead)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPathWatchSubscribers: every subscriber hears each reason, one waiting at most (a Conn
// busy elsewhere takes the latest when it can), and the watchers run only while someone
// listens.
func TestPathWatchSubscribers(t *testing.T) {
	var w pathWatch
	a, b := make(chan string, 1), make(chan string, 1)
	unA, unB := w.subscribe(a), w.subscribe(b)
	if w.stop == nil {
		t.Fatal("no watchers run with two subscribers")
	}
	w.notify("one")
	w.notify("two") // a and b hold "one" still
	if got := <-a; got != "one" {
		t.Errorf("a got %q, want one", got)
	}
	if got := <-b; got != "one" {
		t.Errorf("b got %q, want one", got)
	}
	unA()
	w.notify("three")
	select {
	case got := <-a:
		t.Errorf("a, unsubscribed, got %q", got)
	default:
	}
	if got := <-b; got != "three" {
		t.Errorf("b got %q, want three", got)
	}
	unB()
	if w.stop != nil {
		t.Error("the watchers still run with no subscriber")
	}
}

// TestPathChangeChecksTheConnection: after the path watch's word (sleep, a network change), a
// connection that answers is left as it is, and one whose path died meanwhile (a proxy that
// passes nothing more, and closes nothing) is found dead and made again at once, on its port,
// though its keepalives (every minute here) would take three minutes to say so.
func TestPathChangeChecksTheConnection(t *testing.T) {
	cfg, p := throughCutProxy(t)
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = time.Minute, 3
	r := run(t, cfg)
	st, i := r.connected(0)
	client := r.c.Client()

	paths.notify("the test's network changed")
	time.Sleep(2 * CheckTimeout)
	if got := r.c.Status(); got.State != Connected || r.c.Client() != client {
		t.Fatalf("a connection that answers was made again after the check: %s; statuses: %v", got, r.history())
	}

	p.cut()
	paths.notify("the test's network changed")
	down, j := r.wait(30*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	if want := "no reply within 1.5s after the test's network changed"; !strings.Contains(down.String(), want) {
		t.Errorf("the status after the cut is %q, want it to say %q", down, want)
	}
	if lost := r.at(j).Sub(r.at(i)); lost > 30*time.Second {
		t.Errorf("the dead connection was noticed %s after the change", lost)
	}
	p.restore()
	again, _ := r.wait(60*time.Second, j, func(s Status) bool { return s.State == Connected })
	if again.Addr != st.Addr {
		t.Errorf("the forward came back on %s, want %s", again.Addr, st.Addr)
	}
}

// TestPathChangeDialsAgain: a connect begun while the path was down, whose packets were lost (no
// answer ever comes on it), is begun again at once when the network changes, rather than waited
// out to its ConnectTimeout (two minutes here); the forward comes back on its port.
func TestPathChangeDialsAgain(t *testing.T) {
	cfg, p := throughCutProxy(t)
	cfg.ConnectTimeout = 2 * time.Minute
	cfg.Logger = testLogger(t)
	r := run(t, cfg)
	st, i := r.connected(0)

	p.cutLosing()
	paths.notify("the test's network went")
	_, j := r.wait(30*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	p.waitLost(1) // a connect is under way into the dead path
	p.restore()
	restored := time.Now()
	paths.notify("the test's network came back")
	again, k := r.wait(90*time.Second, j, func(s Status) bool { return s.State == Connected })
	if took := r.at(k).Sub(restored); took > 30*time.Second {
		t.Errorf("connected %s after the network came back, want at once (the ConnectTimeout is %s)", took, cfg.ConnectTimeout)
	}
	if again.Addr != st.Addr {
		t.Errorf("the forward came back on %s, want %s", again.Addr, st.Addr)
	}
}
