package app

import (
	"sync"
	"time"
)

// A host's tmux decides how often the app has something to warn about (an unreadable line, a
// window that cannot be numbered): a host that floods the stream would flood the log. Each
// environment's warnings about what its tmux sent go through a limiter: a burst of warnBurst, then
// one every warnEvery. A warning that passes after others were dropped says how many ("dropped").
const (
	warnBurst = 20
	warnEvery = 6 * time.Second
)

// warnLimiter is a token bucket for one environment's warnings.
type warnLimiter struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

// allow reports whether a warning may be logged now, and how many were dropped since the last
// one that was.
func (l *warnLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = warnBurst
	} else if d := now.Sub(l.last); d > 0 {
		l.tokens = min(warnBurst, l.tokens+float64(d)/float64(warnEvery))
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// warn logs a warning about what the environment's tmux sent, within the environment's rate.
func (e *environment) warn(msg string, args ...any) {
	ok, dropped := e.warnings.allow(time.Now())
	if !ok {
		return
	}
	args = append([]any{"environment", e.name}, args...)
	if dropped > 0 {
		args = append(args, "dropped", dropped)
	}
	e.app.log.Warn(msg, args...)
}

// problems sums up what went wrong with the lines of one reply of tmux, for one warning: how many,
// and the first.
type problems struct {
	n     int
	first error
}

func (p *problems) add(err error) {
	if p.n == 0 {
		p.first = err
	}
	p.n++
}

// warn logs the summary, if anything went wrong.
func (p *problems) warn(e *environment, msg string) {
	if p.n > 0 {
		e.warn(msg, "count", p.n, "first_err", p.first)
	}
}
