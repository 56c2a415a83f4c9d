package app

import (
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
	// runs is set when the window's process is krad-ade-agents run: its end report is the end
	// of the terminal's process.
	runs bool
	// spec is the configured terminal this one was opened for, if any.
	spec string
	// askHash is the hash of the terminal's askpass key (windowMeta.Ask): an Askpass naming the
	// terminal must hold the key. "" for a window a person opened, whose prompts are refused.
	askHash string
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

// output records that the terminal printed. An agent that never reported is working while it
// prints. Whether the output is a reaction to a Send is for a look at the screen to tell.
func (t *terminal) output(now time.Time) bool {
	t.lastOutput = now
	if t.dead || t.reported {
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
	if !b.Lifecycle {
		t.send = nil // the agent's own word, whatever it says, is its reaction
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
			t.send = nil
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

// foreground says which process group is in a terminal's foreground: its id where the app can see
// the host's processes (this computer), else the name of its leader's command, as tmux tells it.
type foreground struct {
	pgid int
	name string
}

// other reports whether f is another process group than g.
func (f foreground) other(g foreground) bool {
	if f.pgid > 0 && g.pgid > 0 {
		return f.pgid != g.pgid
	}
	return f.name != g.name
}

// screen is what a look saw of a terminal.
type screen struct {
	rows     []string
	atBottom bool // the cursor is on the last row
	home     bool // the cursor is in the top left corner, where a new pane has it
}

// restConfirm is how long looks must see no job the text started before a Send the agent has
// shown nothing of is given up on: long enough that a look between two commands of a line
// typed into a shell (sleep 5; sleep 5) is not taken for the end of them.
const restConfirm = 500 * time.Millisecond

// beginSend records that a Send begins typing text into the terminal, after a look at its screen
// and foreground; it returns the Send, for the steps after.
func (t *terminal) beginSend(text string, before []string, fg foreground, now time.Time) *pendingSend {
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
