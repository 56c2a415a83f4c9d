package ui

import (
	"context"
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A notice is what the person is told when an agent comes to need them (needs_input) or a
// variant set ends: the UI's status line always says it; with notify on (config.toml), a desktop
// notification says it too, where one can be sent:
//
//   - to the terminal the UI runs in, as an escape sequence the terminal turns into one: OSC 777
//     (notify;title;body) for the terminals that take that one (foot, rxvt), OSC 9 (the body)
//     for the others that do (iTerm2, WezTerm, Ghostty, Windows Terminal, kitty); a terminal that
//     takes neither ignores it. Inside tmux it goes through tmux's passthrough (a DCS tmux;
//     sequence), which tmux passes on to its own terminal once `set -g allow-passthrough on`;
//   - with notify-send (libnotify), when this computer has it, on a desktop.
//
// What an agent said goes in it: titles and messages are made one line of text, at most
// noticeMax bytes, without a character that could end the sequence or drive the terminal.

// noticeMax bounds a notice's title and its body.
const noticeMax = 200

// Desktop is how the UI sends a notice outside its own screen.
type Desktop struct {
	// Term is the TERM of the terminal the UI runs in, and InTmux whether that is a tmux pane
	// (TMUX is set): which sequence it takes, and how.
	Term   string
	InTmux bool
	// Send runs notify-send, or what stands for it; nil sends nothing that way.
	Send func(ctx context.Context, title, body string) error
}

// NotifySend is Desktop.Send with notify-send found on PATH, or nil when there is none.
func NotifySend() func(ctx context.Context, title, body string) error {
	path, err := exec.LookPath("notify-send")
	if err != nil {
		return nil
	}
	return func(ctx context.Context, title, body string) error {
		return exec.CommandContext(ctx, path, "--app-name=krad-ade", "--", title, body).Run()
	}
}

// noticeText makes s fit in a notice: one line, no control character, ';' (a field separator of
// OSC 777) made ',', cut to noticeMax bytes.
func noticeText(s string) string {
	s = strings.ReplaceAll(api.CleanMessage(s), ";", ",")
	return termsafe.Cut(s, noticeMax)
}

// sequence is the escape sequence that asks the terminal for a notification of title and body.
func (d Desktop) sequence(title, body string) string {
	title, body = noticeText(title), noticeText(body)
	var seq string
	switch {
	case strings.HasPrefix(d.Term, "foot"), strings.HasPrefix(d.Term, "rxvt"):
		seq = "\x1b]777;notify;" + title + ";" + body + "\x07"
	default:
		seq = "\x1b]9;" + title + ": " + body + "\x07"
	}
	if d.InTmux {
		// tmux's passthrough: the sequence, its escapes doubled, in a DCS that tmux unwraps.
		seq = "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return seq
}

// notice tells the person title and body: on the status line, and, with notify on, on the
// desktop. It returns what sends the desktop notification, nil for none.
func (m *Model) notice(title, body string) tea.Cmd {
	m.status = title + ": " + body
	if !m.settings.Notify {
		return nil
	}
	d := m.opts.Desktop
	cmds := []tea.Cmd{tea.Raw(d.sequence(title, body))}
	if d.Send != nil {
		send, ctx := d.Send, m.ctx
		title, body := noticeText(title), noticeText(body)
		cmds = append(cmds, func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = send(ctx, title, body) // a desktop without a notification service says nothing
			return nil
		})
	}
	return tea.Batch(cmds...)
}
