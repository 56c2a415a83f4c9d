package ui

// The help (?).

func (m Model) helpPane(line func(string), rows int) {
	text := []string{
		"↑/k ↓/j  move        PgUp/PgDn g/G  page, first, last",
		"Enter    attach: tmux takes the terminal; detach (C-b d) comes back",
		"x        close the agent's terminal (asks first); X a lead's workers",
		"n        name a new lead: title, command, environment, folder",
		"s        settings: discovery (Let other programs find the agents API), notify",
		"c        the agent's group's changes: its files, then the patch; Esc closes",
		"p / P    push the agent's group's branch / and open a pull request (gh); git asks here",
		"/        filter by id, title, role, state, session, group; Esc clears",
		"?        this help      q  quit: the terminals keep running",
		"* marks an agent that needs you (needs input, failed, idle after working) until seen;",
		"b        rings the terminal's bell when one comes to need you (off at start)",
		"FROM     reported: the agent told its state (its hooks); screen: the app read it",
		"         from the terminal. An agent that needs you, or a variant set that ends, is",
		"         said on the status line, and on the desktop with notify on (s, n)",
	}
	if m.opts.LogFile != "" {
		text = append(text, "log file: "+m.opts.LogFile)
	}
	m.pane(line, "Help (any key goes back)", text, rows)
}
