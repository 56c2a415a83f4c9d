package app

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
)

// tmux says %window-add and %window-close for windows it opened and closed; the app numbers the
// ones it did not open itself and forgets the ones that are gone. Both need commands, which the
// goroutine that reads tmux's notifications must not wait for, so the notifications leave work
// for one goroutine per connection to tmux (follow). The work a line can leave is bounded, however
// many lines a host's tmux sends: a set of windows to number, with no window twice and at most
// maxPendingWindows of them, past which it is one pass that lists the session's windows again; and
// a set of windows to check, which holds only windows that were terminals'.

// maxPendingWindows is how many new windows wait to be numbered one by one; past it, one pass over
// the session's windows numbers every window the app does not know.
const maxPendingWindows = 256

// windowWork is the work tmux's window notifications left for follow.
type windowWork struct {
	mu     sync.Mutex
	added  map[tmux.WindowID]struct{}
	closed map[tmux.WindowID]struct{}
	relist bool          // more windows came than added holds: list them all
	wake   chan struct{} // has room for one: follow has work
}

func newWindowWork() *windowWork {
	return &windowWork{added: map[tmux.WindowID]struct{}{}, closed: map[tmux.WindowID]struct{}{}, wake: make(chan struct{}, 1)}
}

// add leaves a new window to number.
func (q *windowWork) add(w tmux.WindowID) {
	q.mu.Lock()
	if len(q.added) < maxPendingWindows {
		q.added[w] = struct{}{}
	} else if _, there := q.added[w]; !there {
		q.relist = true
	}
	q.mu.Unlock()
	q.signal()
}

// close leaves a terminal's window to check.
func (q *windowWork) close(w tmux.WindowID) {
	q.mu.Lock()
	q.closed[w] = struct{}{}
	q.mu.Unlock()
	q.signal()
}

func (q *windowWork) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // follow has been told already, and takes everything there is when it wakes
	}
}

// take empties the work.
func (q *windowWork) take() (added, closed []tmux.WindowID, relist bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for w := range q.closed {
		closed = append(closed, w)
	}
	if !q.relist {
		for w := range q.added {
			added = append(added, w)
		}
	}
	relist = q.relist
	clear(q.added)
	clear(q.closed)
	q.relist = false
	return added, closed, relist
}

// follow makes c the environment's client, with work of its own for the window notifications it
// brings, and starts the goroutine that does that work until c ends. Each connection to tmux has
// its own: the work an earlier one left is dropped with it (its window ids may name other windows
// now, and adopt, which comes next, lists every window there is), and its goroutine never takes
// the new one's.
func (e *environment) follow(c *tmux.Client) {
	q := newWindowWork()
	a := e.app
	a.mu.Lock()
	e.client, e.work = c, q
	a.mu.Unlock()
	go e.doWork(c, q)
}

func (e *environment) doWork(c *tmux.Client, q *windowWork) {
	for {
		select {
		case <-q.wake:
		case <-c.Done():
			return
		}
		added, closed, relist := q.take()
		if len(closed) > 0 {
			e.windowsClosed(c, closed)
		}
		if relist {
			e.numberAll(c)
		}
		if len(added) > 0 {
			e.windowsAdded(c, added)
		}
	}
}

// windowsAdded numbers windows tmux reports that the app did not open, with one listing of the
// session's windows for them all.
func (e *environment) windowsAdded(c *tmux.Client, added []tmux.WindowID) {
	e.createMu.Lock()
	defer e.createMu.Unlock()
	a := e.app
	a.mu.Lock()
	current := e.client == c
	unknown := added[:0]
	for _, w := range added {
		if _, known := e.byWindow[w]; !known {
			unknown = append(unknown, w)
		}
	}
	// At the limit no listing can help: numbering would refuse every window.
	numbering := current && len(unknown) > 0 && e.roomLocked()
	a.mu.Unlock()
	if !numbering {
		return
	}
	ws := e.windowsToNumber(c)
	if ws == nil {
		return
	}
	e.numberEach(c, ws, func(yield func(tmux.WindowID) bool) {
		for _, w := range unknown {
			if _, there := ws.index[w]; !there {
				continue // closed already, or left out as unreadable
			}
			if !yield(w) {
				return
			}
		}
	})
}

// numberAll numbers every window of the session the app does not know: the pass that stands for
// more new windows than the app keeps track of one by one.
func (e *environment) numberAll(c *tmux.Client) {
	e.createMu.Lock()
	defer e.createMu.Unlock()
	a := e.app
	a.mu.Lock()
	current := e.client == c
	a.mu.Unlock()
	if !current {
		return
	}
	ws := e.windowsToNumber(c)
	if ws == nil {
		return
	}
	// A pass tries at most as many windows as an environment may have terminals: the host lists
	// as many as it likes, and each try is a command.
	tries := a.maxTerminals()
	e.numberEach(c, ws, func(yield func(tmux.WindowID) bool) {
		for _, w := range ws.order {
			a.mu.Lock()
			_, known := e.byWindow[w]
			a.mu.Unlock()
			if known || ws.holder[w] {
				continue
			}
			if tries == 0 {
				return
			}
			tries--
			if !yield(w) {
				return
			}
		}
	})
}

// numberTimeout bounds each tmux step of numbering: the listing of the windows, and each one's
// number.
const numberTimeout = 10 * time.Second

// windowsToNumber lists the session's windows for a numbering pass; nil, said in the log, when it
// cannot.
func (e *environment) windowsToNumber(c *tmux.Client) *sessionWindows {
	ctx, cancel := context.WithTimeout(context.Background(), numberTimeout)
	defer cancel()
	ws, err := e.windows(ctx, c)
	if err != nil {
		e.warn("could not list the windows to number", "err", err)
		return nil
	}
	return ws
}

// numberEach numbers the windows of ws that windows yields, one by one, until the environment has
// as many terminals as it may; the windows that could not be numbered are said in the log once.
func (e *environment) numberEach(c *tmux.Client, ws *sessionWindows, windows iter.Seq[tmux.WindowID]) {
	var unnumbered problems
	for w := range windows {
		ctx, cancel := context.WithTimeout(context.Background(), numberTimeout)
		err := e.numberCreating(ctx, c, ws, w)
		cancel()
		if errors.Is(err, errTooManyTerminals) {
			break
		} else if err != nil {
			unnumbered.add(fmt.Errorf("window %s: %w", w, err))
		}
	}
	unnumbered.warn(e, "could not number windows")
}

// windowsClosed forgets the terminals of windows tmux said closed, if they are gone from the
// session indeed: tmux also says %window-close when a window moves to another index (move-window,
// which the app runs to put a window at its number).
func (e *environment) windowsClosed(c *tmux.Client, closed []tmux.WindowID) {
	ctx, cancel := context.WithTimeout(context.Background(), numberTimeout)
	defer cancel()
	ws, err := e.windows(ctx, c)
	if err != nil {
		return // the connection broke: the next attach reconciles the terminals with tmux
	}
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range closed {
		if _, there := ws.index[w]; there {
			continue
		}
		if t := e.byWindow[w]; t != nil {
			e.removeLocked(t)
		}
	}
}

// errTooManyTerminals says that the environment has MaxTerminals terminals already.
var errTooManyTerminals = errors.New("too many terminals")

// roomLocked says whether the environment may have one more terminal. When it may not, the first
// time since it last could, subscribers get an AppEvent and the log a warning: a window beyond the
// limit is left alone, unnumbered. app.mu must be held.
func (e *environment) roomLocked() bool {
	if len(e.terminals) < e.app.maxTerminals() {
		e.full = false
		return true
	}
	if !e.full {
		e.full = true
		msg := fmt.Sprintf("%s has %d terminals, the most the app follows: windows beyond them are left alone, and Spawn is refused until some close", e.name, len(e.terminals))
		e.app.publishAppLocked(api.AppEvent{Kind: api.TerminalLimit, Environment: e.name, Message: msg})
		e.warn("too many terminals: windows beyond the limit are left alone", "terminals", len(e.terminals), "limit", e.app.maxTerminals())
	}
	return false
}

// limitError is the answer to a request that would open a terminal past the limit. It wraps
// errTooManyTerminals.
func (e *environment) limitError() error {
	return api.Errorf(api.CodeConflict, "environment %s has %d terminals, the most the app follows: close some (krad close T) first", e.name, e.app.maxTerminals()).
		WithReason(api.ReasonTooManyTerminals).WithCause(errTooManyTerminals)
}

// maxTerminals is the limit on each environment's terminals.
func (a *App) maxTerminals() int {
	if a.cfg.MaxTerminals > 0 {
		return a.cfg.MaxTerminals
	}
	return DefaultMaxTerminals
}
