package app

import (
	"testing"
	"time"

	"github.com/krad-ade/krad/tmux"
)

// TestWindowWorkIsBounded: however many %window-add lines come, the work they leave is at most
// maxPendingWindows windows, each once, or one pass over all windows.
func TestWindowWorkIsBounded(t *testing.T) {
	t.Parallel()
	q := newWindowWork()
	for range 1000 {
		q.add(7)
	}
	added, _, relist := q.take()
	if len(added) != 1 || relist {
		t.Errorf("one window added 1000 times: %v, relist %v; want it once", added, relist)
	}
	for w := range tmux.WindowID(100000) {
		q.add(w)
	}
	if n := len(q.added); n > maxPendingWindows {
		t.Errorf("%d windows wait, want at most %d", n, maxPendingWindows)
	}
	added, _, relist = q.take()
	if len(added) != 0 || !relist {
		t.Errorf("100,000 windows: %d to number one by one, relist %v; want one pass over them all", len(added), relist)
	}
	if added, closed, relist := q.take(); len(added)+len(closed) != 0 || relist {
		t.Error("take left work behind")
	}
}

// TestWarnLimiter: a burst of warnBurst, then one every warnEvery, and the one that passes after
// others were dropped says how many.
func TestWarnLimiter(t *testing.T) {
	t.Parallel()
	var l warnLimiter
	t0 := time.Now()
	passed := 0
	for range 1000 {
		if ok, _ := l.allow(t0); ok {
			passed++
		}
	}
	if passed != warnBurst {
		t.Errorf("%d of 1000 warnings at once passed, want %d", passed, warnBurst)
	}
	if ok, _ := l.allow(t0.Add(warnEvery / 2)); ok {
		t.Error("a warning passed half a period after the burst")
	}
	ok, dropped := l.allow(t0.Add(warnEvery + time.Millisecond))
	if !ok || dropped != 1000-warnBurst+1 {
		t.Errorf("a period after the burst: passed %v, dropped %d; want passed, dropped %d", ok, dropped, 1000-warnBurst+1)
	}
	// A minute later, a day later: at most a burst again.
	passed = 0
	for range 100 {
		if ok, _ := l.allow(t0.Add(24 * time.Hour)); ok {
			passed++
		}
	}
	if passed != warnBurst {
		t.Errorf("a day later %d of 100 passed, want %d", passed, warnBurst)
	}
}
