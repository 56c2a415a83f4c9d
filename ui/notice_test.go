package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
)

// sent records what notify-send was given.
type sent struct {
	mu    sync.Mutex
	calls []string
}

func (s *sent) send(_ context.Context, title, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, title+" | "+body)
	return nil
}

// noticeModel is a UI with notify as given, on a terminal of term, in tmux or not.
func noticeModel(t *testing.T, notify bool, term string, inTmux bool) (Model, *sent) {
	t.Helper()
	s := &sent{}
	m := model(t)
	m.opts.Desktop = Desktop{Term: term, InTmux: inTmux, Send: s.send}
	m.opts.Settings = NewSettings(config.Config{Discovery: true, Notify: notify})
	m.settings, _ = m.opts.Settings.get()
	return m, s
}

// TestNoticeOfNeedsInput: an agent that comes to needs_input is said on the status line, with its
// message, and, with notify on, on the desktop: an escape sequence to the UI's terminal (OSC 9,
// OSC 777 for foot and rxvt, in tmux's passthrough inside tmux) and notify-send. Its message
// cannot drive the terminal. With notify off the status line alone says it.
func TestNoticeOfNeedsInput(t *testing.T) {
	w := agent("main", 2, api.RoleWorker, api.StateNeedsInput, "tests")
	w.StateFrom, w.Message = api.StateFromReported, "Claude needs your permission to use Bash;\x07\x1b]0;x"
	for _, tt := range []struct {
		term   string
		inTmux bool
		notify bool
		want   string // the sequence
	}{
		{"xterm-256color", false, true, "\x1b]9;main:2 needs you: Claude needs your permission to use Bash, ]0,x\x07"},
		{"foot", false, true, "\x1b]777;notify;main:2 needs you;Claude needs your permission to use Bash, ]0,x\x07"},
		{"tmux-256color", true, true, "\x1bPtmux;\x1b\x1b]9;main:2 needs you: Claude needs your permission to use Bash, ]0,x\x07\x1b\\"},
		{"xterm-256color", false, false, ""},
	} {
		m, s := noticeModel(t, tt.notify, tt.term, tt.inTmux)
		next, cmd := m.Update(eventsMsg{events: []app.Event{changed(w)}})
		m = next.(Model)
		got := fmt.Sprint(collect(cmd))
		if tt.want != "" && !strings.Contains(got, tt.want) || tt.want == "" && strings.Contains(got, "\x1b]") {
			t.Errorf("%s (tmux %v, notify %v): sent %q, want %q", tt.term, tt.inTmux, tt.notify, got, tt.want)
		}
		if strings.Count(got, "\x07") > 1 {
			t.Errorf("%s: the message's BEL reached the terminal: %q", tt.term, got)
		}
		wantSend := []string{"main:2 needs you | Claude needs your permission to use Bash, ]0,x"}
		if !tt.notify {
			wantSend = nil
		}
		if fmt.Sprint(s.calls) != fmt.Sprint(wantSend) {
			t.Errorf("%s: notify-send got %q, want %q", tt.term, s.calls, wantSend)
		}
		if st := screen(m); !strings.Contains(st, "main:2 needs you: Claude needs your permission to use Bash") {
			t.Errorf("the status line does not say it:\n%s", st)
		}
	}
	// The same state again says nothing more; another message does.
	m, s := noticeModel(t, true, "xterm", false)
	next, cmd := m.Update(eventsMsg{events: []app.Event{changed(w)}})
	collect(cmd)
	next, cmd = next.(Model).Update(eventsMsg{events: []app.Event{changed(w)}})
	if got := fmt.Sprint(collect(cmd)); strings.Contains(got, "\x1b]9;") || len(s.calls) != 1 {
		t.Errorf("needs_input again: %q, notify-send %q", got, s.calls)
	}
	w.Message = "Claude is waiting for your input"
	_, cmd = next.(Model).Update(eventsMsg{events: []app.Event{changed(w)}})
	if got := fmt.Sprint(collect(cmd)); !strings.Contains(got, "\x1b]9;main:2 needs you: Claude is waiting for your input") || len(s.calls) != 2 {
		t.Errorf("another message: %q, notify-send %q", got, s.calls)
	}
}

// TestNoticeOfVariants: a variant set whose workers all settled is said as an agent that needs
// the person is.
func TestNoticeOfVariants(t *testing.T) {
	m, s := noticeModel(t, true, "xterm", false)
	next, cmd := m.Update(eventsMsg{events: []app.Event{{App: &api.AppEvent{Kind: api.VariantsSettled, Environment: "main",
		Message: "set retry: its 2 variants settled (main:4 idle, main:5 failed)"}}}})
	m = next.(Model)
	if got := fmt.Sprint(collect(cmd)); !strings.Contains(got, "\x1b]9;variants settled in main: set retry: its 2 variants settled (main:4 idle, main:5 failed)\x07") {
		t.Errorf("sent %q", got)
	}
	if len(s.calls) != 1 || !strings.Contains(screen(m), "variants settled in main: set retry") {
		t.Errorf("notify-send %q; the screen:\n%s", s.calls, screen(m))
	}
}

// TestWhereStatesCameFrom: the agents pane says where each state came from, and shows the
// agent's message beside its title.
func TestWhereStatesCameFrom(t *testing.T) {
	a := agent("main", 1, api.RoleLead, api.StateNeedsInput, "lead")
	a.StateFrom, a.Message = api.StateFromReported, "Claude needs your permission to use Bash"
	b := agent("main", 2, api.RoleWorker, api.StateIdle, "tests")
	b.StateFrom = api.StateFromScreen
	m := model(t, a, b)
	if r := row(t, m, "main:1"); !strings.Contains(r, "needs_input! reported") || !strings.Contains(r, "lead · Claude needs your p") {
		t.Errorf("main:1's row: %q", r)
	}
	if r := row(t, m, "main:2"); !strings.Contains(r, "idle         screen") {
		t.Errorf("main:2's row: %q", r)
	}
	if !strings.Contains(screen(m), "FROM") {
		t.Errorf("no FROM column:\n%s", screen(m))
	}
}

// TestNotifyToggle: s then n turns the desktop notifications off in config.toml.
func TestNotifyToggle(t *testing.T) {
	var wrote []bool
	m := New(context.Background(), Options{ConfigPath: "/c/config.toml", Settings: NewSettings(config.Config{Discovery: true, Notify: true}),
		SetNotify: func(on bool) error { wrote = append(wrote, on); return nil }})
	m = update(t, m, key("s"))
	if s := screen(m); !strings.Contains(s, "[x] Desktop notifications when an agent needs you (notify)") {
		t.Errorf("settings:\n%s", s)
	}
	next, cmd := m.Update(key("n"))
	m = update(t, next.(Model), collect(cmd)...)
	if len(wrote) != 1 || wrote[0] || !strings.Contains(prose(m), "notify off written to /c/config.toml") {
		t.Errorf("SetNotify calls %v; the screen:\n%s", wrote, screen(m))
	}
}
