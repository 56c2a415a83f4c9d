package forward

import (
	"fmt"
	"sync"
	"time"
)

// The path watch tells every running Conn when the way to its hosts has likely changed under
// it: the computer slept (a laptop's lid), or this computer's network changed (a link went down
// or up, an address or a route came or went: Wi-Fi lost or joined, a VPN up or down, a cable).
// After either, connections that look up may be dead, and keepalives alone would take up to
// ServerAliveInterval × ServerAliveCountMax (45 s by default) to say so; so a connected Conn
// checks at once (a keepalive that must come back within [checkTimeout]) and reconnects if it
// does not, and a Conn waiting to retry tries again at once. A connection that answers is left
// as it is: the check costs one keepalive.
//
// Sleep is seen as the wall clock running ahead of the monotonic one, which stops while the
// computer sleeps (a step of the clock by NTP looks the same, and costs one check). Network
// changes come from the kernel (Linux's rtnetlink link, address and route groups) where the
// system has them (see pathwatch_linux.go); elsewhere only sleep is seen.
var paths pathWatch

// A pathWatch sends each event's reason to its subscribers, and runs the watchers while it has
// any.
type pathWatch struct {
	mu   sync.Mutex
	subs map[chan string]struct{}
	stop chan struct{} // closed to stop the watchers; nil while none run
}

// subscribe adds ch, which should hold one reason, to the subscribers, and starts the watchers
// with the first. The returned function removes it (and stops the watchers with the last).
func (w *pathWatch) subscribe(ch chan string) (unsubscribe func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[chan string]struct{}{}
	}
	w.subs[ch] = struct{}{}
	if w.stop == nil {
		w.stop = make(chan struct{})
		go watchClock(w.stop, w.notify)
		go watchNetwork(w.stop, w.notify)
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, ch)
		if len(w.subs) == 0 && w.stop != nil {
			close(w.stop)
			w.stop = nil
		}
	}
}

// notify gives reason to every subscriber that has not one waiting already.
func (w *pathWatch) notify(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- reason:
		default:
		}
	}
}

// clockTick is how often watchClock compares the clocks, and sleepGap how far the wall clock must
// run ahead of the monotonic one between two ticks to count as sleep.
const (
	clockTick = time.Second
	sleepGap  = 2 * time.Second
)

// watchClock calls notify when the wall clock ran ahead of the monotonic one by sleepGap or more
// between two ticks, until stop is closed.
func watchClock(stop <-chan struct{}, notify func(string)) {
	t := time.NewTicker(clockTick)
	defer t.Stop()
	began := time.Now()
	clocks := func() (wall time.Time, mono time.Duration) { return time.Now().Round(0), time.Since(began) }
	sleeps(stop, t.C, clocks, notify)
}

// sleeps reads clocks at each tick, and calls notify when the wall clock ran ahead of the
// monotonic one by sleepGap or more since the tick before.
func sleeps(stop <-chan struct{}, tick <-chan time.Time, clocks func() (time.Time, time.Duration), notify func(string)) {
	wall0, mono0 := clocks()
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		wall, mono := clocks()
		if gap := wall.Sub(wall0) - (mono - mono0); gap >= sleepGap {
			notify(fmt.Sprintf("the computer slept (its clock jumped %s ahead)", gap.Round(time.Second)))
		}
		wall0, mono0 = wall, mono
	}
}
