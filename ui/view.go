package ui

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// The smallest screen the UI draws on; below it, it says so.
const (
	minWidth  = 40
	minHeight = 10
)

// Styles. Every state also reads without colour (NO_COLOR): its name is written out, and the
// states that need the person carry a "!".
var (
	styleHeading  = lipgloss.NewStyle().Bold(true)
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleFaint    = lipgloss.NewStyle().Faint(true)
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true)
	stateStyles   = map[string]lipgloss.Style{
		api.StateNeedsInput:  lipgloss.NewStyle().Foreground(lipgloss.Color("11")).Bold(true),
		api.StateFailed:      lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
		api.StateWorking:     lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		api.StateStarting:    lipgloss.NewStyle().Foreground(lipgloss.Color("14")),
		api.StateUnreachable: lipgloss.NewStyle().Foreground(lipgloss.Color("13")),
		api.StateDone:        styleFaint,
		api.StateClosed:      styleFaint,
	}
)

// layout is how many rows each pane gets on the screen.
type layout struct {
	tooSmall                    bool
	envRows, agentRows, logRows int
}

// fixedRows are the title, three headings, the column header, the status line and the keys.
const fixedRows = 7

// changesRows are the rows of the changes view: those of the agents pane and of the log pane.
func (l layout) changesRows() int { return l.agentRows + 2 + 1 + l.logRows }

func (m Model) layout() layout {
	if m.width < minWidth || m.height < minHeight {
		return layout{tooSmall: true}
	}
	free := m.height - fixedRows
	l := layout{logRows: max(1, m.height/6)}
	l.envRows = min(m.envLineCount(), max(1, m.height/8))
	l.agentRows = max(1, free-l.envRows-l.logRows)
	return l
}

// View draws the screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "krad-ade"
	return v
}

// Render is the screen as text, width × height.
func (m Model) Render() string {
	l := m.layout()
	if l.tooSmall {
		// In words that wrap to the width it has, on the lines it has.
		lines := wrap(fmt.Sprintf("krad-ade: too small (%d×%d); make it at least %d×%d", m.width, m.height, minWidth, minHeight), m.width)
		for i := range lines {
			lines[i] = fit(lines[i], m.width)
		}
		return strings.Join(lines[:min(len(lines), max(m.height, 1))], "\n")
	}
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	line(m.titleLine())
	line(heading("Environments", m.width))
	envs := m.envLines(l.envRows)
	for i := range l.envRows {
		line(fit(envs[i], m.width))
	}
	switch {
	case m.prompt != nil:
		m.promptPane(line, l.agentRows+2)
	case m.mode == modeHelp:
		m.helpPane(line, l.agentRows+2)
	case m.mode == modeNewLead:
		m.formPane(line, l.agentRows+2)
	case m.mode == modeSettings:
		m.settingsPane(line, l.agentRows+2)
	case m.mode == modeConfirm:
		m.confirmPane(line, l.agentRows+2)
	case m.mode == modeChanges:
		// The patch takes the log's rows too.
		m.changesPane(line, l.changesRows())
		line(m.statusLine())
		b.WriteString(fit(m.keysLine(), m.width))
		return b.String()
	default:
		m.agentsPane(line, l.agentRows)
	}
	line(heading("Log", m.width))
	first := max(0, len(m.logLines)-l.logRows)
	for i := range l.logRows {
		s := ""
		if first+i < len(m.logLines) {
			s = termsafe.Escape(m.logLines[first+i], 4*m.width)
		}
		line(styleFaint.Render(fit(s, m.width)))
	}
	line(m.statusLine())
	b.WriteString(fit(m.keysLine(), m.width))
	return b.String()
}

func (m Model) titleLine() string {
	need := 0
	for _, a := range m.agents {
		if a.State == api.StateNeedsInput || a.State == api.StateFailed {
			need++
		}
	}
	s := fmt.Sprintf("krad-ade · %d agents · %d need you", len(m.agents), need)
	if f := m.filter.Value(); f != "" {
		s += fmt.Sprintf(" · filter %q: %d shown", termsafe.Escape(f, 40), len(m.shown))
	}
	if !m.subscribed {
		s += " · waiting for the app…"
	}
	return styleHeading.Render(fit(s, m.width))
}

func heading(name string, width int) string {
	s := "── " + name + " "
	return styleHeading.Render(fit(s+strings.Repeat("─", max(0, width-ansi.StringWidth(s))), width))
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
	{"AGENT", 10, 0}, {"ROLE", 6, 0}, {"STATE", 12, 0}, {"SINCE", 5, 0}, {"EXIT", 4, 60},
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
	exit := ""
	if a.ExitCode != nil {
		exit = strconv.Itoa(*a.ExitCode)
	}
	cells := map[string]string{
		"AGENT": a.ID().String(), "ROLE": a.Role, "STATE": state, "SINCE": ago(m.now, a.Since),
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
	b.WriteString(pad(termsafe.Escape(a.Title, 4*m.width), max(0, m.width-used)))
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

func (m Model) helpPane(line func(string), rows int) {
	text := []string{
		"↑/k ↓/j  move        PgUp/PgDn g/G  page, first, last",
		"Enter    attach: tmux takes the terminal; detach (C-b d) comes back",
		"x        close the agent's terminal (asks first); X a lead's workers",
		"n        name a new lead: title, command, environment, folder",
		"s        settings: discovery (Let other programs find the agents API)",
		"c        the agent's group's changes: its files, then the patch; Esc closes",
		"/        filter by id, title, role, state, session, group; Esc clears",
		"?        this help      q  quit: the terminals keep running",
		"* marks an agent that needs you (needs input, failed, idle after working) until seen;",
		"b        rings the terminal's bell when one comes to need you (off at start)",
	}
	if m.opts.LogFile != "" {
		text = append(text, "log file: "+m.opts.LogFile)
	}
	m.pane(line, "Help (any key goes back)", text, rows)
}

func (m Model) formPane(line func(string), rows int) {
	text := []string{"A new lead, opened as a [[terminal]] with lead = true would be. Tab moves, Enter on the last field opens it, Esc cancels.", ""}
	for _, f := range m.form {
		text = append(text, f.View())
	}
	text = append(text, "", "command empty: your shell; folder empty: the environment's")
	m.pane(line, "New lead", text, rows)
}

func (m Model) settingsPane(line func(string), rows int) {
	c := m.settings
	text := []string{
		fmt.Sprintf("[%s] Let other programs find the agents API (discovery)   d or Enter toggles", check(c.Discovery)),
		fmt.Sprintf("    quiet: %s   worktrees: %s", c.Quiet, valueOr(c.Worktrees, "the default")),
		fmt.Sprintf("    %d configured terminals, %d SSH environments, %d agent profiles", len(c.Terminals), len(c.Environments), len(c.Agents)),
		"    file: " + m.opts.ConfigPath,
	}
	if m.writeErr != "" {
		text = append(text, "")
		text = append(text, wrap("not written, nothing changed: "+termsafe.Escape(m.writeErr, 1000), m.width-2)...)
	}
	if m.configErr != nil {
		text = append(text, "", "config.toml not applied, the last good settings stay: "+termsafe.Escape(m.configErr.Error(), 300))
	}
	m.pane(line, "Settings (Esc goes back)", text, rows)
}

// promptPane is git's prompt as a modal: who raised it (the terminal, proven by its askpass key,
// or the app's own gits, proven by theirs), on which host, and what the app proved and did not,
// the prompt, and the masked input.
func (m Model) promptPane(line func(string), rows int) {
	p := m.prompt.prompt
	who := "the app's own git"
	if p.Terminal != 0 {
		who = "terminal " + api.TerminalID{Environment: p.Environment, Terminal: p.Terminal}.String()
	}
	program := cmp.Or(p.Program, "git") // checked by the app: a program's name, nothing else
	text := wrap(fmt.Sprintf("%s in %s, on %s, asks:", program, who, termsafe.Escape(p.Host, 80)), m.width-2)
	text = append(text, wrap(p.Text, m.width-2)...) // escaped by the app already
	if p.Proof != "" {
		text = append(text, "")
		text = append(text, wrap(p.Proof, m.width-2)...)
	}
	text = append(text, "", m.secret.View(), "", "Enter answers; Esc refuses (git fails). The answer goes to that git only.")
	m.pane(line, "Git asks", text, rows)
}

// confirmPane says what a close takes away, and what it keeps.
func (m Model) confirmPane(line func(string), rows int) {
	a := m.confirm
	var what string
	if m.session {
		what = fmt.Sprintf("Close the session of %s (%q)? Its %d workers end; the lead stays. A group whose last terminal goes retires: its checkout is removed, its branch and a snapshot of its uncommitted work are kept.",
			a.ID(), termsafe.Escape(a.Title, 60), m.workersOf(a))
	} else {
		what = fmt.Sprintf("Close %s (%s %q)? Its window and its process end.", a.ID(), a.Role, termsafe.Escape(a.Title, 60))
		if n := m.workersOf(a); a.Role == api.RoleLead && n > 0 {
			what += fmt.Sprintf(" Its %d workers keep running (X closes them).", n)
		}
		if a.Group != "" {
			what += fmt.Sprintf(" If it is group %s's last terminal, the group retires: its checkout is removed, its branch and a snapshot of its uncommitted work are kept.", termsafe.Escape(a.Group, 40))
		}
	}
	m.pane(line, "Close", wrap(what+" y closes, any other key keeps it.", m.width-2), rows)
}

// wrap breaks s into lines of at most width cells, between words.
func wrap(s string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		if cur != "" && ansi.StringWidth(cur+" "+w) > width {
			lines, cur = append(lines, cur), w
			continue
		}
		cur = strings.TrimSpace(cur + " " + w)
	}
	return append(lines, cur)
}

func check(on bool) string {
	if on {
		return "x"
	}
	return " "
}

func valueOr(s, or string) string {
	if s == "" {
		return or
	}
	return termsafe.Escape(s, 200)
}

// pane draws a heading and text in rows lines.
func (m Model) pane(line func(string), title string, text []string, rows int) {
	line(heading(title, m.width))
	for i := range rows - 1 {
		s := ""
		if i < len(text) {
			s = " " + text[i]
		}
		line(fit(s, m.width))
	}
}

func (m Model) statusLine() string {
	if m.mode == modeConfirm {
		return styleError.Render(fit("y closes, any other key keeps it", m.width))
	}
	if m.configErr != nil && m.status == "" {
		return styleError.Render(fit("config.toml not applied: "+termsafe.Escape(m.configErr.Error(), 300), m.width))
	}
	s := termsafe.Escape(m.status, 4*m.width)
	if strings.HasPrefix(s, "error: ") {
		return styleError.Render(fit(s, m.width))
	}
	return fit(s, m.width)
}

func (m Model) keysLine() string {
	switch m.mode {
	case modeFilter:
		return "type to filter · Enter keeps it · Esc clears"
	case modeNewLead:
		return "Tab next field · Enter opens the lead · Esc cancels"
	case modeSettings:
		return "d toggle discovery · Esc back"
	case modeChanges:
		return "↑↓ j k PgUp PgDn scroll · ←→ h l sideways · g G top, end · Esc closes"
	}
	return "Enter attach · x close · n new lead · s settings · / filter · ? help · q quit"
}

// fit cuts s (plain text) to width cells and pads it to them.
func fit(s string, width int) string {
	return pad(s, width)
}

func pad(s string, width int) string {
	if w := ansi.StringWidth(s); w > width {
		return ansi.Truncate(s, width, "…")
	} else if w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return s
}

func cut(s string, n int) string { return ansi.Truncate(termsafe.Escape(s, 4*n), n, "…") }
