package ui

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// The list: the environments and the agents, a filter over them, and what the person does to the
// selected agent from there (attach, push; close asks first: confirm.go).

// envRow is one environment's row.
type envRow struct {
	name, ssh  string
	up         bool
	down       string
	connection string
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
	for _, s := range []string{a.ID().String(), a.Title, string(a.Role), string(a.State), a.Session, a.Group} {
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

// listKey is a key on the list of agents.
func (m Model) listKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
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
		return m.openForm()
	case "s":
		m.mode = modeSettings
	case "c":
		if a, ok := m.selected(); ok {
			return m.openChanges(a)
		}
	case "p", "P":
		if a, ok := m.selected(); ok {
			return m.push(a, key == "P")
		}
	case "b":
		m.bell = !m.bell
		m.status = "the bell for agents that need you is " + onOff(m.bell)
	}
	return m, nil
}

// filterKey is a key while the filter is typed: Enter keeps it, Esc clears it.
func (m Model) filterKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
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
}

func (m *Model) move(d int) {
	m.cursor = max(0, min(m.cursor+d, len(m.shown)-1))
	m.scroll()
}

// pushWait bounds a push from the UI: the bus's deadline of PushGroup, which leaves the person
// time to answer git's prompt.
var pushWait = api.NewRequest(api.PushGroup, &api.PushGroupBody{}).Deadline()

// push pushes agent a's group (with pr, and opens a pull request for it), off the UI's loop; git's
// prompt, if it asks one, comes as a modal meanwhile.
func (m Model) push(a api.Agent, pr bool) (tea.Model, tea.Cmd) {
	what := "p pushes"
	if pr {
		what = "P opens a pull request for"
	}
	if a.Group == "" {
		m.status = what + " a group's branch: " + a.ID().String() + " works in no group"
		return m, nil
	}
	id, group := a.ID(), a.Group
	m.status = "pushing group " + group + "…"
	return m, m.callWithin(pushWait, func(ctx context.Context) (string, error) {
		p, err := m.opts.App.PushGroup(ctx, id, pr)
		if err != nil {
			return "", fmt.Errorf("group %s not pushed: %w", group, err)
		}
		text := fmt.Sprintf("pushed %s (%s) to %s", p.Branch, short(p.Commit), p.Remote)
		if p.UpToDate {
			text = fmt.Sprintf("%s (%s) is on %s already", p.Branch, short(p.Commit), p.Remote)
		}
		if p.PR != "" {
			text += "; pull request " + p.PR
		}
		if p.Uncommitted > 0 {
			text += fmt.Sprintf("; %d files not committed, not pushed", p.Uncommitted)
		}
		return text, nil
	})
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
	id, said := a.ID(), m.status
	return m, tea.ExecProcess(c, func(err error) tea.Msg {
		if err != nil {
			return doneMsg{text: fmt.Sprintf("error: attach to %s: %v (%s)", id, err, line), said: said}
		}
		return doneMsg{text: "back from " + id.String(), said: said}
	})
}

// envLines are the environments' rows: each one's name, where it is, its state; a failed one is
// followed by the README's next step for its error.
func (m Model) envLines(limit int) []string {
	var out []string
	for _, e := range m.envs {
		if len(out) >= limit {
			break
		}
		where := "this computer"
		if e.ssh != "" {
			where = "ssh " + e.ssh
		}
		state := "coming up"
		switch {
		case e.up:
			state = "up"
		case e.down != "":
			state = "down: " + e.down
		}
		if e.connection != "" {
			state = e.connection + " · tmux " + state
		}
		out = append(out, fmt.Sprintf("%-10s %-22s %s", cut(e.name, 10), cut(where, 22), termsafe.Escape(state, 300)))
		if h := hint(e.connection); h != "" && !e.up {
			out = append(out, "           hint: "+h)
		}
	}
	return out
}

// envLineCount is len(envLines) without drawing them.
func (m Model) envLineCount() int {
	n := 0
	for _, e := range m.envs {
		n++
		if hint(e.connection) != "" && !e.up {
			n++
		}
	}
	return n
}

// hint is the README's next step for an SSH environment's state (its table of states and errors).
func hint(state string) string {
	switch {
	case strings.HasPrefix(state, "retrying"):
		return "it tries again by itself; kill -HUP krad-ade ends the wait"
	case !strings.HasPrefix(state, "failed"):
		return ""
	case strings.Contains(state, "is unknown"):
		return "check the fingerprint, then trust it: ssh HOST once (the app connects as soon as known_hosts changes)"
	case strings.Contains(state, "has changed"):
		return "never accepted: find out why; if the change is expected, remove that known_hosts line"
	case strings.Contains(state, "encrypted") || strings.Contains(state, "passphrase"):
		return "ssh-add the key, then kill -HUP krad-ade"
	case strings.Contains(state, "authentication"):
		return "add your key to your ssh agent (ssh-add), or name it (IdentityFile) for the host in ~/.ssh/config, then kill -HUP krad-ade"
	case strings.Contains(state, "tmux"):
		return "install tmux on the host (apt-get install tmux)"
	case strings.Contains(state, "forwarding"):
		return "allow TCP forwarding for your user in the host's sshd_config"
	}
	return "fix what it says (README: SSH environments), then kill -HUP krad-ade; it also retries when your ssh config or known_hosts changes"
}

// Columns of the agents pane: the title takes what is left.
var columns = []struct {
	name  string
	width int
	min   int // the screen width from which the column is shown
}{
	{"AGENT", 10, 0}, {"ROLE", 6, 0}, {"STATE", 12, 0}, {"FROM", 8, 70}, {"SINCE", 5, 0}, {"EXIT", 4, 60},
	{"SESSION", 9, 100}, {"GROUP", 10, 90},
}

func (m Model) agentsPane(line func(string), rows int) {
	title := "Agents"
	if m.mode == modeFilter || m.filter.Value() != "" {
		title += "  " + m.filter.View()
	}
	line(heading(title, m.width))
	var hdr strings.Builder
	hdr.WriteString("  ")
	for _, c := range columns {
		if m.width >= c.min {
			hdr.WriteString(pad(c.name, c.width) + " ")
		}
	}
	hdr.WriteString("TITLE")
	line(styleFaint.Render(fit(hdr.String(), m.width)))
	for r := range rows {
		j := m.top + r
		if j >= len(m.shown) {
			if r == 0 && len(m.shown) == 0 {
				line(fit("  no agents", m.width))
				continue
			}
			line("")
			continue
		}
		line(m.agentRow(m.agents[m.shown[j]], j == m.cursor))
	}
}

func (m Model) agentRow(a api.Agent, selected bool) string {
	mark := " "
	if m.marked[a.ID()] {
		mark = "*"
	}
	cur := " "
	if selected {
		cur = ">"
	}
	state := a.State
	if state == api.StateNeedsInput || state == api.StateFailed {
		state += "!"
	}
	// A terminal that sets its group up works at that, not yet at its command.
	if st, ok := m.setups[a.ID()]; ok && (st.State == api.SetupRunning && state == api.StateWorking || st.State == api.SetupFailed && a.State == api.StateFailed) {
		state = "setting up"
		if st.State == api.SetupFailed {
			state = "setup failed"
		}
	}
	exit := ""
	if a.ExitCode != nil {
		exit = strconv.Itoa(*a.ExitCode)
	}
	cells := map[string]string{
		"AGENT": a.ID().String(), "ROLE": string(a.Role), "STATE": string(state), "FROM": a.StateFrom, "SINCE": ago(m.now, a.Since),
		"EXIT": exit, "SESSION": a.Session, "GROUP": a.Group,
	}
	var b strings.Builder
	b.WriteString(cur + mark)
	used := 2
	for _, c := range columns {
		if m.width < c.min {
			continue
		}
		cell := pad(termsafe.Escape(cells[c.name], 64), c.width)
		if c.name == "STATE" && !selected {
			if st, ok := stateStyles[a.State]; ok {
				cell = st.Render(cell)
			}
		}
		b.WriteString(cell + " ")
		used += c.width + 1
	}
	title := a.Title
	if a.Message != "" {
		title += " · " + a.Message // what the agent said with its state: why it needs the person
	}
	b.WriteString(pad(termsafe.Escape(title, 4*m.width), max(0, m.width-used)))
	if selected {
		return styleSelected.Render(ansi.Strip(b.String()))
	}
	return b.String()
}

// ago is how long since t, short: 12s, 5m, 3h, 2d.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
