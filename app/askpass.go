package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Prompter is who answers git's credential prompts: the person, through the UI's modal. The app
// calls Ask once per prompt, on a goroutine of its own, and hands the answer once to the git that
// asked. Ask returns when the person answers, or with an error when they refuse (Esc: git then
// fails) or when ctx ends: the git went away, or no one answered in Config.AskpassLimit. A prompt is
// never shown to a lead or any agent, and never on a terminal's screen.
type Prompter interface {
	Ask(ctx context.Context, p Prompt) (api.Secret, error)
}

// Prompt is one git prompt, as the person is shown it. Since callers are declared, not proven,
// the modal says which environment, terminal and host raised it.
type Prompt struct {
	// ID is the prompt's id, unique in this run of the app.
	ID string
	// Environment and Terminal raised it; Terminal 0 is a git the app runs itself.
	Environment string
	Terminal    int
	// Host is "this computer" or the environment's SSH host.
	Host string
	// Kind is what git asks for: api.AskPassword, api.AskUsername, api.AskPassphrase or "".
	Kind string
	// Text is git's prompt, its control characters escaped for display.
	Text string
}

// Timing of Askpass, and its rate limit per terminal.
const (
	// AskpassPoll is how long one Askpass waits for the answer before it answers with the
	// prompt's pending id, well within the request's 10-second deadline.
	AskpassPoll = 4 * time.Second
	// DefaultAskpassLimit is how long a prompt stays open, over all of its polls, unless
	// Config.AskpassLimit says otherwise.
	DefaultAskpassLimit = 3 * time.Minute
	// askpassGone is how long a prompt stays open with no poll waiting on it: the git that
	// asked is taken to have left.
	askpassGone = 10 * time.Second
	// maxOpenPrompts is how many prompts one terminal may have open at once, and
	// maxPromptsPerMinute how many it may start in a minute.
	maxOpenPrompts      = 2
	maxPromptsPerMinute = 10
)

// headlessHint is how a person avoids git's prompts when the app has no UI to ask them in.
const headlessHint = "no one can answer git's prompt: the app runs headless, without its UI. Let git find the credential itself (git config --global credential.helper store or cache, a keychain; ssh-agent for SSH keys), or answer in the terminal: unset GIT_ASKPASS there"

// prompts are the git prompts open now.
type prompts struct {
	mu       sync.Mutex
	prompter Prompter
	open     map[string]*pending
	started  map[string][]time.Time // per terminal key, the starts of the last minute
	headless map[string]time.Time   // per terminal key, when the log last said a prompt found no UI
}

type pending struct {
	key    string // environment:terminal
	cancel context.CancelFunc
	done   chan struct{} // closed when answer or err is set
	answer api.Secret
	err    error
	polls  int       // polls waiting now
	idle   time.Time // when the last poll left; zero while one waits
}

func (p *prompts) init(pr Prompter) {
	p.prompter = pr
	p.open = map[string]*pending{}
	p.started = map[string][]time.Time{}
	p.headless = map[string]time.Time{}
}

// SetPrompter sets who answers git's prompts from now on: the UI once it runs. nil is headless.
func (a *App) SetPrompter(pr Prompter) {
	a.prompts.mu.Lock()
	defer a.prompts.mu.Unlock()
	a.prompts.prompter = pr
}

// askpass answers Askpass: a new prompt put to the person, or a poll on an open one. The answer
// is the prompt's pending id until the person answers; then the answer, once.
func (a *App) askpass(ctx context.Context, env string, b *api.AskpassBody) (any, error) {
	a.mu.Lock()
	e := a.envs[env]
	a.mu.Unlock()
	if e == nil {
		return nil, api.Errorf(api.CodeNotFound, "the Git caller names environment %s, which this app does not have (the environments are %s)", env, joinNames(a.Environments()))
	}
	p := &a.prompts
	p.mu.Lock()
	var pd *pending
	var id string
	if b.Pending != "" {
		id = b.Pending
		pd = p.open[id]
		if pd == nil || !strings.HasPrefix(pd.key, env+":") {
			p.mu.Unlock()
			return nil, api.Errorf(api.CodeNotFound, "no open git prompt has that id: it was answered, refused or given up")
		}
	} else {
		var err error
		if id, pd, err = p.startLocked(a, e, b); err != nil {
			p.mu.Unlock()
			return nil, err
		}
	}
	pd.polls++
	pd.idle = time.Time{}
	p.mu.Unlock()

	timer := time.NewTimer(AskpassPoll)
	defer timer.Stop()
	select {
	case <-pd.done:
		p.mu.Lock()
		_, mine := p.open[id]
		delete(p.open, id)
		p.mu.Unlock()
		if !mine { // another poll holding the id took it
			return nil, api.Errorf(api.CodeNotFound, "no open git prompt has that id: it was answered, refused or given up")
		}
		if pd.err != nil {
			return nil, pd.err
		}
		ans, err := api.AskpassAnswer{Secret: pd.answer}.Wire()
		pd.answer = api.Secret{}
		return ans, err
	case <-timer.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	pd.polls--
	if pd.polls == 0 {
		pd.idle = time.Now()
	}
	p.mu.Unlock()
	if errors.Is(ctx.Err(), context.Canceled) {
		// The git that asked left: the prompt goes from the UI unless another poll waits.
		p.mu.Lock()
		if pd.polls == 0 {
			pd.cancel()
		}
		p.mu.Unlock()
		return nil, ctx.Err()
	}
	return api.AskpassAnswer{Pending: id}.Wire()
}

// startLocked opens a prompt and puts it to the prompter. p.mu is held.
func (p *prompts) startLocked(a *App, e *environment, b *api.AskpassBody) (string, *pending, error) {
	env := e.name
	key := env + ":" + strconv.Itoa(b.Terminal)
	now := time.Now()
	if p.prompter == nil {
		// Said in the log once a minute per terminal, so that a person running the app headless
		// learns why git fails, and a flood of prompts floods nothing.
		if now.Sub(p.headless[key]) >= time.Minute {
			p.headless[key] = now
			a.log.Info("git's prompt refused: the app runs headless, with no UI to ask in", "from", "Git "+env, "terminal", b.Terminal, "kind", b.Kind)
		}
		return "", nil, api.Errorf(api.CodeUnavailable, "%s", headlessHint)
	}
	recent := p.started[key][:0]
	for _, t := range p.started[key] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	p.started[key] = recent
	open := 0
	for _, pd := range p.open {
		if pd.key == key {
			open++
		}
	}
	if open >= maxOpenPrompts || len(recent) >= maxPromptsPerMinute {
		return "", nil, api.Errorf(api.CodeConflict, "terminal %s has asked too many git prompts (at most %d open at once and %d a minute): answer or refuse the open ones first", key, maxOpenPrompts, maxPromptsPerMinute)
	}
	p.started[key] = append(recent, now)
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	limit := a.cfg.AskpassLimit
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	pd := &pending{key: key, cancel: cancel, done: make(chan struct{})}
	p.open[id] = pd
	host := "this computer"
	if env != Local {
		host = e.ssh
	}
	prompt := Prompt{ID: id, Environment: env, Terminal: b.Terminal, Host: host, Kind: b.Kind,
		Text: termsafe.Escape(b.Prompt, api.MaxPrompt)}
	// Who asked, never what was answered.
	a.log.Info("git's prompt put to the person", "from", "Git "+env, "terminal", b.Terminal, "host", host, "kind", b.Kind)
	pr := p.prompter
	go func() {
		secret, err := pr.Ask(ctx, prompt)
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = api.Errorf(api.CodeUnavailable, "no one answered git's prompt in %v", limit)
		case ctx.Err() != nil:
			err = api.Errorf(api.CodeUnavailable, "git's prompt was given up: the git that asked left")
		case err != nil:
			err = api.Errorf(api.CodeForbidden, "the person refused git's prompt")
		}
		p.mu.Lock()
		pd.answer, pd.err = secret, err
		if err != nil {
			pd.answer = api.Secret{}
		}
		p.mu.Unlock()
		close(pd.done)
		cancel()
	}()
	go p.reap(id, pd)
	return id, pd, nil
}

// reap gives up a prompt that no poll has waited on for askpassGone, and forgets an answer no
// poll came back for.
func (p *prompts) reap(id string, pd *pending) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-pd.done:
			// Wait for the poll that takes the answer; forget it if none comes.
			time.Sleep(askpassGone)
			p.mu.Lock()
			if p.open[id] == pd {
				delete(p.open, id)
				pd.answer = api.Secret{}
			}
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		gone := pd.polls == 0 && !pd.idle.IsZero() && time.Since(pd.idle) > askpassGone
		p.mu.Unlock()
		if gone {
			pd.cancel()
		}
	}
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
