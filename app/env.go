package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/keyedsem"
	"github.com/krad-ade/krad/tmux"
)

// HolderName is the window tmux needs to create a session before the app opens its terminals in
// it; the app closes it once the first terminal is open. It never gets a number.
const HolderName = "krad-ade-starting"

// HolderCommand is what the holder window runs: nothing, for as long as it is there.
var HolderCommand = []string{"sleep", "2147483647"}

// environment is one environment: a tmux session on a tmux server, driven in control mode.
type environment struct {
	app   *App
	name  string
	host  Host
	ssh   string // the ssh host as config.toml names it (Remote.SSH); "" for this computer
	specs []TerminalSpec

	ready     chan struct{}
	readyOnce sync.Once

	// stop ends the environment's run and done is closed when it has ended; both set once, by
	// App.startLocked, under app.mu.
	stop context.CancelFunc
	done chan struct{}

	// createMu serialises opening windows with numbering the windows tmux reports, so that a
	// window the app opens is never also taken for one a person opened.
	createMu sync.Mutex

	// Guarded by app.mu.
	up        bool
	downMsg   string // the last EnvironmentDown message, so that retries do not repeat it
	client    *tmux.Client
	terminals map[int]*terminal
	byPane    map[tmux.PaneID]*terminal
	byWindow  map[tmux.WindowID]*terminal
	next      int
	started   bool // the configured terminals were opened in this run
	full      bool // the environment has MaxTerminals terminals, and subscribers were told

	work *windowWork // what client's window notifications left to do; nil with no client

	warnings warnLimiter // of what the environment's tmux sent; it has its own mutex

	groupLocks *keyedsem.Set            // a lock per group name in use (groups.go); its own mutex
	retiring   map[string]chan struct{} // groups retiring now, closed when done; under app.mu
}

func newEnvironment(a *App, name string, host Host, specs []TerminalSpec) *environment {
	return &environment{
		app:        a,
		name:       name,
		host:       host,
		specs:      specs,
		ready:      make(chan struct{}),
		terminals:  map[int]*terminal{},
		byPane:     map[tmux.PaneID]*terminal{},
		byWindow:   map[tmux.WindowID]*terminal{},
		next:       1,
		groupLocks: keyedsem.New(1),
	}
}

// run keeps the environment up until ctx is done, bringing its tmux session back with capped,
// jittered backoff whenever it goes away.
func (e *environment) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		began := time.Now()
		err := e.session(ctx)
		if l, ok := e.host.(LinkedHost); ok && (errors.Is(err, tmux.ErrNoAnswer) || errors.Is(err, io.ErrUnexpectedEOF)) && ctx.Err() == nil {
			err = l.Stalled(ctx, err)
		}
		e.down(err)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		e.app.log.Warn("environment down", "environment", e.name, "err", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// session is one life of the environment's control client: attach (creating the session if need
// be), adopt the windows that are there, open the configured terminals, then follow tmux's
// notifications until it goes away or ctx is done.
func (e *environment) session(ctx context.Context) error {
	c, err := e.host.Attach(ctx, e.name, e.onNote)
	if err != nil {
		return err
	}
	defer c.Close()
	// From here on a tmux that stops answering ends the client, and with it this session: the
	// commands below, and the wait for the end.
	c.Watch(e.app.cfg.TmuxTimeout)
	a := e.app
	e.follow(c)

	if err := e.setup(ctx, c); err != nil {
		return err
	}
	held, err := e.adopt(ctx, c)
	if err != nil {
		return err
	}
	// Groups whose last terminal closed while the app was away retire now, beside the rest.
	go e.retireOrphans(ctx, held)
	a.mu.Lock()
	first := !e.started
	e.started = true
	a.mu.Unlock()
	if first {
		a.mu.Lock()
		have := map[string]int{} // configured terminals adopted from an earlier run, by spec
		for _, t := range e.terminals {
			if t.spec != "" {
				have[t.spec]++
			}
		}
		a.mu.Unlock()
		for _, s := range e.specs {
			key := s.key()
			if have[key] > 0 {
				have[key]--
				continue
			}
			ws, err := a.windowSpec(s)
			if err != nil { // an agent that config.toml named after the app started
				e.warn("configured terminal not opened", "title", s.Title, "agent", s.Agent, "err", err)
				continue
			}
			if _, err := e.open(ctx, ws); err != nil {
				if errors.Is(err, errTooManyTerminals) { // the host's windows took the room: opening again will not help
					e.warn("configured terminal not opened", "title", s.Title, "err", err)
					continue
				}
				return fmt.Errorf("open terminal %q: %w", s.Title, err)
			}
		}
	}
	a.mu.Lock()
	empty := len(e.terminals) == 0
	a.mu.Unlock()
	if empty {
		if _, err := e.open(ctx, windowSpec{title: "shell", role: api.RoleShell}); err != nil {
			return fmt.Errorf("open a shell: %w", err)
		}
	}
	// The holder served its purpose once a terminal is open.
	_, _ = c.Command(ctx, "kill-window", "-t", e.name+":"+HolderName)

	a.mu.Lock()
	e.up = true
	e.downMsg = ""
	now := time.Now()
	for _, t := range e.terminals {
		if t.found(now) {
			a.publishLocked(api.AgentChanged, t)
		}
		e.armQuietLocked(t)
	}
	a.publishAppLocked(api.AppEvent{Kind: api.EnvironmentUp, Environment: e.name})
	a.mu.Unlock()
	e.readyOnce.Do(func() { close(e.ready) })
	a.log.Info("environment up", "environment", e.name, "attach", e.host.AttachHint(e.name))

	select {
	case <-c.Done():
		if err := c.Err(); errors.Is(err, tmux.ErrNoAnswer) {
			return err
		}
		return fmt.Errorf("tmux went away: %w", c.Err())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setup makes the session fit for the app (setupCommands), and keeps a dead pane's screen as its
// process left it.
func (e *environment) setup(ctx context.Context, c *tmux.Client) error {
	for _, args := range setupCommands(e.name, e.host.Vars()) {
		if _, err := c.Command(ctx, args...); err != nil {
			return fmt.Errorf("tmux %s: %w", args[0], err)
		}
	}
	// tmux writes "Pane is dead (…)" on the last line of a dead pane's screen after a line feed,
	// which scrolls its first line away: Read would lose the first line the process printed
	// (often the one that says why it failed). An empty remain-on-exit-format writes nothing, so
	// the screen stays as the process left it; the terminal's state and exit code tell how it
	// ended. tmux before 3.3 has no such option, and keeps its line.
	if _, err := c.Command(ctx, "set-option", "-gw", "remain-on-exit-format", ""); err != nil {
		var ce *tmux.CommandError
		if !errors.As(err, &ce) {
			return fmt.Errorf("tmux set-option: %w", err)
		}
		e.warn("tmux has no remain-on-exit-format (tmux 3.3 has): Read of an ended agent may miss its first line", "err", err)
	}
	// The end of an agent's process, told at once (endedHookCommand). Without the hook, the
	// krad-dead subscription tells it all the same, up to a second later.
	if _, err := c.Command(ctx, "set-hook", "-g", endedHook, endedHookCommand(e.host.Vars().companion())); err != nil {
		var ce *tmux.CommandError
		if !errors.As(err, &ce) {
			return fmt.Errorf("tmux set-hook: %w", err)
		}
		e.warn("tmux refused the app's pane-died hook: the end of an agent is known up to a second later", "err", err)
	}
	return nil
}

// adopt takes over the windows the session already has: the app's own from an earlier run, with
// their numbers, and any a person opened while the app was away, as new shells. It returns the
// groups of the app's windows, every one it read (those it had no room for, and those whose
// process ended, included): a group of one of them is not to retire.
func (e *environment) adopt(ctx context.Context, c *tmux.Client) (held map[string]bool, err error) {
	e.createMu.Lock()
	defer e.createMu.Unlock()
	lines, err := c.Command(ctx, "list-windows", "-t", e.name, "-F", windowLineFormat)
	if err != nil {
		return nil, fmt.Errorf("list windows: %w", err)
	}
	held = map[string]bool{}
	next, _ := c.Command(ctx, "show-options", "-qv", "-t", e.name, nextOption)
	a := e.app
	var strangers []tmux.WindowID
	seen := map[tmux.WindowID]bool{}
	// What the app cannot read or refuses is summed up in one warning each, whatever the number
	// of lines: the host decides that number.
	var unreadable, refused, badStatus problems
	for _, line := range lines {
		w, err := parseWindowLine(line, e.name)
		if err != nil {
			unreadable.add(err)
			continue
		}
		if w.holder {
			continue
		}
		if w.metaErr != nil {
			refused.add(w.metaErr)
		}
		if w.statusErr != nil {
			badStatus.add(w.statusErr)
		}
		if w.meta == nil {
			strangers = append(strangers, w.window)
			continue
		}
		if w.meta.Group != "" {
			held[w.meta.Group] = true
		}
		a.mu.Lock()
		seen[w.window] = true
		if t, known := e.terminals[w.meta.Terminal]; known && t.window == w.window {
			// Kept through a broken connection: it may have ended meanwhile.
			if w.end.dead {
				e.endedLocked(c, t, w.end.code, w.end.known)
			}
		} else if !known && e.roomLocked() {
			t := e.registerLocked(*w.meta)
			e.attachLocked(t, w.window, w.pane)
			a.publishLocked(api.AgentAdded, t)
			if w.end.dead {
				e.endedLocked(c, t, w.end.code, w.end.known)
			}
		}
		a.mu.Unlock()
	}
	unreadable.warn(e, "tmux listed windows the app cannot read")
	refused.warn(e, "windows whose @krad the app did not write are taken for windows a person opened")
	badStatus.warn(e, "tmux gave dead panes an exit status out of range: their exit code is -1")
	// Terminals kept through a broken connection whose windows closed meanwhile.
	a.mu.Lock()
	for _, t := range e.terminals {
		if t.attached() && !seen[t.window] {
			e.removeLocked(t)
		}
	}
	a.mu.Unlock()
	if len(next) == 1 && next[0] != "" {
		if n, err := parseNext(next[0]); err != nil {
			e.warn("the session's next terminal number is out of range: left alone", "err", err)
		} else {
			a.mu.Lock()
			e.next = max(e.next, n)
			a.mu.Unlock()
		}
	}
	// One listing of where the windows are serves the numbering and the placing below.
	ws, err := e.windows(ctx, c)
	if err != nil {
		return nil, err
	}
	var unnumbered problems
	for _, w := range strangers {
		if err := e.numberCreating(ctx, c, ws, w); errors.Is(err, errTooManyTerminals) {
			break
		} else if err != nil {
			unnumbered.add(fmt.Errorf("window %s: %w", w, err))
		}
	}
	unnumbered.warn(e, "could not number windows")
	// Put each terminal at the window index of its number, where it is not (an earlier
	// version's windows, windows a person moved).
	var unplaced problems
	for _, w := range ws.order {
		a.mu.Lock()
		t := e.byWindow[w]
		a.mu.Unlock()
		if t != nil && t.number != ws.index[w] {
			if err := e.placeCreating(ctx, c, ws, w, t.number); err != nil {
				unplaced.add(fmt.Errorf("terminal %d: %w", t.number, err))
			}
		}
	}
	unplaced.warn(e, "could not move windows to their terminals' numbers")
	return held, nil
}

// endedLocked records that a terminal's pane died, with the exit code tmux told if it knew it
// (known). When it did not, the code is collected on a goroutine first: a terminal is never
// reported ended without the code its process ended with. app.mu must be held.
func (e *environment) endedLocked(c *tmux.Client, t *terminal, code int, known bool) {
	switch {
	case known:
		t.collecting = false
		if t.exited(code, time.Now()) {
			e.app.publishLocked(api.AgentChanged, t)
		}
	case !t.collecting && t.state != api.StateClosed:
		t.collecting = true
		go e.collect(c, t, t.pane)
	}
}

// collectTries bounds how often collect asks tmux to collect a dead pane's process.
const collectTries = 30

// collect gets the exit code of a terminal whose pane died before tmux collected its process.
// tmux built with libutempter (Debian's is) misses the SIGCHLD of a pane's process that ends
// while utempter's own handler is in, which it is as tmux closes a pane's pty: the process stays
// a zombie, and the pane dead with no status, until another child of tmux ends. A format job
// that ends at once (#(true), started at most once a second) is such a child: on its SIGCHLD
// tmux collects every child that has ended. collect starts one, then asks for the status, until
// tmux knows it.
func (e *environment) collect(c *tmux.Client, t *terminal, pane tmux.PaneID) {
	a := e.app
	for try := range collectTries {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Command(ctx, "display-message", "-p", "#(true)")
		var dead, known bool
		var code int
		if err == nil {
			time.Sleep(time.Duration(min(try+1, 10)) * 100 * time.Millisecond)
			dead, code, known, err = e.paneDead(ctx, c, pane)
		}
		cancel()
		if err != nil || known || !dead {
			// Known, or respawned; or the connection to tmux broke, and the next attach lists
			// the window again.
			a.mu.Lock()
			if known {
				e.endedLocked(c, t, code, true)
			} else {
				t.collecting = false
			}
			a.mu.Unlock()
			return
		}
	}
	e.warn("tmux did not collect a dead pane's process: its exit code is unknown", "terminal", t.number)
	a.mu.Lock()
	e.endedLocked(c, t, -1, true)
	a.mu.Unlock()
}

// registerLocked records a terminal under its number; attachLocked gives it its window. app.mu
// must be held.
func (e *environment) registerLocked(m windowMeta) *terminal {
	now := time.Now()
	t := &terminal{
		env:     e.name,
		number:  m.Terminal,
		title:   m.Title,
		role:    m.Role,
		session: m.Session,
		group:   m.Group,
		lead:    m.Lead,
		runs:    m.Runs,
		spec:    m.Spec,
		askHash: m.Ask,
		state:   api.StateStarting,
		since:   now,
	}
	e.terminals[t.number] = t
	e.next = max(e.next, t.number+1)
	e.armQuietLocked(t)
	return t
}

// attachLocked gives a terminal its window and pane. app.mu must be held.
func (e *environment) attachLocked(t *terminal, w tmux.WindowID, p tmux.PaneID) {
	t.window, t.pane = w, p
	e.byPane[p] = t
	e.byWindow[w] = t
}

// windowSpec is the window of a configured terminal, and of a lead named in the app's face: its
// command, or its agent profile's (a.profileArgv, as a Spawn's), or the user's shell.
func (a *App) windowSpec(s TerminalSpec) (windowSpec, error) {
	spec := windowSpec{title: s.Title, dir: s.Dir, role: api.RoleShell, spec: s.key()}
	switch {
	case s.Agent != "" && s.Command != "":
		return windowSpec{}, api.Errorf(api.CodeBadRequest, "a terminal runs a command or an agent, not both")
	case s.Agent != "":
		argv, _, err := a.profileArgv(s.Agent, "")
		if err != nil {
			return windowSpec{}, err
		}
		spec.argv = argv
	case s.Command != "":
		spec.argv = []string{"sh", "-c", s.Command}
	}
	if s.Lead {
		spec.role = api.RoleLead
	}
	if spec.title == "" {
		spec.title = cmp.Or(s.Agent, api.ShellTitle(s.Command), "shell")
	}
	return spec, nil
}

// windowSpec is a terminal to open.
type windowSpec struct {
	title   string
	dir     string
	role    api.Role
	session string
	group   string
	lead    int
	argv    []string  // the agent's command; empty for the user's shell
	spec    string    // TerminalSpec.key of a configured terminal
	prompt  bool      // a Spawn's prompt is to be typed into it (typePrompt)
	port    int       // the first of its group's ports (KRAD_ADE_PORT); 0 for none
	askKey  api.Token // the terminal's askpass key (api.VarAskpassKey); zero for none
	// setup: its group's setup is not done yet: krad-ade-agents run runs it (or waits for it)
	// before the command, and the terminal is setting up until it says it ended.
	setup bool
}

// open opens a terminal: a new tmux window with the KRAD_ADE_* variables, running the command
// through krad-ade-agents (which reports its start and end), or the user's shell. For a spec
// with a prompt, the terminal it returns has its sendMu held, for typePrompt.
//
// The terminal is registered under its number before its window exists, so that the first
// thing its process does, a report through the bus, finds it; its window and pane are filled in
// once tmux has made them, and a process that died meanwhile is noticed by asking tmux.
func (e *environment) open(ctx context.Context, s windowSpec) (*terminal, error) {
	// The terminal's askpass key goes to its window's environment alone; its @krad keeps the
	// hash.
	key, askHash, err := newAskKey()
	if err != nil {
		return nil, err
	}
	s.askKey = key
	e.createMu.Lock()
	defer e.createMu.Unlock()
	a := e.app
	a.mu.Lock()
	c := e.client
	if c == nil {
		a.mu.Unlock()
		return nil, api.Errorf(api.CodeUnavailable, "environment %s is down", e.name).WithReason(api.ReasonEnvironmentDown)
	}
	if !e.roomLocked() {
		a.mu.Unlock()
		return nil, e.limitError()
	}
	n := e.next
	if n > MaxTerminalNumber {
		a.mu.Unlock()
		return nil, api.Errorf(api.CodeConflict, "environment %s: %v", e.name, errNoTerminalNumber)
	}
	e.next++
	id := api.TerminalID{Environment: e.name, Terminal: n}
	if s.role == api.RoleLead {
		s.session = id.String()
	}
	meta := windowMeta{Terminal: n, Title: s.title, Role: s.role, Session: s.session, Group: s.group, Lead: s.lead, Runs: len(s.argv) > 0 || s.setup, Spec: s.spec}
	meta.Ask = askHash
	t := e.registerLocked(meta)
	t.settingUp = s.setup
	if s.prompt {
		t.prompt = make(chan struct{}, 1)
		// Held until the prompt is typed (typePrompt), taken before anyone can know t, so that
		// no Send gets in first.
		t.sendMu.Lock()
	}
	a.publishLocked(api.AgentAdded, t)
	a.mu.Unlock()

	w, p, err := e.newWindowCreating(ctx, c, id, s)
	if err == nil {
		if err = e.mark(ctx, c, w, id, meta); err != nil {
			// Closed while e.createMu is held, before anything can take it for a window a
			// person opened: a client that left mid-open leaves no window behind.
			if _, kerr := c.Command(context.WithoutCancel(ctx), "kill-window", "-t", w.String()); kerr != nil {
				e.warn("could not close the window of a terminal that failed to open", "terminal", n, "err", kerr)
			}
		}
	}
	a.mu.Lock()
	switch {
	case err != nil:
		if e.terminals[n] == t {
			e.removeLocked(t)
		}
		a.mu.Unlock()
		if s.prompt {
			t.sendMu.Unlock()
		}
		return nil, err
	case e.terminals[n] != t:
		a.mu.Unlock()
		if s.prompt {
			t.sendMu.Unlock()
		}
		return nil, api.Errorf(api.CodeConflict, "terminal %s closed as it opened", id)
	}
	e.attachLocked(t, w, p)
	a.mu.Unlock()
	// A process that ended before its pane was known to the app left no notification the app
	// could match: ask tmux.
	if dead, code, known, err := e.paneDead(ctx, c, p); err != nil {
		e.warn("could not learn whether a new terminal's process is alive", "terminal", n, "err", err)
	} else if dead {
		a.mu.Lock()
		e.endedLocked(c, t, code, known)
		a.mu.Unlock()
	}
	return t, nil
}

// newWindowCreating asks tmux for the terminal's window, at the window index of its number.
// e.createMu must be held.
func (e *environment) newWindowCreating(ctx context.Context, c *tmux.Client, id api.TerminalID, s windowSpec) (tmux.WindowID, tmux.PaneID, error) {
	args := newWindowArgs(e.name, id, s, e.host.Vars())
	var out []string
	var err error
	for try := 0; ; try++ {
		var layout *sessionWindows
		if layout, err = e.windows(ctx, c); err != nil {
			return 0, 0, err
		}
		if err = e.freeIndexCreating(ctx, c, layout, id.Terminal); err != nil {
			return 0, 0, err
		}
		// A window a person opens may take the index between the two commands: try again.
		// The answer is awaited even when ctx ends meanwhile (the client's watch bounds how long
		// tmux may keep silent), since tmux may have made the window: open closes it then.
		out, err = c.Command(context.WithoutCancel(ctx), args...)
		var ce *tmux.CommandError
		if err == nil || try == 2 || !errors.As(err, &ce) {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("tmux new-window: %w", err)
	}
	return parseNewWindow(out)
}

// numberCreating gives a window a person opened a number, as a shell, and moves it to the window
// index of its number. ws is where the session's windows are; it is kept up to date. e.createMu
// must be held (app.mu must not be: numberCreating takes it).
func (e *environment) numberCreating(ctx context.Context, c *tmux.Client, ws *sessionWindows, w tmux.WindowID) error {
	// Only the holders of e.createMu add terminals: the room there is now stays.
	a := e.app
	a.mu.Lock()
	room := e.roomLocked()
	a.mu.Unlock()
	if !room {
		return errTooManyTerminals
	}
	out, err := c.Command(ctx, "display-message", "-p", "-t", w.String(), strangerFormat)
	if err != nil {
		return err
	}
	p, holder, name, err := parseStranger(out)
	if holder {
		return nil
	}
	if err != nil {
		return err
	}
	a.mu.Lock()
	n := e.next
	if n > MaxTerminalNumber {
		a.mu.Unlock()
		return errNoTerminalNumber
	}
	e.next++
	a.mu.Unlock()
	id := api.TerminalID{Environment: e.name, Terminal: n}
	// A window opened with prefix c is named after the companion that starts its shell
	// (krad-ade-agents shell) until tmux renames it after the shell: it is a shell. tmux then
	// shows the title the app lists, and keeps it (rename-window ends tmux's renaming of it).
	title := api.CleanTitle(name)
	if title == "" || title == path.Base(e.host.Vars().companion()) {
		title = "shell"
	}
	meta := windowMeta{Terminal: n, Title: title, Role: api.RoleShell}
	if err := e.mark(ctx, c, w, id, meta); err != nil {
		return err
	}
	if _, err := c.Command(ctx, "rename-window", "-t", w.String(), tmux.FormatLiteral(title)); err != nil {
		e.warn("could not name a window a person opened", "terminal", n, "err", err)
	}
	a.mu.Lock()
	t := e.registerLocked(meta)
	e.attachLocked(t, w, p)
	a.publishLocked(api.AgentAdded, t)
	a.mu.Unlock()
	if err := e.placeCreating(ctx, c, ws, w, n); err != nil {
		e.warn("could not move a window to its terminal's number", "terminal", n, "err", err)
	}
	return nil
}

// freeIndexCreating makes window index n of the session free for terminal n. A window there that
// is not terminal n's (the holder, a window a person opened or moved there, another terminal's)
// moves out of the way: a terminal's to the index of its own number when that is free, any other
// to the lowest free index that is no terminal's number and not the next number the app gives.
// Index 0 and the numbers of terminals that closed are such indexes for good: the app gives no
// terminal 0 and no number twice. Only when every index below the next number is taken can a
// window land on a number the app gives later; it is moved again then. Nothing that stands at its
// own number is moved. ws is kept up to date. e.createMu must be held.
func (e *environment) freeIndexCreating(ctx context.Context, c *tmux.Client, ws *sessionWindows, n int) error {
	w, there := ws.at[n]
	if !there {
		return nil
	}
	a := e.app
	a.mu.Lock()
	t := e.byWindow[w]
	to := -1
	if t != nil {
		if t.number == n {
			a.mu.Unlock()
			return nil
		}
		if _, taken := ws.at[t.number]; !taken {
			to = t.number
		}
	}
	for i := 0; to < 0; i++ {
		if _, taken := ws.at[i]; !taken && i != n && i != e.next && e.terminals[i] == nil {
			to = i
		}
	}
	a.mu.Unlock()
	if err := e.moveWindow(ctx, c, w, to); err != nil {
		return err
	}
	ws.moved(w, to)
	return nil
}

// placeCreating moves window w, terminal n's, to window index n. ws is kept up to date.
// e.createMu must be held.
func (e *environment) placeCreating(ctx context.Context, c *tmux.Client, ws *sessionWindows, w tmux.WindowID, n int) error {
	if i, ok := ws.index[w]; !ok || i == n {
		return nil
	}
	if err := e.freeIndexCreating(ctx, c, ws, n); err != nil {
		return err
	}
	if err := e.moveWindow(ctx, c, w, n); err != nil {
		return err
	}
	ws.moved(w, n)
	return nil
}

// onNote handles tmux's notifications. It runs on the client's reading goroutine, so it never
// waits on tmux: numbering a new window and checking a closed one, which need commands, are left
// to follow, in bounded sets. c is the client that read the notification; until follow has made
// it e.client, the windows it reports are left to adopt, which lists them.
func (e *environment) onNote(c *tmux.Client, n tmux.Notification) {
	a := e.app
	switch n := n.(type) {
	case tmux.Output:
		a.mu.Lock()
		if t := e.byPane[n.Pane]; t != nil {
			if t.output(time.Now(), a.cfg.Quiet) {
				a.publishLocked(api.AgentChanged, t)
			}
			e.armQuietLocked(t)
			e.lookLocked(t) // a reaction to a Send, perhaps
			if t.prompt != nil {
				select {
				case t.prompt <- struct{}{}: // the worker may be ready for its prompt
				default:
				}
			}
		}
		a.mu.Unlock()
	case tmux.WindowAdd:
		if n.Unlinked {
			return
		}
		// A window that comes before the client is the environment's is listed by adopt.
		a.mu.Lock()
		if _, known := e.byWindow[n.Window]; !known && e.client == c {
			e.work.add(n.Window)
		}
		a.mu.Unlock()
	case tmux.WindowClose:
		// tmux also says %window-close when a window moves to another index (move-window, which
		// the app runs to put a window at its number): whether the window is gone is asked.
		a.mu.Lock()
		if t := e.byWindow[n.Window]; t != nil && e.client == c {
			e.work.close(n.Window)
		}
		a.mu.Unlock()
	case tmux.SubscriptionChanged:
		if n.Name != deadSubscription || n.Pane < 0 {
			return
		}
		end, err := parseDead(strings.Split(n.Value, " "))
		if !end.dead {
			return
		}
		if err != nil {
			e.warn("tmux gave a dead pane an exit status out of range: its exit code is -1", "pane", n.Pane.String(), "err", err)
		}
		a.mu.Lock()
		if t := e.byPane[n.Pane]; t != nil {
			e.endedLocked(c, t, end.code, end.known)
		}
		a.mu.Unlock()
	}
}

// removeLocked closes a terminal and forgets it: subscribers see it closed, then removed.
// app.mu must be held.
func (e *environment) removeLocked(t *terminal) {
	a := e.app
	if t.quietTimer != nil {
		t.quietTimer.Stop()
		t.quietTimer = nil
	}
	if t.closed(time.Now()) {
		a.publishLocked(api.AgentChanged, t)
	}
	delete(e.terminals, t.number)
	if e.byPane[t.pane] == t {
		delete(e.byPane, t.pane)
	}
	if e.byWindow[t.window] == t {
		delete(e.byWindow, t.window)
	}
	a.publishLocked(api.AgentRemoved, t)
	e.leftGroupLocked(t.group)
}

// down marks the environment down. When tmux ended the session (kill-server, the session
// closed), its terminals are gone: they are closed and forgotten. When only the way to tmux broke
// (its client process died, an SSH connection dropped, tmux stopped answering), the terminals
// live on in tmux: they keep their numbers and are shown unreachable until the next attach
// reconciles them with what tmux has and gives them their states back.
//
// Subscribers learn why with an EnvironmentDown event: when the environment was up, and when an
// attempt to bring it up failed for a reason they were not told yet, so that a host whose tmux
// never answers is not down in silence.
func (e *environment) down(err error) {
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	wasUp := e.up
	e.up = false
	e.client, e.work = nil, nil
	var ended *tmux.ExitError
	if errors.As(err, &ended) {
		for _, t := range e.terminals {
			e.removeLocked(t)
		}
	}
	stopped := err == nil || errors.Is(err, context.Canceled)
	msg := "the app stopped"
	if !stopped {
		msg = err.Error()
		now := time.Now()
		for _, t := range e.terminals {
			if t.lost(now) {
				a.publishLocked(api.AgentChanged, t)
			}
		}
	}
	if wasUp || !stopped && msg != e.downMsg {
		e.downMsg = msg
		a.publishAppLocked(api.AppEvent{Kind: api.EnvironmentDown, Environment: e.name, Message: msg})
	}
}

// armQuietLocked makes sure a timer will move the terminal to idle after its quiet spell, once
// no job runs in its shell's foreground, and, for an agent's window, once tmux says its process
// has not ended. app.mu must be held.
func (e *environment) armQuietLocked(t *terminal) {
	if t.quietTimer != nil || t.reported || t.dead {
		return
	}
	a := e.app
	var fire func()
	fire = func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		t.quietTimer = nil
		if e.terminals[t.number] != t || t.unreachable {
			return // the environment's return arms it again
		}
		due, again := t.quietDue(time.Now(), a.cfg.Quiet)
		switch {
		case again > 0:
			t.quietTimer = time.AfterFunc(again, fire)
			return
		case !due:
			return
		case !t.attached():
			if changed, _ := t.quiet(time.Now(), a.cfg.Quiet); changed {
				a.publishLocked(api.AgentChanged, t)
			}
			return
		}
		// Whether the agent's process has ended, and whether a job runs in its shell's
		// foreground, are tmux's (and /proc's) to tell, off the lock. Output meanwhile arms a new
		// spell, which this look then leaves alone.
		pane, printed, c := t.pane, t.lastOutput, e.client
		ended := t.runs && c != nil
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), lookTimeout)
			defer cancel()
			// The window's process is the agent's command itself: one that has ended is done
			// or failed, never idle, even when tmux has not told yet (its subscription is
			// checked once a second, and the pane-died hook waits for the exit status, which
			// tmux may collect late).
			var dead, known bool
			var code int
			if ended {
				var err error
				if dead, code, known, err = e.paneDead(ctx, c, pane); err != nil {
					dead = false
				}
			}
			var job bool
			var err error
			if !dead {
				job, err = e.foregroundJob(ctx, pane)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if e.terminals[t.number] != t || t.unreachable {
				return // closed meanwhile, or the environment's return arms the timer again
			}
			if dead {
				e.endedLocked(c, t, code, known)
				return
			}
			if t.quietTimer != nil || !t.lastOutput.Equal(printed) {
				return
			}
			now := time.Now()
			var changed bool
			switch {
			case err == nil && job:
				// Working until the job gives the terminal back: looked at again each spell.
				changed = t.busy(now)
				if !t.reported && !t.dead && !t.unreachable {
					t.quietTimer = time.AfterFunc(a.cfg.Quiet, fire)
				}
			default:
				// No job, or none the app can tell of: the quiet spell decides.
				changed, _ = t.quiet(now, a.cfg.Quiet)
			}
			if changed {
				a.publishLocked(api.AgentChanged, t)
			}
		}()
	}
	t.quietTimer = time.AfterFunc(a.cfg.Quiet, fire)
}

// kill closes a terminal's window and forgets the terminal.
func (e *environment) kill(ctx context.Context, t *terminal) error {
	c, err := e.current()
	if err != nil {
		return err
	}
	if _, err := c.Command(ctx, "kill-window", "-t", t.window.String()); err != nil {
		var ce *tmux.CommandError
		if !errors.As(err, &ce) { // a window already gone is closed all the same
			return fmt.Errorf("tmux kill-window: %w", err)
		}
	}
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.terminals[t.number] == t {
		e.removeLocked(t)
	}
	return nil
}

func (e *environment) current() (*tmux.Client, error) {
	a := e.app
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.client == nil {
		return nil, e.downError()
	}
	return e.client, nil
}

// downError is the answer to a request that needs the environment while it is down.
func (e *environment) downError() error {
	return api.Errorf(api.CodeUnavailable, "environment %s is down; the app is bringing it back", e.name).WithReason(api.ReasonEnvironmentDown)
}
