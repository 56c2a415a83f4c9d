package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
)

// testPrompter stands in for the UI's modal: it records the prompts it is shown and answers each
// with what answer returns, or refuses when it returns an error. block holds every prompt until
// ctx ends, as a person who never answers.
type testPrompter struct {
	mu      sync.Mutex
	shown   []app.Prompt
	answer  func(app.Prompt) (string, error)
	block   bool
	gone    chan app.Prompt // prompts whose ctx ended
	started chan app.Prompt
}

func newTestPrompter(answer func(app.Prompt) (string, error)) *testPrompter {
	return &testPrompter{answer: answer, gone: make(chan app.Prompt, 16), started: make(chan app.Prompt, 16)}
}

func (p *testPrompter) Ask(ctx context.Context, pr app.Prompt) (api.Secret, error) {
	p.mu.Lock()
	p.shown = append(p.shown, pr)
	p.mu.Unlock()
	select {
	case p.started <- pr:
	default: // a benchmark, which reads none
	}
	if p.block {
		<-ctx.Done()
		p.gone <- pr
		return api.Secret{}, ctx.Err()
	}
	s, err := p.answer(pr)
	if err != nil {
		return api.Secret{}, err
	}
	return api.NewSecret(s), nil
}

func (h *harness) asGit(env string) *api.Client {
	return &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: api.Caller{Kind: api.CallerGit, Environment: env}}
}

// askpass asks as krad-ade-askpass does: polls until an answer.
func (h *harness) askpass(ctx context.Context, env string, b api.AskpassBody) (api.Secret, error) {
	c := h.asGit(env)
	for {
		a, err := c.Call(ctx, api.NewRequest(api.Askpass, &b))
		if err != nil {
			return api.Secret{}, err
		}
		var ans api.AskpassAnswer
		if err := a.Decode(api.AnswerAskpass, &ans); err != nil {
			return api.Secret{}, err
		}
		if !ans.Secret.IsZero() {
			return ans.Secret, nil
		}
		b.Pending = ans.Pending
	}
}

// TestAskpassRights: only the Git caller makes Askpass; a Git caller naming an environment the app
// does not have gets a clear not_found; headless, Askpass fails at once with the hint.
func TestAskpassRights(t *testing.T) {
	h := start(t, withTerminals(app.TerminalSpec{Title: "sh"}))
	b := &api.AskpassBody{Prompt: "Password: ", Kind: api.AskPassword, Terminal: 1}
	for _, c := range []*api.Client{h.as(1), h.as(0)} {
		if _, err := h.call(c, api.Askpass, b); code(err) != api.CodeForbidden {
			t.Errorf("Askpass as %v: %v, want forbidden", c.From, err)
		}
	}
	if _, err := h.call(h.asGit("nosuch"), api.Askpass, b); code(err) != api.CodeNotFound || !strings.Contains(err.Error(), "environments are main") {
		t.Errorf("Askpass naming no environment: %v, want not_found naming the environments", err)
	}
	_, err := h.call(h.asGit("main"), api.Askpass, b)
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "credential.helper") || !strings.Contains(err.Error(), "unset GIT_ASKPASS") {
		t.Errorf("Askpass headless: %v, want unavailable with the hint", err)
	}
}

// TestAskpassAnswered: the prompt reaches the Prompter escaped, with who raised it; the answer
// comes back once, to the poll holding the id; a refusal fails; too many prompts from one terminal
// are refused; a git that leaves cancels its prompt.
func TestAskpassAnswered(t *testing.T) {
	h := start(t, withTerminals(app.TerminalSpec{Title: "sh"}))
	release := make(chan struct{})
	p := newTestPrompter(func(pr app.Prompt) (string, error) {
		<-release
		if strings.Contains(pr.Text, "refuse") {
			return "", errors.New("refused")
		}
		return "hunter2", nil
	})
	h.app.SetPrompter(p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	got := make(chan error, 1)
	var secret api.Secret
	go func() {
		var err error
		secret, err = h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password for 'http://me@x': \x1b[2J", Kind: api.AskPassword, Terminal: 1})
		got <- err
	}()
	pr := <-p.started
	if pr.Environment != "main" || pr.Terminal != 1 || pr.Host != "this computer" || pr.Kind != api.AskPassword || strings.ContainsRune(pr.Text, 0x1b) {
		t.Errorf("the prompter was shown %+v", pr)
	}
	// Longer than one poll: the verb asks again with the id.
	time.Sleep(app.AskpassPoll + time.Second)
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("askpass: %v", err)
	}
	if secret.Reveal() != "hunter2" || fmt.Sprint(secret) != api.Redacted || fmt.Sprintf("%v %+v %#v %s", secret, secret, secret, secret) != strings.Repeat(api.Redacted+" ", 3)+api.Redacted {
		t.Errorf("the answer is %s, or prints its value", secret)
	}
	// Released once: the id answers nothing more.
	if _, err := h.call(h.asGit("main"), api.Askpass, &api.AskpassBody{Prompt: "x", Pending: pr.ID}); code(err) != api.CodeNotFound {
		t.Errorf("a second poll with the answered id: %v, want not_found", err)
	}
	// Refused: the verb fails.
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "refuse me", Terminal: 1}); code(err) != api.CodeForbidden {
		t.Errorf("a refused prompt: %v, want forbidden", err)
	}
	<-p.started

	// Too many at once from one terminal: the third is refused, the UI is not flooded.
	p.block = true
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = h.askpass(cctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2}) })
		<-p.started
	}
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2}); code(err) != api.CodeConflict {
		t.Errorf("a third open prompt of one terminal: %v, want conflict", err)
	}
	// Another terminal is not held up by it.
	wg.Go(func() { _, _ = h.askpass(cctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 3}) })
	<-p.started
	// The gits leave: their prompts are given up.
	ccancel()
	wg.Wait()
	for range 3 {
		select {
		case <-p.gone:
		case <-time.After(40 * time.Second):
			t.Fatal("a prompt whose git left was not given up in 40 s")
		}
	}
}
