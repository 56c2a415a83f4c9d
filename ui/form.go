package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/app"
)

// The new-lead form (n): a lead opened as a [[terminal]] with lead = true would be.

// openForm shows the new lead's form, empty but for the environment: this computer's.
func (m Model) openForm() (tea.Model, tea.Cmd) {
	m.mode, m.focus = modeNewLead, 0
	for i := range m.form {
		m.form[i].SetValue("")
		m.form[i].Blur()
	}
	m.form[2].SetValue(app.Local)
	return m, m.form[0].Focus()
}

// formKey is a key on the new lead's form: Tab and the arrows move, Enter on the last field
// opens the lead, Esc cancels.
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
			Agent:       strings.TrimSpace(m.form[4].Value()),
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

// checkLead says what is wrong with a lead before the app is asked, in the config's words. The
// app says whether an agent is one of its profiles.
func (m Model) checkLead(s app.TerminalSpec) string {
	if s.Agent != "" && s.Command != "" {
		return "a lead runs a command or an agent, not both: empty one of them"
	}
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

func (m Model) formPane(line func(string), rows int) {
	text := []string{"A new lead, opened as a [[terminal]] with lead = true would be. Tab moves, Enter on the last field opens it, Esc cancels.", ""}
	for _, f := range m.form {
		text = append(text, f.View())
	}
	text = append(text, "", "command empty: your shell; folder empty: the environment's",
		"agent: an [[agent]]'s name, in place of a command: it tells its own state")
	m.pane(line, "New lead", text, rows)
}
