package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// The changes view (c): a group's Changes, as the bus's Changes request answers the group's
// terminal, in a scrollable viewport: the commits and the files with their line counts, then the
// patch, its added, deleted and hunk lines coloured (plain under NO_COLOR, where the renderer
// drops colours; the + and - stay). The patch is the files' bytes as they are, so every line is
// escaped (internal/termsafe) before it is styled: nothing in a file can act on the terminal. An
// error is shown as an error, never as no changes.

// Styles of the patch's lines.
var (
	styleAdded   = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleDeleted = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
	styleHunk    = lipgloss.NewStyle().Foreground(lipgloss.Color("6"))
)

// maxPatchLine is how many bytes of one line of a patch are shown; the rest is marked cut.
const maxPatchLine = 2000

// changesView is the open changes view.
type changesView struct {
	of      api.TerminalID // the agent whose group it shows
	group   string
	loading bool
	err     error
	vp      viewport.Model
}

// changesMsg is a group's Changes as the app answered them.
type changesMsg struct {
	of      api.TerminalID
	changes worktree.Changes
	err     error
}

// openChanges opens the view on agent a's group and asks the app for its changes.
func (m Model) openChanges(a api.Agent) (tea.Model, tea.Cmd) {
	if a.Group == "" {
		m.status = "c shows a group's changes: " + a.ID().String() + " works in no group"
		return m, nil
	}
	if m.opts.App == nil {
		return m, nil
	}
	m.mode = modeChanges
	m.changes = changesView{of: a.ID(), group: a.Group, loading: true, vp: viewport.New()}
	m.sizeChanges()
	m.changes.vp.SetContentLines([]string{"reading the changes of group " + termsafe.Escape(a.Group, 100) + "…"})
	id, app, ctx := a.ID(), m.opts.App, m.ctx
	return m, func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, time.Minute) // Changes' deadline on the bus
		defer cancel()
		c, err := app.Changes(ctx, id)
		return changesMsg{of: id, changes: c, err: err}
	}
}

// gotChanges shows what the app answered, if the view still waits for it.
func (m *Model) gotChanges(msg changesMsg) {
	if m.mode != modeChanges || m.changes.of != msg.of || !m.changes.loading {
		return // closed, or opened on another agent since
	}
	m.changes.loading = false
	if msg.err != nil {
		m.changes.err = msg.err
		m.status = "error: the changes of group " + m.changes.group + ": " + msg.err.Error()
		m.changes.vp.SetContentLines(wrap("error: the changes of group "+termsafe.Escape(m.changes.group, 100)+" could not be read: "+
			termsafe.Escape(msg.err.Error(), 2000), max(20, m.width-2)))
		return
	}
	m.changes.vp.SetContentLines(changesLines(msg.changes))
}

// sizeChanges fits the viewport to the pane.
func (m *Model) sizeChanges() {
	m.changes.vp.SetWidth(max(1, m.width-1))
	m.changes.vp.SetHeight(max(1, m.layout().changesRows()-1))
}

// changesKey is a key while the view is open: Esc or q closes it, the rest scrolls.
func (m Model) changesKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc", "q", "c":
		m.mode = modeList
		m.changes = changesView{}
		return m, nil
	case "home", "g":
		m.changes.vp.GotoTop()
		return m, nil
	case "end", "G":
		m.changes.vp.GotoBottom()
		return m, nil
	}
	var cmd tea.Cmd
	m.changes.vp, cmd = m.changes.vp.Update(k)
	return m, cmd
}

// changesPane draws the view in rows lines.
func (m Model) changesPane(line func(string), rows int) {
	c := m.changes
	title := "Changes of group " + termsafe.Escape(c.group, 40) + " (" + c.of.String() + ")"
	if !c.loading && c.err == nil && c.vp.TotalLineCount() > c.vp.Height() {
		title += fmt.Sprintf("  %d%%", int(c.vp.ScrollPercent()*100))
	}
	line(heading(title, m.width))
	lines := strings.Split(c.vp.View(), "\n")
	for i := range rows - 1 {
		s := ""
		if i < len(lines) {
			s = " " + lines[i]
		}
		if c.err != nil {
			s = styleError.Render(s)
		}
		line(fit(s, m.width))
	}
}

// changesLines are a group's changes as the view shows them: what it is compared with, its
// commits, its files with their counts (and why a file's patch is left out), then the patch.
func changesLines(c worktree.Changes) []string {
	head := "its checkout"
	if c.Head != "" {
		head = short(c.Head)
	}
	out := []string{fmt.Sprintf("group %s: %s against its base %s", termsafe.Escape(c.Group, 100), head, short(c.Base))}
	if len(c.Files) == 0 {
		return append(out, "", "no changes since its base: no commits, no changed or new files")
	}
	for _, cm := range c.Commits {
		out = append(out, "  commit "+short(cm.Hash)+" "+termsafe.Escape(cm.Subject, 200))
	}
	if c.MoreCommits {
		out = append(out, fmt.Sprintf("  and more commits (the first %d are listed)", len(c.Commits)))
	}
	out = append(out, "")
	added, deleted := 0, 0
	for _, f := range c.Files {
		name := termsafe.Escape(f.Path, 1000)
		if f.OldPath != "" {
			name = termsafe.Escape(f.OldPath, 1000) + " → " + name
		}
		counts := fmt.Sprintf("%s %s", styleAdded.Render(fmt.Sprintf("+%d", f.Added)), styleDeleted.Render(fmt.Sprintf("-%d", f.Deleted)))
		if f.Binary {
			counts = "binary"
		}
		s := fmt.Sprintf(" %-2s %s  %s", termsafe.Escape(f.Status, 4), name, counts)
		if f.LeftOut != "" {
			s += "  (patch left out: " + termsafe.Escape(f.LeftOut, 40) + ")"
		}
		out = append(out, s)
		added += f.Added
		deleted += f.Deleted
	}
	out = append(out, fmt.Sprintf(" %d %s changed, %d insertions(+), %d deletions(-)", len(c.Files), plural(len(c.Files), "file", "files"), added, deleted))
	if c.Patch == "" {
		return out
	}
	out = append(out, "")
	for _, l := range strings.Split(strings.TrimSuffix(c.Patch, "\n"), "\n") {
		out = append(out, patchLine(l))
	}
	return out
}

// patchLine is one line of a patch as the view shows it: tabs expanded, every other byte that is
// not graphic escaped, then styled by what the line is.
func patchLine(l string) string {
	s := termsafe.Escape(expandTabs(l), maxPatchLine)
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff --git "):
		return styleHeading.Render(s)
	case strings.HasPrefix(l, "+"):
		return styleAdded.Render(s)
	case strings.HasPrefix(l, "-"):
		return styleDeleted.Render(s)
	case strings.HasPrefix(l, "@@"):
		return styleHunk.Render(s)
	}
	return s
}

// expandTabs puts spaces for tabs, to the next multiple of 8 columns (counting bytes: a line of
// code's indentation is at its start).
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteByte(s[i])
		col++
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// short is a commit's hash as people read it.
func short(h string) string { return h[:min(len(h), 10)] }
