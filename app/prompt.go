package app

import (
	"context"
	"fmt"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/tmux"
)

// A Spawn's prompt is typed into its worker, never given to it as an argument: every user of a
// host reads every process's arguments there (ps, /proc/PID/cmdline). The keys go to tmux as a
// Send's do, as a command on the control client's input (over SSH, the session's stdin), and tmux
// writes them to the worker's terminal: no process carries the prompt in its arguments or its
// environment, no window's name or option holds it, and the app keeps it in memory only, until it
// is typed, and logs nothing of it.

// promptReady is how long after its Spawn a prompt waits for the worker to show something before
// it is typed all the same. A program that reads without printing first (cat, a script's read,
// Python's input()) shows nothing however long it waits; the terminal keeps keys typed before a
// program reads them, so for such a program the wait costs time and nothing else. It is for the
// TUIs that switch their terminal to raw mode as they start and can lose what was typed before:
// they draw as soon as they run, agent TUIs within a second or two. It stays well below the bus's
// 10 s for a Send, which a Send made right after the Spawn waits out behind the prompt.
const promptReady = 5 * time.Second

// promptTyping bounds typing a prompt once the worker is ready: a Send's looks and keys.
const promptTyping = 20 * time.Second

// typePrompt types a Spawn's prompt into worker t, with Enter, as a Send does (a Wait then waits
// for t's reaction to it), once t shows that it is ready to read: once its screen shows anything
// (an agent TUI has drawn itself, a shell has printed its prompt), or at ready if it shows
// nothing by then. It types nothing once t has ended or is gone. When typing fails because the
// way to tmux broke (the environment went down), it waits up to promptTyping for the environment
// to come back and tries once more; a prompt that could not be typed all the same is told to
// subscribers (an AppEvent naming the terminal), so that the lead does not take the worker for
// one that got its task. Then it clears t.prompt, which held every Wait on t meanwhile. The
// caller holds t.sendMu for it.
func (e *environment) typePrompt(t *terminal, text string, ready time.Time) {
	a := e.app
	defer func() {
		a.mu.Lock()
		t.prompt = nil
		a.notifyLocked()
		a.mu.Unlock()
	}()
	if !e.awaitSetUp(t) {
		return
	}
	if ready.Before(time.Now()) {
		ready = time.Now().Add(promptReady) // from the end of a setup: its command starts now
	}
	if !e.awaitDrawn(t, ready) {
		return
	}
	var err error
	for try := range 2 {
		if try > 0 && !e.awaitUp(t, promptTyping) {
			break
		}
		a.mu.Lock()
		c := e.client
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), promptTyping)
		err = e.typeText(ctx, t, text, true)
		cancel()
		if err == nil {
			return
		}
		a.mu.Lock()
		gone, same := t.dead || e.terminals[t.number] != t, e.up && c != nil && e.client == c
		a.mu.Unlock()
		if gone {
			return
		}
		if same {
			break // tmux refused with the environment up: another try would fare no better
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.dead || e.terminals[t.number] != t {
		return
	}
	// err is the app's or tmux's message, which never holds the keys typed.
	a.log.Warn("a spawned worker's prompt could not be typed", "environment", e.name, "terminal", t.number, "err", err)
	a.publishAppLocked(api.AppEvent{Kind: api.PromptNotTyped, Environment: e.name,
		Message: fmt.Sprintf("prompt not typed into %s: %s; send it with krad send %d", t.id(), termsafe.Shorten(err.Error(), 300), t.number)})
}

// awaitSetUp waits while t runs its group's setup (or waits for another terminal's run of it):
// a prompt is for its command, which starts after. It returns false once t has ended or is gone
// (a setup that failed ends it).
func (e *environment) awaitSetUp(t *terminal) bool {
	a := e.app
	for {
		a.mu.Lock()
		gone := t.dead || e.terminals[t.number] != t
		setting, changed := t.settingUp, a.changed
		a.mu.Unlock()
		switch {
		case gone:
			return false
		case !setting:
			return true
		}
		<-changed
	}
}

// awaitUp waits up to d for t's environment to be up, and reports whether it is, with t still
// there and running.
func (e *environment) awaitUp(t *terminal, d time.Duration) bool {
	a := e.app
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		a.mu.Lock()
		gone := t.dead || e.terminals[t.number] != t
		up := e.up && e.client != nil
		changed := a.changed
		a.mu.Unlock()
		switch {
		case gone:
			return false
		case up:
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		}
	}
}

// awaitDrawn waits until terminal t's screen shows something, looking at it at first and after
// its output. It returns false once t has ended or is gone, and true at ready whatever t shows.
func (e *environment) awaitDrawn(t *terminal, ready time.Time) bool {
	a := e.app
	timer := time.NewTimer(time.Until(ready))
	defer timer.Stop()
	// The first look is for output that came before the app knew t's pane, so was not signalled.
	look, late := true, false
	for {
		a.mu.Lock()
		gone := t.dead || e.terminals[t.number] != t
		pane, output, changed := t.pane, t.prompt, a.changed
		a.mu.Unlock()
		switch {
		case gone:
			return false
		case late:
			return true
		}
		if look {
			ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
			drawn, err := e.drawn(ctx, pane)
			cancel()
			if err == nil && drawn {
				return true
			}
			look = false
		}
		select {
		case <-output:
			// A program draws in bursts: a look after each, and at most one a lookGap.
			time.Sleep(lookGap)
			look = true
		case <-changed: // t's end, perhaps
		case <-timer.C:
			late = true
		}
	}
}

// drawn reports whether a pane shows anything yet: its cursor has left the top left corner, where
// a new pane has it, or its screen holds a character. Output that shows nothing, such as the title
// krad-ade-agents run sets before it starts its command, does not count.
func (e *environment) drawn(ctx context.Context, pane tmux.PaneID) (bool, error) {
	sc, _, err := e.glance(ctx, pane)
	if err != nil {
		return false, err
	}
	return !sc.home || squeeze(sc.rows...) != "", nil
}
