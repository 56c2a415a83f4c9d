package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
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

// Prompt is one git prompt, as the person is shown it: which environment, terminal and host
// raised it, proven by the askpass key the app gave that terminal alone (or its own gits), and
// the program that ran the askpass, which is the askpass's word.
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
	// Program is the program that ran the askpass (git, ssh), as the askpass says: "" when it
	// did not say.
	Program string
	// Proof says what the app proved of who asks, and what it did not, for the modal.
	Proof string
}

// Timing of Askpass, and its limits per terminal, per environment and for the whole app.
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
	// The same for all the terminals of one environment, and for all of the app's: a prompt
	// the app's own gits raise (terminal 0) counts towards neither, so that no terminal keeps
	// them from the person.
	maxEnvOpenPrompts      = 4
	maxEnvPromptsPerMinute = 20
	maxAppOpenPrompts      = 8
	maxAppPromptsPerMinute = 40
)

// Proofs a Prompt carries.
const (
	proofTerminal = "Proven: the askpass holds the key the app gave that terminal alone. Not proven: the program's name, which the askpass gives."
	proofApp      = "Proven: the askpass holds the key the app gives its own gits alone, for this run. Not proven: the program's name, which the askpass gives."
)

// headlessHint is how a person avoids git's prompts when the app has no UI to ask them in.
const headlessHint = "no one can answer git's prompt: the app runs headless, without its UI. Let git find the credential itself (git config --global credential.helper store or cache, a keychain; ssh-agent for SSH keys), or answer in the terminal: unset GIT_ASKPASS there"

// prompts are the git prompts open now.
type prompts struct {
	mu       sync.Mutex
	prompter Prompter
	open     map[string]*pending
	started  map[string][]time.Time // per terminal key (and envScope, appScope), the starts of the last minute
	headless map[string]time.Time   // per terminal key, when the log last said a prompt found no UI
	refused  map[string]time.Time   // per environment, when the log last said a prompt was refused
	// own is, per environment, the askpass key of the gits the app runs itself there
	// (api.VarAskpassKey): made when the first of them runs, kept for this run of the app only,
	// in no terminal's environment and no file.
	own map[string]api.Token
}

// Scopes of the rate limits in prompts.started, beside the terminals' keys (environment:number).
const (
	envScope = "env "
	appScope = "app"
)

type pending struct {
	key    string // environment:terminal
	own    bool   // raised by the app's own gits (terminal 0)
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
	p.refused = map[string]time.Time{}
	p.own = map[string]api.Token{}
}

// ownKey is the askpass key of the gits the app runs itself in environment env.
func (p *prompts) ownKey(env string) (api.Token, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.own[env]; ok {
		return k, nil
	}
	k, err := api.NewToken()
	if err != nil {
		return api.Token{}, fmt.Errorf("make the askpass key of the app's own gits: %w", err)
	}
	p.own[env] = k
	return k, nil
}

// newAskKey makes a terminal's askpass key, and the hash of it that its window's @krad keeps
// (windowMeta.Ask), so that a restarted app still knows it without the key being kept anywhere.
func newAskKey() (api.Token, string, error) {
	k, err := api.NewToken()
	if err != nil {
		return api.Token{}, "", fmt.Errorf("make the terminal's askpass key: %w", err)
	}
	return k, askHash(k.Reveal()), nil
}

// askHash is the hash of an askpass key that a window's @krad keeps.
func askHash(key string) string {
	h := sha256.Sum256([]byte("krad-ade askpass key\x00" + key))
	return hex.EncodeToString(h[:])
}

// prove says whether the Askpass b of environment e's Git caller holds the key of the terminal it
// names (or of the app's own gits, for terminal 0), and the Proof for its modal. A prompt that
// does not is refused before anything is held, and never reaches the person. app.mu must be held.
func (a *App) proveLocked(e *environment, b *api.AskpassBody) (string, error) {
	if b.Terminal == 0 {
		a.prompts.mu.Lock()
		own, ok := a.prompts.own[e.name]
		a.prompts.mu.Unlock()
		if !ok || b.Key == "" || subtle.ConstantTimeCompare([]byte(b.Key), []byte(own.Reveal())) != 1 {
			return "", api.Errorf(api.CodeForbidden, "a git prompt naming terminal 0 of %s, the app's own gits, came without their askpass key: only the gits the app runs itself may ask as the app", e.name)
		}
		return proofApp, nil
	}
	id := api.TerminalID{Environment: e.name, Terminal: b.Terminal}
	t := e.terminals[b.Terminal]
	if t == nil || t.dead {
		return "", api.Errorf(api.CodeNotFound, "a git prompt names terminal %s, which is not a live terminal of %s", id, e.name)
	}
	if t.askHash == "" {
		return "", api.Errorf(api.CodeForbidden, "terminal %s has no askpass key (it was opened by hand, or by an earlier version of the app), so its git prompts cannot be told from another terminal's: answer in the terminal (unset GIT_ASKPASS there), or open a new terminal", id)
	}
	if b.Key == "" || subtle.ConstantTimeCompare([]byte(askHash(b.Key)), []byte(t.askHash)) != 1 {
		return "", api.Errorf(api.CodeForbidden, "a git prompt naming terminal %s came without that terminal's askpass key: a terminal may raise prompts in its own name only", id)
	}
	return proofTerminal, nil
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
	var proof string
	var perr error
	if e != nil {
		proof, perr = a.proveLocked(e, b)
	}
	a.mu.Unlock()
	if e == nil {
		return nil, api.Errorf(api.CodeNotFound, "the Git caller names environment %s, which this app does not have (the environments are %s)", env, joinNames(a.Environments()))
	}
	if perr != nil {
		a.prompts.logRefused(a, env, b, perr)
		return nil, perr
	}
	p := &a.prompts
	p.mu.Lock()
	var pd *pending
	var id string
	if b.Pending != "" {
		id = b.Pending
		pd = p.open[id]
		if pd == nil || pd.key != env+":"+strconv.Itoa(b.Terminal) {
			p.mu.Unlock()
			return nil, api.Errorf(api.CodeNotFound, "no open git prompt has that id: it was answered, refused or given up")
		}
	} else {
		var err error
		if id, pd, err = p.startLocked(a, e, b, proof); err != nil {
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
func (p *prompts) startLocked(a *App, e *environment, b *api.AskpassBody, proof string) (string, *pending, error) {
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
	if err := p.roomLocked(key, env, b.Terminal, now); err != nil {
		return "", nil, err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	limit := a.cfg.AskpassLimit
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	pd := &pending{key: key, own: b.Terminal == 0, cancel: cancel, done: make(chan struct{})}
	p.open[id] = pd
	host := "this computer"
	if env != Local {
		host = e.ssh
	}
	prompt := Prompt{ID: id, Environment: env, Terminal: b.Terminal, Host: host, Kind: b.Kind,
		Text: termsafe.Escape(b.Prompt, api.MaxPrompt), Program: b.Program, Proof: proof}
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

// roomLocked says whether terminal key of environment env may open another prompt now, within
// the limits of the terminal, of the environment and of the app, and counts it when it may.
// p.mu is held.
func (p *prompts) roomLocked(key, env string, terminal int, now time.Time) error {
	recent := func(scope string) []time.Time {
		kept := p.started[scope][:0]
		for _, t := range p.started[scope] {
			if now.Sub(t) < time.Minute {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			delete(p.started, scope)
			return nil
		}
		p.started[scope] = kept
		return kept
	}
	var open, envOpen, appOpen int
	for _, pd := range p.open {
		if pd.key == key {
			open++
		}
		if pd.own {
			continue
		}
		appOpen++
		if strings.HasPrefix(pd.key, env+":") {
			envOpen++
		}
	}
	if open >= maxOpenPrompts || len(recent(key)) >= maxPromptsPerMinute {
		return api.Errorf(api.CodeConflict, "terminal %s has asked too many git prompts (at most %d open at once and %d a minute): answer or refuse the open ones first", key, maxOpenPrompts, maxPromptsPerMinute)
	}
	scopes := []string{key}
	if terminal != 0 {
		if envOpen >= maxEnvOpenPrompts || len(recent(envScope+env)) >= maxEnvPromptsPerMinute {
			return api.Errorf(api.CodeConflict, "the terminals of %s have asked too many git prompts (at most %d open at once and %d a minute): answer or refuse the open ones first", env, maxEnvOpenPrompts, maxEnvPromptsPerMinute)
		}
		if appOpen >= maxAppOpenPrompts || len(recent(appScope)) >= maxAppPromptsPerMinute {
			return api.Errorf(api.CodeConflict, "the terminals have asked too many git prompts (at most %d open at once and %d a minute in all): answer or refuse the open ones first", maxAppOpenPrompts, maxAppPromptsPerMinute)
		}
		scopes = append(scopes, envScope+env, appScope)
	}
	for _, s := range scopes {
		p.started[s] = append(p.started[s], now)
	}
	return nil
}

// logRefused says in the log, once a minute per environment, that a prompt was refused for its
// proof, so that a flood of forged prompts floods nothing.
func (p *prompts) logRefused(a *App, env string, b *api.AskpassBody, err error) {
	now := time.Now()
	p.mu.Lock()
	say := now.Sub(p.refused[env]) >= time.Minute
	if say {
		p.refused[env] = now
	}
	p.mu.Unlock()
	if say {
		a.log.Warn("git's prompt refused, not shown to the person", "from", "Git "+env, "terminal", b.Terminal, "err", err)
	}
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
