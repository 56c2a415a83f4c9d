package app

import (
	"cmp"
	"sync"
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
	role    api.Role
	session string // the session's name (its lead's "E:N"), "" for a shell outside sessions
	group   string
	lead    int // for a worker: its lead's terminal number

	state    api.State
	exitCode *int
	since    time.Time
	// from says where state came from (api.StateFromReported or api.StateFromScreen; "" is the
	// screen), and message what the agent said with it.
	from    string
	message string

	// reported is set once the agent reported a state itself: from then on its reports are
	// believed, and its output no longer moves it between working and idle, until it hands the
	// terminal back (a lifecycle idle) or a new command starts in its shell.
	reported   bool
	lastOutput time.Time
	// atRest is when the agent last said it is at rest and handed the terminal back (a
	// lifecycle idle: a turn's end told by Codex's notify, an agent's session's end), zero once
	// a Send or another report came after it. Its output within the quiet spell after that is
	// it redrawing its screen at rest (Codex's prompt; the shell's, after the agent), not work.
	atRest time.Time
	// send is the last Send to the terminal while the agent has not reacted to it yet, nil when
	// there is none: a Wait does not count the terminal as settled until the agent has reacted.
	send *pendingSend
	// sendMu makes Sends to the terminal take turns, so that each one's echo is its own. It is
	// held for the whole Send, without app.mu; for a worker spawned with a prompt, from the Spawn
	// until the prompt is typed, so that no Send overtakes it.
	sendMu sync.Mutex
	// prompt is set while a Spawn's prompt waits to be typed into the worker (prompt.go): until
	// then a Wait does not count the worker as settled. The worker's output is signalled on it.
	prompt chan struct{}
	// runs is set when the window runs an agent's command through krad-ade-agents run: the
	// window's process is the command (run --exec became it; in windows of earlier versions, run
	// waits for it), so that an end reported by run (a command that could not start) or by tmux's
	// pane-died hook (krad-ade-agents ended) is the end of the terminal's process.
	runs bool
	// spec is the configured terminal this one was opened for, if any.
	spec string
	// askHash is the hash of the terminal's askpass key (windowMeta.Ask): an Askpass naming the
	// terminal must hold the key. "" for a window a person opened, whose prompts are refused.
	askHash string
	// heard is set once any report came from the terminal: for a worker, run's start or end.
	heard bool
	// settingUp is set while the terminal runs its group's setup, or waits for another
	// terminal's run of it (krad-ade-agents run --setup), before its command: from its open
	// until run says the setup ended. It is working all along, never idle for want of output,
	// and a Spawn's prompt waits for its command.
	settingUp bool

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
	state, since, from, message := t.state, t.since, cmp.Or(t.from, api.StateFromScreen), t.message
	if t.unreachable && !api.Ended(state) {
		state, since, from, message = api.StateUnreachable, t.unreachableSince, api.StateFromScreen, ""
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
		StateFrom:   from,
		Message:     message,
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

// setState moves the terminal to state, as the app reads the terminal (its screen, its process);
// it reports whether anything changed.
func (t *terminal) setState(state api.State, now time.Time) bool {
	return t.set(state, api.StateFromScreen, "", now)
}

// set moves the terminal to state, which came from from, with the agent's message; it reports
// whether anything shown changed. since is when the state began: a new message or source of the
// same state leaves it.
func (t *terminal) set(state api.State, from, message string, now time.Time) bool {
	if t.state == state && cmp.Or(t.from, api.StateFromScreen) == from && t.message == message {
		return false
	}
	if t.state != state {
		t.since = now
	}
	t.state, t.from, t.message = state, from, message
	return true
}

// output records that the terminal printed. An agent that never reported is working while it
// prints, unless it is redrawing its screen at rest: within the quiet spell after it said so,
// with no Send since (its redraw and its word come by two ways, in either order; a Wait that
// woke on the word must not find it working again). Whether the output is a reaction to a Send
// is for a look at the screen to tell.
func (t *terminal) output(now time.Time, spell time.Duration) bool {
	t.lastOutput = now
	if t.dead || t.reported {
		return false
	}
	if !t.atRest.IsZero() && now.Sub(t.atRest) < spell {
		return false
	}
	t.atRest = time.Time{}
	return t.setState(api.StateWorking, now)
}

// quietDue says whether an agent that never reported has printed nothing for the quiet spell, so
// that it is idle, unless a job runs in its shell's foreground (busy); otherwise, how long until
// it should be asked again (0 when its state is not one a quiet spell moves). A terminal whose
// group is being set up is never idle by keeping quiet.
func (t *terminal) quietDue(now time.Time, spell time.Duration) (due bool, again time.Duration) {
	if t.reported || t.dead || t.state == api.StateIdle || t.unreachable || t.settingUp {
		return false, 0
	}
	last := t.lastOutput
	if last.IsZero() || last.Before(t.since) && t.state == api.StateStarting {
		last = t.since
	}
	if left := spell - now.Sub(last); left > 0 {
		return false, left
	}
	return true, 0
}

// quiet moves an agent that never reported to idle once it has printed nothing for the quiet
// spell, no job running in its foreground. It returns whether the state changed, and how long
// until it should be asked again.
func (t *terminal) quiet(now time.Time, spell time.Duration) (changed bool, again time.Duration) {
	due, again := t.quietDue(now, spell)
	if !due {
		return false, again
	}
	return t.setState(api.StateIdle, now), 0
}

// busy records that a job runs in the foreground of the terminal's shell, however long it prints
// nothing: the terminal is working until the job gives the terminal back to its shell.
func (t *terminal) busy(now time.Time) bool {
	if t.reported || t.dead || t.unreachable {
		return false
	}
	return t.setState(api.StateWorking, now)
}

// report applies the agent's own report of its state.
func (t *terminal) report(b *api.ReportBody, now time.Time) bool {
	if t.dead {
		return false
	}
	t.heard = true
	t.atRest = time.Time{}
	message := api.CleanMessage(b.Message)
	if !b.Lifecycle {
		t.send = nil // the agent's own word, whatever it says, is its reaction
	}
	if b.Lifecycle && b.Setup != "" {
		// run's word on the group's setup: running until it is done; failed is run's end.
		t.settingUp = b.Setup == api.SetupRunning
		t.lastOutput = now
		if b.Setup == api.SetupDone {
			return false
		}
	}
	if b.Lifecycle {
		switch b.State {
		case api.StateIdle:
			// The agent is at rest and hands the terminal back: a turn's end told by an agent
			// that tells nothing else (Codex's notify), or the end of an agent that reported its
			// state (its session ended; the shell it ran in lives on). Idle now, as it said, and
			// from here the terminal's output, quiet spells and jobs decide, until it reports
			// again. A turn's end is a reaction to the Send that began it.
			t.reported = false
			t.send = nil
			t.lastOutput = now
			t.atRest = now
			return t.set(api.StateIdle, api.StateFromReported, message, now)
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
			// An end reported by krad-ade-agents run, or by tmux's pane-died hook (ended).
			// When the window runs an agent's command, the terminal's process has ended;
			// otherwise the shell run ran in lives on, and the end is believed until the
			// terminal reports again.
			t.reported = true
			t.exitCode = b.ExitCode
			t.dead = t.runs
			t.send = nil
			return t.setState(b.State, now)
		}
	}
	t.reported = true
	if b.State == api.StateDone || b.State == api.StateFailed {
		t.exitCode = b.ExitCode
	}
	return t.set(b.State, api.StateFromReported, message, now)
}

// exited records that the terminal's process ended with status.
func (t *terminal) exited(status int, now time.Time) bool {
	if t.state == api.StateClosed {
		return false
	}
	t.dead = true
	code := status
	t.exitCode = &code
	t.send = nil
	if status == 0 {
		return t.setState(api.StateDone, now)
	}
	return t.setState(api.StateFailed, now)
}

// closed records that the terminal's window is gone.
func (t *terminal) closed(now time.Time) bool {
	t.dead = true
	t.send = nil
	return t.setState(api.StateClosed, now)
}

// settled reports whether a Wait may return on the terminal now: it is in a settled state, has no
// prompt still to be typed, and no Send it has not reacted to yet.
func (t *terminal) settled(reaction time.Duration) bool {
	if api.Ended(t.state) {
		return true
	}
	if t.unreachable || !api.Settled(t.state) || t.prompt != nil {
		return false
	}
	return t.send == nil || t.send.givenUp(reaction)
}
