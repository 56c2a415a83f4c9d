package app

import (
	"context"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
)

// The Send story. A Send types its text into a terminal (typeText), then Enter after the paste
// delay; around it the app looks at the terminal (look.go says how it sees one), so that a Wait
// can tell the terminal's reaction from the echo of the text. A pendingSend is a Send the
// terminal has not reacted to yet; terminal.looked decides from each look whether it has.

// live finds terminal n of env for a request that acts on it: not_found when there is none,
// conflict when its process has exited.
func (a *App) live(env string, n int, verb string) (*terminal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(env, n)
	if t == nil {
		return nil, api.NoTerminal(env, n)
	}
	if t.dead {
		return nil, api.Errorf(api.CodeConflict, "cannot %s %s: its process has exited (%s)", verb, t.id(), t.state)
	}
	if !t.attached() {
		return nil, api.Errorf(api.CodeConflict, "cannot %s %s: it is still opening; try again", verb, t.id())
	}
	return t, nil
}

// send answers Send: it types the text, then, after the paste delay, Enter.
func (a *App) send(ctx context.Context, from api.TerminalID, b *api.SendBody) error {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return err
	}
	t, err := a.live(from.Environment, int(b.Target), "send to")
	if err != nil {
		return err
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return e.typeText(ctx, t, b.Text, b.Enter == nil || *b.Enter)
}

// typeText types text into terminal t as a Send does: it types the text, then, after the paste
// delay, Enter (if enter). Around it, it looks at the terminal, so that a Wait can tell the
// terminal's reaction from the echo of the text. t.sendMu must be held.
func (e *environment) typeText(ctx context.Context, t *terminal, text string, enter bool) error {
	a := e.app
	a.mu.Lock()
	pane := t.pane
	a.mu.Unlock()
	s, err := e.beginSend(ctx, t, pane, text)
	if err != nil {
		return err
	}
	err = e.sendKeys(ctx, pane, text, enter, func() {
		if rows, err := e.rows(ctx, pane); err == nil {
			a.mu.Lock()
			t.entering(s, rows)
			a.mu.Unlock()
		}
	})
	a.mu.Lock()
	t.typed(s, time.Now())
	e.lookLocked(t)
	a.notifyLocked()
	a.mu.Unlock()
	return err
}

// beginSend looks at terminal t before a Send types text into it and records the Send, which it
// returns.
func (e *environment) beginSend(ctx context.Context, t *terminal, pane tmux.PaneID, text string) (*pendingSend, error) {
	sc, fg, err := e.glance(ctx, pane)
	if err != nil {
		return nil, err
	}
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.beginSend(text, sc.rows, fg, time.Now()), nil
}

// rows is a pane's screen, row by row: for the screen a Send's Enter is pressed on.
func (e *environment) rows(ctx context.Context, pane tmux.PaneID) ([]string, error) {
	c, err := e.current()
	if err != nil {
		return nil, err
	}
	return captureRows(ctx, c, pane)
}

// pendingSend is a Send the terminal has not reacted to yet, and what the app has seen of the
// terminal since. The agent has reacted once its screen shows anything but what it showed before
// the Send and the echo of the text typed, or once it reports a state itself. A foreground job
// that the text started (a command typed into a shell) is the agent at work, however long it
// prints nothing. An agent that shows nothing, reports nothing and runs no new job for the
// reaction window is taken to have reacted without showing it: a Wait answers with its state.
// Each Send has its own: the steps of a Send (and the looks during it) hold its pointer, and apply
// to the terminal only while it is still the terminal's send.
type pendingSend struct {
	typed string // what the Send types, Enter aside
	// before is the screen as the Send began, and entered the screen as its Enter was pressed
	// (nil without an Enter): the echo is what the terminal showed of the text by then, which a
	// TUI draws in its own way.
	before, entered []string
	// fg is the terminal's foreground process group as the Send began: another one in the
	// foreground is a job the text started.
	fg foreground
	// typing is set until the Send's last key is in; at is when it went in.
	typing bool
	at     time.Time
	// What the looks since saw: the start of the latest look applied, whether it saw a job the
	// text started, and since when the looks after the reaction window have seen none.
	lookedAt  time.Time
	job       bool
	restSince time.Time
	// looking is set while a look after output is under way; output meanwhile sets again, for
	// another look once it is done.
	looking, again bool
}

// restConfirm is how long looks must see no job the text started before a Send the agent has
// shown nothing of is given up on: long enough that a look between two commands of a line
// typed into a shell (sleep 5; sleep 5) is not taken for the end of them.
const restConfirm = 500 * time.Millisecond

// beginSend records that a Send begins typing text into the terminal, after a look at its screen
// and foreground; it returns the Send, for the steps after.
func (t *terminal) beginSend(text string, before []string, fg foreground, now time.Time) *pendingSend {
	t.atRest = time.Time{} // what it prints now may be the Send's work
	t.send = &pendingSend{typed: text, before: before, fg: fg, typing: true, lookedAt: now}
	return t.send
}

// pending reports whether the terminal has not reacted to Send s yet.
func (t *terminal) pending(s *pendingSend) bool { return s != nil && t.send == s }

// entering records the screen of Send s as its Enter is about to be pressed.
func (t *terminal) entering(s *pendingSend, rows []string) {
	if t.pending(s) {
		s.entered = rows
	}
}

// typed records that Send s's last key is in.
func (t *terminal) typed(s *pendingSend, now time.Time) {
	if t.pending(s) {
		s.typing = false
		s.at = now
	}
}

// looked applies a look at the terminal that began at began, during Send s: what its screen
// showed, and whether a job the text started ran. It reports whether a Wait could answer
// differently now.
func (t *terminal) looked(s *pendingSend, sc screen, job bool, began time.Time, reaction time.Duration) bool {
	if !t.pending(s) || began.Before(s.lookedAt) {
		return false // a look at an earlier Send, or overtaken by a later look
	}
	s.lookedAt = began
	// An agent that reports its state reacts by reporting: its screen does not count.
	if !t.reported && !s.showsEchoOnly(sc) {
		t.send = nil
		return true
	}
	wasJob, wasRest := s.job, s.restSince
	s.job = job
	switch {
	case job:
		s.restSince = time.Time{}
	case s.restSince.IsZero() && !s.typing && !began.Before(s.at.Add(reaction)):
		s.restSince = began
	}
	return s.job != wasJob || s.restSince != wasRest || s.givenUp(reaction)
}

// showsEchoOnly reports whether sc shows nothing but the echo of what the Send typed.
func (s *pendingSend) showsEchoOnly(sc screen) bool {
	return echoOnly(s.before, sc.rows, sc.atBottom, s.typed) ||
		s.entered != nil && echoOnly(s.entered, sc.rows, sc.atBottom, "")
}

// givenUp reports whether the Send's reaction window has passed with nothing to show for it: no
// job the text started, as looks over restConfirm after the window saw.
func (s *pendingSend) givenUp(reaction time.Duration) bool {
	return !s.typing && !s.job && !s.restSince.IsZero() &&
		!s.restSince.Before(s.at.Add(reaction)) && s.lookedAt.Sub(s.restSince) >= restConfirm
}

// lookIn says when a Wait on the terminal should next look at it, and ok is false when looking
// cannot help: no Send pending, or a state a Wait waits out anyway.
func (t *terminal) lookIn(now time.Time, reaction time.Duration) (d time.Duration, ok bool) {
	s := t.send
	if s == nil || s.typing || !api.Settled(t.state) || api.Ended(t.state) || s.givenUp(reaction) {
		return 0, false
	}
	end := s.at.Add(reaction)
	switch {
	case now.Before(end):
		return end.Sub(now), true
	case s.lookedAt.Before(end):
		return 0, true
	}
	return max(0, s.lookedAt.Add(restConfirm).Sub(now)), true
}

// look looks at terminal t during its Send s and applies what it sees. It returns once the look
// is applied, or at once when the Send is no longer pending.
func (e *environment) look(ctx context.Context, t *terminal, s *pendingSend) error {
	a := e.app
	a.mu.Lock()
	pending := t.pending(s)
	pane := t.pane
	a.mu.Unlock()
	if !pending {
		return nil
	}
	began := time.Now()
	sc, fg, err := e.glance(ctx, pane)
	if err != nil {
		return err
	}
	// s.fg is set once, before the Send begins: it is read here without the lock.
	job := fg.other(s.fg) && !groupGone(s.fg)
	a.mu.Lock()
	if t.looked(s, sc, job, began, a.cfg.Reaction) {
		a.notifyLocked()
	}
	a.mu.Unlock()
	return nil
}

// lookGap is the least time between two looks that output brings, so that a program that
// redraws without end does not have tmux capture its screen without end.
const lookGap = 50 * time.Millisecond

// lookLocked has the terminal looked at, on a goroutine, while a Send to it waits for its
// reaction: when its output may be one, and when a Send's last key is in. One look at a time;
// output during a look brings another after it. An agent that reports its state reacts by
// reporting: its output brings no look. app.mu must be held.
func (e *environment) lookLocked(t *terminal) {
	s := t.send
	if s == nil || t.dead || t.reported {
		return
	}
	if s.typing || s.looking {
		s.again = true // the Send's own look, once typed, or the next one, sees it
		return
	}
	s.looking = true
	go func() {
		a := e.app
		for {
			a.mu.Lock()
			s.again = false
			a.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
			err := e.look(ctx, t, s)
			cancel()
			a.mu.Lock()
			if err != nil || !s.again || !t.pending(s) {
				s.looking = false
				a.mu.Unlock()
				return
			}
			a.mu.Unlock()
			time.Sleep(lookGap)
		}
	}()
}
