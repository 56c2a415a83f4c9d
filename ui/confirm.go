package ui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// The close confirmation (x, X): what a close takes away, and what it keeps.

// confirmKey is the answer to the question whether to close: y closes, any other key keeps.
func (m Model) confirmKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	key := k.String()
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
}

// retiring says what a group's retire does, of the group named as group ("group fix-1", "a
// group"), for which force is how the person removes a held checkout: what is kept (the
// uncommitted work as a snapshot, the branch when it holds work), what goes (the checkout), and
// when the checkout stays instead (a nested repository, a submodule with work of its own: the
// group is held). Which of the two happens is known only as the group retires.
func retiring(group, force string) string {
	return fmt.Sprintf("%s retires: its uncommitted work is kept as a snapshot, and its branch if it holds any work; then its checkout is removed, unless it holds a repository of its own (a .git in a folder of it) or a submodule with work of its own, which a snapshot cannot keep: then the checkout stays, held, until that work is moved out or %s removes it.",
		group, force)
}

// confirmPane says what a close takes away, and what it keeps.
func (m Model) confirmPane(line func(string), rows int) {
	a := m.confirm
	var what string
	if m.session {
		what = fmt.Sprintf("Close the session of %s (%q)? Its %d workers end; the lead stays. A group whose last terminal goes %s",
			a.ID(), termsafe.Escape(a.Title, 60), m.workersOf(a), strings.TrimPrefix(retiring("", "krad retire --force GROUP"), " "))
	} else {
		what = fmt.Sprintf("Close %s (%s %q)? Its window and its process end.", a.ID(), a.Role, termsafe.Escape(a.Title, 60))
		if n := m.workersOf(a); a.Role == api.RoleLead && n > 0 {
			what += fmt.Sprintf(" Its %d workers keep running (X closes them).", n)
		}
		if a.Group != "" {
			g := termsafe.Escape(a.Group, 40)
			what += fmt.Sprintf(" If it is group %s's last terminal, %s", g, retiring("the group", "krad retire --force "+g))
		}
	}
	m.pane(line, "Close", wrap(what+" y closes, any other key keeps it.", m.width-2), rows)
}
