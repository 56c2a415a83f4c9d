package ui

import (
	"fmt"
	"strings"

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
	stateStyles   = map[api.State]lipgloss.Style{
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
		return "d toggle discovery · n toggle notify · Esc back"
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
