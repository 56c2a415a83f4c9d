package ui

import (
	"context"
	"fmt"
	"slices"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
	"github.com/krad-ade/krad/worktree"
)

// App is what the UI calls on the app's model (app.App).
type App interface {
	Subscribe(ctx context.Context) (app.Snapshot, <-chan app.Event)
	OpenLead(ctx context.Context, spec app.TerminalSpec) (api.Agent, error)
	CloseTerminal(ctx context.Context, id api.TerminalID) error
	CloseSession(ctx context.Context, lead api.TerminalID) error
	AttachCommand(id api.TerminalID) (string, bool)
	// Changes is what terminal id's group changed, as the bus's Changes answers that terminal.
	Changes(ctx context.Context, id api.TerminalID) (worktree.Changes, error)
	// PushGroup pushes terminal id's group's branch, and with pr opens a pull request for it:
	// the person's push (git's prompts, if any, come to the UI meanwhile).
	PushGroup(ctx context.Context, id api.TerminalID, pr bool) (worktree.Pushed, error)
}

// Environment is an environment as the config names it.
type Environment struct {
	Name string
	// SSH is the host of an SSH environment, "" for this computer.
	SSH string
}

// Options are what Run and New need.
type Options struct {
	App          App
	Environments []Environment
	// ConfigPath is config.toml; SetDiscovery and SetNotify write it (config.SetDiscovery,
	// config.SetNotify).
	ConfigPath   string
	SetDiscovery func(on bool) error
	SetNotify    func(on bool) error
	// Desktop is how a notice (an agent that needs the person, a variant set that ended) reaches
	// the desktop, with notify on.
	Desktop  Desktop
	Settings *Settings
	Log      *LogLines
	// LogFile is where the log lines also go, shown in the help.
	LogFile string
	// AttachEnv is the environment of the attach command (tmux, ssh).
	AttachEnv []string
	// Prompts are git's prompts the app puts to the person (the app's Prompter while the UI
	// runs); nil: none come.
	Prompts *Prompts
}

// mode is what the keys act on.
type mode int

const (
	modeList mode = iota
	modeFilter
	modeHelp
	modeConfirm
	modeNewLead
	modeSettings
	modeChanges
)

// Model is the UI's state: Bubble Tea's model.
type Model struct {
	opts Options
	ctx  context.Context

	width, height int
	now           time.Time

	envs   []envRow
	agents []api.Agent // sorted by environment, then terminal
	marked map[api.TerminalID]bool
	// setups are the terminals that set their group up now, or whose setup failed, as their
	// group_setup events told: their STATE shows it.
	setups map[api.TerminalID]app.SetupStatus
	shown  []int          // indexes into agents that pass the filter
	cursor int            // index into shown
	at     api.TerminalID // the cursor's agent, kept on it as rows come and go
	top    int            // first shown row on screen

	mode    mode
	filter  textinput.Model
	form    []textinput.Model // the new lead's title, command, environment, folder, agent
	focus   int
	confirm api.Agent
	session bool // the confirmation is of closing confirm's session, not confirm itself
	bell    bool // ring the terminal's bell when an agent comes to need the person (b)
	rang    bool // an update marked an agent: ring once for it

	status     string // the last action's outcome, or why it failed
	logLines   []string
	logNext    uint64
	settings   config.Config
	configErr  error
	writeErr   string // why the last toggle's write to config.toml failed; "" once one succeeds
	subscribed bool

	changes changesView // the changes view, while mode is modeChanges

	// prompt is git's prompt shown as a modal over everything else, nil for none; secret its
	// masked input.
	prompt *pending
	secret textinput.Model
}

// New makes the UI's model.
func New(ctx context.Context, opts Options) Model {
	m := Model{opts: opts, ctx: ctx, width: 80, height: 24, now: time.Now(), marked: map[api.TerminalID]bool{}, setups: map[api.TerminalID]app.SetupStatus{}}
	for _, e := range opts.Environments {
		m.envs = append(m.envs, envRow{name: e.Name, ssh: e.SSH})
	}
	m.secret = textinput.New()
	m.secret.EchoMode = textinput.EchoPassword
	m.secret.CharLimit = 4096
	m.filter = textinput.New()
	m.filter.Prompt = "/"
	m.filter.CharLimit = 100
	for _, p := range []string{"title: ", "command: ", "environment: ", "folder: ", "agent: "} {
		ti := textinput.New()
		ti.Prompt = p
		ti.CharLimit = 1000
		m.form = append(m.form, ti)
	}
	if opts.Settings != nil {
		m.settings, m.configErr = opts.Settings.get()
	}
	return m
}

// Messages the model gets.
type (
	snapshotMsg struct {
		snap   app.Snapshot
		events <-chan app.Event
	}
	eventsMsg struct {
		events []app.Event
		closed bool
		from   <-chan app.Event
	}
	logMsg      struct{}
	settingsMsg struct{}
	promptsMsg  struct{}
	tickMsg     time.Time
	// doneMsg is an action's result; said is the status line as the action began, so that what
	// an event said meanwhile (a group held as its last terminal closed) is kept beside it.
	doneMsg struct{ text, said string }
	// switchMsg is the outcome of a toggle's write to config.toml: of key, to on.
	switchMsg struct {
		key string
		on  bool
		err error
	}
)

// Init subscribes to the app and starts the log and settings feeds.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.subscribe(), m.waitLog(), m.waitSettings(), m.waitPrompts(), tick())
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// waitLog waits for new lines of the log (nil: none come).
func (m Model) waitLog() tea.Cmd {
	if m.opts.Log == nil {
		return nil
	}
	return m.waitFor(m.opts.Log.notify, logMsg{})
}

// waitFor waits for a word on a feed's notify channel, then gives msg; nothing once the UI stops.
func (m Model) waitFor(notify <-chan struct{}, msg tea.Msg) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-notify:
		case <-m.ctx.Done():
			return nil
		}
		return msg
	}
}

// Update applies one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.scroll()
		if m.mode == modeChanges {
			m.sizeChanges()
		}
		return m, nil
	case changesMsg:
		m.gotChanges(msg)
		return m, nil
	case snapshotMsg:
		m.applySnapshot(msg.snap)
		return m, next(msg.events)
	case eventsMsg:
		m.rang = false
		var cmds []tea.Cmd
		for _, ev := range msg.events {
			cmds = append(cmds, m.apply(ev))
		}
		m.refilter()
		if m.bell && m.rang {
			cmds = append(cmds, tea.Raw("\a"))
		}
		if msg.closed {
			// It fell behind (or the app stops): a fresh snapshot says where things are.
			if m.ctx.Err() != nil {
				return m, nil
			}
			return m, tea.Batch(append(cmds, m.subscribe())...)
		}
		return m, tea.Batch(append(cmds, next(msg.from))...)
	case logMsg:
		var lines []string
		lines, m.logNext = m.opts.Log.since(m.logNext)
		m.logLines = append(m.logLines, lines...)
		if len(m.logLines) > logKeep {
			m.logLines = slices.Clone(m.logLines[len(m.logLines)-logKeep:])
		}
		return m, m.waitLog()
	case settingsMsg:
		m.settings, m.configErr = m.opts.Settings.get()
		return m, m.waitSettings()
	case promptsMsg:
		return m, tea.Batch(m.showPrompt(), m.waitPrompts())
	case tickMsg:
		m.now = time.Time(msg)
		return m, tick()
	case doneMsg:
		if m.status != msg.said && m.status != "" {
			m.status = msg.text + " · " + m.status
		} else {
			m.status = msg.text
		}
		return m, nil
	case switchMsg:
		if msg.err != nil {
			// Said in full in the settings pane, where the status line would cut it.
			m.status, m.writeErr = "error: "+msg.err.Error(), msg.err.Error()
			return m, nil
		}
		m.writeErr = ""
		m.status = fmt.Sprintf("%s %s written to %s; the app applies it within a second", msg.key, onOff(msg.on), m.opts.ConfigPath)
		return m, nil
	case tea.KeyPressMsg:
		if m.prompt != nil && msg.String() != "ctrl+c" {
			return m.promptKey(msg)
		}
		return m.key(msg)
	}
	if m.prompt != nil {
		var cmd tea.Cmd
		m.secret, cmd = m.secret.Update(msg)
		return m, cmd
	}
	if m.mode == modeFilter {
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		return m, cmd
	}
	if m.mode == modeNewLead {
		var cmd tea.Cmd
		m.form[m.focus], cmd = m.form[m.focus].Update(msg)
		return m, cmd
	}
	return m, nil
}

// key is a key the person pressed, for the screen shown (no prompt over it).
func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" {
		return m, tea.Quit
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeList // any key goes back
		return m, nil
	case modeFilter:
		return m.filterKey(k)
	case modeConfirm:
		return m.confirmKey(k)
	case modeNewLead:
		return m.formKey(k)
	case modeChanges:
		return m.changesKey(k)
	case modeSettings:
		return m.settingsKey(k)
	}
	return m.listKey(k)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// call runs an action off the UI's loop; its outcome comes back as the status line.
func (m Model) call(f func(ctx context.Context) (string, error)) tea.Cmd {
	return m.callWithin(time.Minute, f)
}

// callWithin is call, with d for the action.
func (m Model) callWithin(d time.Duration, f func(ctx context.Context) (string, error)) tea.Cmd {
	ctx, said := m.ctx, m.status
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		text, err := f(ctx)
		if err != nil {
			return doneMsg{text: "error: " + err.Error(), said: said}
		}
		return doneMsg{text: text, said: said}
	}
}
