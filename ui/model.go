package ui

import (
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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
	// ConfigPath is config.toml; SetDiscovery writes it (config.SetDiscovery).
	ConfigPath   string
	SetDiscovery func(on bool) error
	Settings     *Settings
	Log          *LogLines
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

// envRow is one environment's row.
type envRow struct {
	name, ssh  string
	up         bool
	down       string
	connection string
}

// Model is the UI's state: Bubble Tea's model.
type Model struct {
	opts Options
	ctx  context.Context

	width, height int
	now           time.Time

	envs   []envRow
	agents []api.Agent // sorted by environment, then terminal
	marked map[api.TerminalID]bool
	shown  []int          // indexes into agents that pass the filter
	cursor int            // index into shown
	at     api.TerminalID // the cursor's agent, kept on it as rows come and go
	top    int            // first shown row on screen

	mode    mode
	filter  textinput.Model
	form    []textinput.Model // the new lead's title, command, environment, folder
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
	m := Model{opts: opts, ctx: ctx, width: 80, height: 24, now: time.Now(), marked: map[api.TerminalID]bool{}}
	for _, e := range opts.Environments {
		m.envs = append(m.envs, envRow{name: e.Name, ssh: e.SSH})
	}
	m.secret = textinput.New()
	m.secret.EchoMode = textinput.EchoPassword
	m.secret.CharLimit = 4096
	m.filter = textinput.New()
	m.filter.Prompt = "/"
	m.filter.CharLimit = 100
	for _, p := range []string{"title: ", "command: ", "environment: ", "folder: "} {
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
	doneMsg     struct{ text string }
	// discoveryMsg is the outcome of a toggle's write to config.toml.
	discoveryMsg struct {
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

func (m Model) subscribe() tea.Cmd {
	if m.opts.App == nil {
		return nil
	}
	return func() tea.Msg {
		snap, ch := m.opts.App.Subscribe(m.ctx)
		return snapshotMsg{snap: snap, events: ch}
	}
}

// eventBatch is how many queued events one update takes at most.
const eventBatch = 512

// next waits for the next event, and takes the ones already queued with it.
func next(ch <-chan app.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsMsg{closed: true, from: ch}
		}
		msg := eventsMsg{events: []app.Event{ev}, from: ch}
		for len(msg.events) < eventBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.events = append(msg.events, ev)
			default:
				return msg
			}
		}
		return msg
	}
}

func (m Model) waitLog() tea.Cmd {
	if m.opts.Log == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-m.opts.Log.notify:
		case <-m.ctx.Done():
			return nil
		}
		return logMsg{}
	}
}

func (m Model) waitPrompts() tea.Cmd {
	if m.opts.Prompts == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-m.opts.Prompts.notify:
		case <-m.ctx.Done():
			return nil
		}
		return promptsMsg{}
	}
}

// showPrompt shows the first prompt waiting, if it is not the one shown: a new one starts with
// an empty input.
func (m *Model) showPrompt() tea.Cmd {
	pd := m.opts.Prompts.first()
	if pd == m.prompt {
		return nil
	}
	m.prompt = pd
	m.secret.SetValue("")
	if pd == nil {
		m.secret.Blur()
		return nil
	}
	return m.secret.Focus()
}

// promptKey is a key while a prompt is shown: Enter answers it, Esc refuses it, the rest is
// typed into the masked input.
func (m Model) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	pd := m.prompt
	switch k.String() {
	case "enter":
		secret := api.NewSecret(m.secret.Value())
		m.secret.SetValue("")
		m.status = "answered git's prompt of " + promptWho(pd.prompt)
		m.opts.Prompts.answer(pd, promptReply{secret: secret})
	case "esc":
		m.secret.SetValue("")
		m.status = "refused git's prompt of " + promptWho(pd.prompt)
		m.opts.Prompts.answer(pd, promptReply{err: ErrRefused})
	default:
		var cmd tea.Cmd
		m.secret, cmd = m.secret.Update(k)
		return m, cmd
	}
	return m, m.showPrompt()
}

// promptWho names who raised a prompt, for the status line.
func promptWho(p app.Prompt) string {
	if p.Terminal == 0 {
		return p.Environment + " (the app's own git)"
	}
	return api.TerminalID{Environment: p.Environment, Terminal: p.Terminal}.String()
}

func (m Model) waitSettings() tea.Cmd {
	if m.opts.Settings == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-m.opts.Settings.notify:
		case <-m.ctx.Done():
			return nil
		}
		return settingsMsg{}
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
		for _, ev := range msg.events {
			m.apply(ev)
		}
		m.refilter()
		var ring tea.Cmd
		if m.bell && m.rang {
			ring = tea.Raw("\a")
		}
		if msg.closed {
			// It fell behind (or the app stops): a fresh snapshot says where things are.
			if m.ctx.Err() != nil {
				return m, nil
			}
			return m, tea.Batch(ring, m.subscribe())
		}
		return m, tea.Batch(ring, next(msg.from))
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
		m.status = msg.text
		return m, nil
	case discoveryMsg:
		if msg.err != nil {
			// Said in full in the settings pane, where the status line would cut it.
			m.status, m.writeErr = "error: "+msg.err.Error(), msg.err.Error()
			return m, nil
		}
		m.writeErr = ""
		m.status = fmt.Sprintf("discovery %s written to %s; the app applies it within a second", onOff(msg.on), m.opts.ConfigPath)
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

func (m *Model) applySnapshot(s app.Snapshot) {
	m.subscribed = true
	m.agents = slices.Clone(s.Agents)
	sortAgents(m.agents)
	// The snapshot names every environment the app has: those removed while the UI fell behind
	// go, those added come with their hosts.
	m.envs = m.envs[:0]
	for _, es := range s.Environments {
		m.envs = append(m.envs, envRow{name: es.Name, ssh: es.SSH, up: es.Up, down: es.Down, connection: es.Connection})
	}
	m.refilter()
}

func sortAgents(as []api.Agent) {
	slices.SortFunc(as, func(a, b api.Agent) int {
		return cmp.Or(strings.Compare(a.Environment, b.Environment), cmp.Compare(a.Terminal, b.Terminal))
	})
}

// env is environment name's row; nil for one the app does not have (an event of its last words
// after it was removed).
func (m *Model) env(name string) *envRow {
	for i := range m.envs {
		if m.envs[i].name == name {
			return &m.envs[i]
		}
	}
	return nil
}

// find is where agent id is in m.agents, or where it would go.
func (m *Model) find(id api.TerminalID) (int, bool) {
	return slices.BinarySearchFunc(m.agents, id, func(a api.Agent, id api.TerminalID) int {
		return cmp.Or(strings.Compare(a.Environment, id.Environment), cmp.Compare(a.Terminal, id.Terminal))
	})
}

// apply applies one event.
func (m *Model) apply(ev app.Event) {
	if e := ev.App; e != nil {
		switch e.Kind {
		case api.EnvironmentAdded:
			row := envRow{name: e.Environment}
			if st := ev.Environment; st != nil {
				row = envRow{name: st.Name, ssh: st.SSH, up: st.Up, down: st.Down, connection: st.Connection}
			}
			if r := m.env(e.Environment); r != nil {
				*r = row
			} else {
				m.envs = append(m.envs, row)
			}
			m.status = "environment " + e.Environment + " added"
			return
		case api.EnvironmentRemoved:
			m.envs = slices.DeleteFunc(m.envs, func(r envRow) bool { return r.name == e.Environment })
			m.status = "environment " + e.Environment + " removed: " + e.Message
			return
		}
		r := m.env(e.Environment)
		switch {
		case e.Kind != api.EnvironmentUp && e.Kind != api.EnvironmentDown && e.Kind != api.EnvironmentState:
			m.status = e.Environment + ": " + e.Message
		case r == nil: // an environment's last words after its removal
		case e.Kind == api.EnvironmentUp:
			r.up, r.down = true, ""
		case e.Kind == api.EnvironmentDown:
			r.up, r.down = false, e.Message
		default:
			r.connection = e.Message
		}
		return
	}
	e := ev.Agent
	id := e.Agent.ID()
	i, ok := m.find(id)
	switch {
	case e.Kind == api.AgentRemoved:
		if ok {
			m.agents = slices.Delete(m.agents, i, i+1)
		}
		delete(m.marked, id)
	case ok:
		if marks(m.agents[i].State, e.Agent.State) {
			m.marked[id] = true
			m.rang = true
		}
		m.agents[i] = e.Agent
	default:
		m.agents = slices.Insert(m.agents, i, e.Agent)
	}
}

// marks says whether a change of state needs the person: the agent asks for input, failed, or
// went idle after working. It is marked until the person has seen it.
func marks(from, to string) bool {
	if from == to {
		return false
	}
	return to == api.StateNeedsInput || to == api.StateFailed || to == api.StateIdle && from == api.StateWorking
}

// refilter recomputes the rows that pass the filter, keeping the cursor on its agent.
func (m *Model) refilter() {
	at := m.at
	f := strings.ToLower(m.filter.Value())
	m.shown = m.shown[:0]
	for i, a := range m.agents {
		if f == "" || matches(a, f) {
			m.shown = append(m.shown, i)
		}
	}
	m.cursor = min(m.cursor, max(len(m.shown)-1, 0))
	if at.Environment != "" {
		for j, i := range m.shown {
			if m.agents[i].ID() == at {
				m.cursor = j
				break
			}
		}
	}
	m.scroll()
}

func matches(a api.Agent, f string) bool {
	for _, s := range []string{a.ID().String(), a.Title, a.Role, a.State, a.Session, a.Group} {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

func (m Model) selected() (api.Agent, bool) {
	if m.cursor < 0 || m.cursor >= len(m.shown) {
		return api.Agent{}, false
	}
	i := m.shown[m.cursor]
	if i >= len(m.agents) {
		return api.Agent{}, false
	}
	return m.agents[i], true
}

// workersOf is how many workers lead's session has.
func (m Model) workersOf(lead api.Agent) int {
	n := 0
	for _, a := range m.agents {
		if a.Role == api.RoleWorker && a.Environment == lead.Environment && a.Session == lead.Session {
			n++
		}
	}
	return n
}

// scroll keeps the cursor's row on screen, and marks its agent seen.
func (m *Model) scroll() {
	rows := m.layout().agentRows
	if rows < 1 {
		rows = 1
	}
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+rows {
		m.top = m.cursor - rows + 1
	}
	m.top = max(0, min(m.top, len(m.shown)-rows))
	if a, ok := m.selected(); ok {
		m.at = a.ID()
		delete(m.marked, a.ID())
	}
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	if key == "ctrl+c" {
		return m, tea.Quit
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeList
		return m, nil
	case modeFilter:
		switch key {
		case "enter":
			m.mode = modeList
			m.filter.Blur()
		case "esc":
			m.mode = modeList
			m.filter.Blur()
			m.filter.SetValue("")
			m.refilter()
		default:
			var cmd tea.Cmd
			m.filter, cmd = m.filter.Update(k)
			m.refilter()
			return m, cmd
		}
		return m, nil
	case modeConfirm:
		m.mode = modeList
		if (key == "y" || key == "Y") && m.session {
			id := m.confirm.ID()
			m.status = "closing the workers of " + id.String() + "…"
			return m, m.call(func(ctx context.Context) (string, error) {
				return "closed the workers of " + id.String(), m.opts.App.CloseSession(ctx, id)
			})
		}
		if key == "y" || key == "Y" {
			id := m.confirm.ID()
			m.status = "closing " + id.String() + "…"
			return m, m.call(func(ctx context.Context) (string, error) {
				return "closed " + id.String(), m.opts.App.CloseTerminal(ctx, id)
			})
		}
		m.status = "nothing closed"
		return m, nil
	case modeNewLead:
		return m.formKey(k)
	case modeChanges:
		return m.changesKey(k)
	case modeSettings:
		switch key {
		case "d", "space", " ", "enter":
			on := !m.settings.Discovery
			set := m.opts.SetDiscovery
			return m, func() tea.Msg { return discoveryMsg{on: on, err: set(on)} }
		case "esc", "s", "q":
			m.mode = modeList
		}
		return m, nil
	}
	switch key {
	case "q":
		return m, tea.Quit
	case "?":
		m.mode = modeHelp
	case "/":
		m.mode = modeFilter
		return m, m.filter.Focus()
	case "esc":
		m.filter.SetValue("")
		m.refilter()
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-m.layout().agentRows)
	case "pgdown":
		m.move(m.layout().agentRows)
	case "home", "g":
		m.move(-len(m.shown))
	case "end", "G":
		m.move(len(m.shown))
	case "enter":
		return m.attach()
	case "x":
		if a, ok := m.selected(); ok {
			m.confirm, m.mode, m.session = a, modeConfirm, false
		}
	case "X":
		if a, ok := m.selected(); ok {
			if a.Role != api.RoleLead {
				m.status = "X closes a lead's session: " + a.ID().String() + " is no lead"
				return m, nil
			}
			m.confirm, m.mode, m.session = a, modeConfirm, true
		}
	case "n":
		m.mode, m.focus = modeNewLead, 0
		for i := range m.form {
			m.form[i].SetValue("")
			m.form[i].Blur()
		}
		m.form[2].SetValue(app.Local)
		return m, m.form[0].Focus()
	case "s":
		m.mode = modeSettings
	case "c":
		if a, ok := m.selected(); ok {
			return m.openChanges(a)
		}
	case "b":
		m.bell = !m.bell
		m.status = "the bell for agents that need you is " + onOff(m.bell)
	}
	return m, nil
}

func (m *Model) move(d int) {
	m.cursor = max(0, min(m.cursor+d, len(m.shown)-1))
	m.scroll()
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// call runs an action off the UI's loop; its outcome comes back as the status line.
func (m Model) call(f func(ctx context.Context) (string, error)) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		text, err := f(ctx)
		if err != nil {
			return doneMsg{text: "error: " + err.Error()}
		}
		return doneMsg{text: text}
	}
}

func (m Model) formKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.mode = modeList
		m.status = "no lead named"
		return m, nil
	case "tab", "down":
		return m, m.focusField((m.focus + 1) % len(m.form))
	case "shift+tab", "up":
		return m, m.focusField((m.focus + len(m.form) - 1) % len(m.form))
	case "enter":
		if m.focus < len(m.form)-1 {
			return m, m.focusField(m.focus + 1)
		}
		spec := app.TerminalSpec{
			Title:       strings.TrimSpace(m.form[0].Value()),
			Command:     strings.TrimSpace(m.form[1].Value()),
			Environment: strings.TrimSpace(m.form[2].Value()),
			Dir:         strings.TrimSpace(m.form[3].Value()),
			Lead:        true,
		}
		if err := m.checkLead(spec); err != "" {
			m.status = "error: " + err
			return m, nil
		}
		m.mode = modeList
		m.status = "opening the lead…"
		return m, m.call(func(ctx context.Context) (string, error) {
			a, err := m.opts.App.OpenLead(ctx, spec)
			if err != nil {
				return "", err
			}
			return "opened lead " + a.ID().String(), nil
		})
	}
	var cmd tea.Cmd
	m.form[m.focus], cmd = m.form[m.focus].Update(k)
	return m, cmd
}

// checkLead says what is wrong with a lead before the app is asked, in the config's words.
func (m Model) checkLead(s app.TerminalSpec) string {
	known := false
	var names []string
	for _, e := range m.envs {
		names = append(names, e.name)
		known = known || e.name == s.Environment
	}
	if !known {
		return fmt.Sprintf("no environment %s: the environments are %s", strconv.Quote(s.Environment), strings.Join(names, ", "))
	}
	return ""
}

func (m *Model) focusField(i int) tea.Cmd {
	m.form[m.focus].Blur()
	m.focus = i
	return m.form[i].Focus()
}

// attach steps aside for tmux attached to the selected agent's window: the environment's attach
// command, as the app gives it (through the person's own ssh for a host).
func (m Model) attach() (tea.Model, tea.Cmd) {
	a, ok := m.selected()
	if !ok || m.opts.App == nil {
		return m, nil
	}
	line, ok := m.opts.App.AttachCommand(a.ID())
	if !ok {
		m.status = "error: no environment " + a.Environment
		return m, nil
	}
	delete(m.marked, a.ID())
	// Until the terminal is back, a frame drawn as tmux takes over must not say it is back.
	m.status = "attaching to " + a.ID().String() + "…"
	c := exec.Command("sh", "-c", line)
	c.Env = m.opts.AttachEnv
	id := a.ID()
	return m, tea.ExecProcess(c, func(err error) tea.Msg {
		if err != nil {
			return doneMsg{text: fmt.Sprintf("error: attach to %s: %v (%s)", id, err, line)}
		}
		return doneMsg{text: "back from " + id.String()}
	})
}
