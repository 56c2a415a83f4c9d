package app

import (
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
)

// terminal is one tmux window of an environment, as the app tracks it. Its fields are guarded by
// the App's mutex.
type terminal struct {
	env     string
	number  int
	window  tmux.WindowID // 0 until the window exists (tmux numbers from 0, but the session's
	pane    tmux.PaneID   // first window is the holder, so no terminal ever has @0 with %0)
	title   string
	role    string
	session string // the session's name (its lead's "E:N"), "" for a shell outside sessions
	group   string
	lead    int // for a worker: its lead's terminal number

	state    string
	exitCode *int
	since    time.Time

	// reported is set once the agent reported a state itself: from then on its reports are
	// believed, and its output no longer moves it between working and idle.
	reported   bool
	lastOutput time.Time
	// sentAt is when a Send finished typing into the terminal, if the agent has not reacted to
	// it yet: a Wait does not count the terminal as settled until it has, or until the reaction
	// window has passed. sending is set while a Send types. Output before sentAt plus the echo
	// window is the terminal echoing what was typed, not a reaction.
	sentAt  time.Time
	sending bool
	// runs is set when the window's process is krad-ade-agents run: its end report is the end
	// of the terminal's process.
	runs bool
	// spec is the configured terminal this one was opened for, if any.
	spec string
	// heard is set once any report came from the terminal: for a worker, run's start or end.
	heard bool

	// dead is set once the terminal's process has exited or the terminal is closed: nothing
	// but closing changes it after that.
	dead bool
	// collecting is set while the app gets the exit code of a dead pane from tmux.
	collecting bool
	// unreachable is set, since unreachableSince, while the terminal's environment is down: the
	// app hears nothing from it, so its state is not known and is shown as unreachable, unless
	// it had ended. state keeps the last state known, which comes back with the environment.
	unreachable      bool
	unreachableSince time.Time

	quietTimer *time.Timer
}

func (t *terminal) agent() api.Agent {
	state, since := t.state, t.since
	if t.unreachable && !api.Ended(state) {
		state, since = api.StateUnreachable, t.unreachableSince
	}
	return api.Agent{
		Environment: t.env,
		Terminal:    t.number,
		Title:       t.title,
		Role:        t.role,
		State:       state,
		Session:     t.session,
		Group:       t.group,
		ExitCode:    t.exitCode,
		Since:       since,
	}
}

// lost records that the terminal's environment went down; it reports whether the agent as shown
// changed.
func (t *terminal) lost(now time.Time) bool {
	if t.unreachable {
		return false
	}
	t.unreachable, t.unreachableSince = true, now
	return !api.Ended(t.state)
}

// found records that the terminal's environment is back; it reports whether the agent as shown
// changed. An agent that never reported gets a new quiet spell from now: the output it may have
// printed meanwhile was not heard.
func (t *terminal) found(now time.Time) bool {
	if !t.unreachable {
		return false
	}
	t.unreachable = false
	t.lastOutput = now
	return !api.Ended(t.state)
}

// attached reports whether the terminal has its window yet.
func (t *terminal) attached() bool { return t.window != 0 || t.pane != 0 }

func (t *terminal) id() api.TerminalID { return api.TerminalID{Environment: t.env, Terminal: t.number} }

// setState moves the terminal to state; it reports whether anything changed.
func (t *terminal) setState(state string, now time.Time) bool {
	if t.state == state {
		return false
	}
	t.state = state
	t.since = now
	return true
}

// echoWindow is how long after a Send's last key the terminal's output is taken for the echo of
// what was typed rather than the agent's reaction.
const echoWindow = 250 * time.Millisecond

// output records that the terminal printed. An agent that never reported is working while it
// prints. Any output is the agent's reaction to a pending Send.
func (t *terminal) output(now time.Time) bool {
	t.lastOutput = now
	if t.dead {
		return false
	}
	if !t.sending && !t.sentAt.IsZero() && now.Sub(t.sentAt) >= echoWindow {
		t.sentAt = time.Time{} // the agent reacted
	}
	if t.reported {
		return false
	}
	return t.setState(api.StateWorking, now)
}

// quiet moves an agent that never reported to idle once it has printed nothing for the quiet
// spell. It returns whether the state changed, and how long until it should be asked again.
func (t *terminal) quiet(now time.Time, spell time.Duration) (changed bool, again time.Duration) {
	if t.reported || t.dead || t.state == api.StateIdle || t.unreachable {
		return false, 0
	}
	last := t.lastOutput
	if last.IsZero() || last.Before(t.since) && t.state == api.StateStarting {
		last = t.since
	}
	if left := spell - now.Sub(last); left > 0 {
		return false, left
	}
	return t.setState(api.StateIdle, now), 0
}

// report applies the agent's own report of its state.
func (t *terminal) report(b *api.ReportBody, now time.Time) bool {
	if t.dead {
		return false
	}
	t.heard = true
	if b.State == api.StateWorking && !b.Lifecycle {
		t.sentAt = time.Time{}
	}
	if b.Lifecycle {
		switch b.State {
		case api.StateWorking:
			// A start. The agent's output decides working and idle from here, unless the agent
			// has already reported itself (its first report can beat run's, which is sent as the
			// agent starts). After an end that run reported, it is a new command in a shell
			// that lives on: heard anew.
			if t.state == api.StateDone || t.state == api.StateFailed {
				t.reported = false
			}
			if t.reported {
				return false
			}
			t.lastOutput = now
			return t.setState(api.StateWorking, now)
		case api.StateDone, api.StateFailed:
			// An end reported by krad-ade-agents run. When run is the window's process, the
			// terminal's process has ended; otherwise the shell it ran in lives on, and the end
			// is believed until the terminal reports again.
			t.reported = true
			t.exitCode = b.ExitCode
			t.dead = t.runs
			t.sentAt = time.Time{}
			return t.setState(b.State, now)
		}
	}
	t.reported = true
	if b.State == api.StateDone || b.State == api.StateFailed {
		t.exitCode = b.ExitCode
	}
	return t.setState(b.State, now)
}

// exited records that the terminal's process ended with status.
func (t *terminal) exited(status int, now time.Time) bool {
	if t.state == api.StateClosed {
		return false
	}
	t.dead = true
	code := status
	t.exitCode = &code
	t.sentAt = time.Time{}
	if status == 0 {
		return t.setState(api.StateDone, now)
	}
	return t.setState(api.StateFailed, now)
}

// closed records that the terminal's window is gone.
func (t *terminal) closed(now time.Time) bool {
	t.dead = true
	t.sentAt = time.Time{}
	return t.setState(api.StateClosed, now)
}

// settled reports whether a Wait may return on the terminal now: it is in a settled state and
// has no Send it has not reacted to yet (within the reaction window).
func (t *terminal) settled(now time.Time, reaction time.Duration) bool {
	if api.Ended(t.state) {
		return true
	}
	if t.unreachable || !api.Settled(t.state) {
		return false
	}
	if t.sending {
		return false
	}
	return t.sentAt.IsZero() || now.Sub(t.sentAt) >= reaction
}
