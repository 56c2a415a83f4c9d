package ui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/internal/termsafe"
)

// The settings (s): the switches the UI writes to config.toml, and the config as the app applies
// it.

func (m Model) waitSettings() tea.Cmd {
	if m.opts.Settings == nil {
		return nil
	}
	return m.waitFor(m.opts.Settings.notify, settingsMsg{})
}

// settingsKey is a key on the settings: d toggles discovery, n notify.
func (m Model) settingsKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "d", "space", " ", "enter":
		on := !m.settings.Discovery
		set := m.opts.SetDiscovery
		return m, func() tea.Msg { return switchMsg{key: "discovery", on: on, err: set(on)} }
	case "n":
		on := !m.settings.Notify
		set := m.opts.SetNotify
		if set == nil {
			return m, nil
		}
		return m, func() tea.Msg { return switchMsg{key: "notify", on: on, err: set(on)} }
	case "esc", "s", "q":
		m.mode = modeList
	}
	return m, nil
}

func (m Model) settingsPane(line func(string), rows int) {
	c := m.settings
	text := []string{
		fmt.Sprintf("[%s] Let other programs find the agents API (discovery)   d or Enter toggles", check(c.Discovery)),
		fmt.Sprintf("[%s] Desktop notifications when an agent needs you (notify)   n toggles", check(c.Notify)),
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
