package ui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// asked is what one Ask returned.
type asked struct {
	secret api.Secret
	err    error
}

// ask puts p to q on a goroutine of its own, as the app does, and waits until it is queued.
func ask(t *testing.T, ctx context.Context, q *Prompts, p app.Prompt) <-chan asked {
	t.Helper()
	out := make(chan asked, 1)
	go func() {
		s, err := q.Ask(ctx, p)
		out <- asked{s, err}
	}()
	queued := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		for _, pd := range q.queue {
			if pd.prompt.ID == p.ID {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !queued(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prompt %s was not queued", p.ID)
		}
	}
	return out
}

func answered(t *testing.T, ch <-chan asked) asked {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return")
		return asked{}
	}
}

// TestPromptModal: git's prompt shows as a modal over the agents, naming the terminal and host
// that raised it; what the person types is masked on the screen; Enter gives it to the Ask
// that waits, and only to it; Esc refuses the next; a prompt whose git left closes.
func TestPromptModal(t *testing.T) {
	q := NewPrompts()
	m := model(t)
	m.opts.Prompts = q
	first := ask(t, context.Background(), q, app.Prompt{ID: "p1", Environment: "build", Terminal: 4, Host: "buildbox", Kind: api.AskPassword, Text: "Password for 'https://pat@git.example.com': "})
	m = update(t, m, promptsMsg{})
	got := prose(m)
	for _, want := range []string{"Git asks", "git in terminal build:4, on buildbox, asks:", "Password for 'https://pat@git.example.com':", "Esc refuses"} {
		if !strings.Contains(got, want) {
			t.Errorf("the modal lacks %q:\n%s", want, screen(m))
		}
	}
	m = update(t, m, typed("s3cret-pass")...)
	if strings.Contains(screen(m), "s3cret-pass") {
		t.Errorf("the answer shows on the screen:\n%s", screen(m))
	}
	second := ask(t, context.Background(), q, app.Prompt{ID: "p2", Environment: "main", Terminal: 2, Host: "this computer", Kind: api.AskUsername, Text: "Username: "})
	m = update(t, m, key("enter"))
	if a := answered(t, first); a.err != nil || a.secret.Reveal() != "s3cret-pass" {
		t.Errorf("the first Ask got %v, %v; want the answer typed", a.secret, a.err)
	}
	if !strings.Contains(prose(m), "git in terminal main:2, on this computer, asks: Username:") {
		t.Errorf("the second prompt is not shown after the first:\n%s", screen(m))
	}
	if strings.Contains(screen(m), "s3cret-pass") || strings.Contains(m.status, "s3cret") {
		t.Errorf("the answer is left on the screen:\n%s", screen(m))
	}
	m = update(t, m, typed("x")...)
	m = update(t, m, key("esc"))
	if a := answered(t, second); !errors.Is(a.err, ErrRefused) || !a.secret.IsZero() {
		t.Errorf("the refused Ask got %v, %v; want ErrRefused", a.secret, a.err)
	}
	if m.prompt != nil || strings.Contains(screen(m), "Git asks") {
		t.Errorf("the modal stays after the last prompt:\n%s", screen(m))
	}

	// The git that asked leaves: its modal closes, and keys go to the list again.
	ctx, cancel := context.WithCancel(context.Background())
	third := ask(t, ctx, q, app.Prompt{ID: "p3", Environment: "main", Terminal: 3, Host: "this computer", Text: "Passphrase: "})
	m = update(t, m, promptsMsg{})
	if !strings.Contains(prose(m), "Passphrase:") {
		t.Fatalf("the third prompt is not shown:\n%s", screen(m))
	}
	cancel()
	if a := answered(t, third); !errors.Is(a.err, context.Canceled) {
		t.Errorf("the left Ask got %v", a.err)
	}
	m = update(t, m, promptsMsg{})
	if m.prompt != nil {
		t.Errorf("the modal of a git that left stays:\n%s", screen(m))
	}

	// The UI closes with a prompt open: it is refused, and so is every later one.
	fourth := ask(t, context.Background(), q, app.Prompt{ID: "p4", Environment: "main", Terminal: 2, Host: "this computer", Text: "Password: "})
	q.Close()
	if a := answered(t, fourth); a.err == nil {
		t.Error("a prompt open as the UI closed was not refused")
	}
	if _, err := q.Ask(context.Background(), app.Prompt{ID: "p5"}); err == nil {
		t.Error("a prompt after the UI closed was not refused")
	}
}
