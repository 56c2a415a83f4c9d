package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Prompts is the UI's side of git's prompts (design/ui.md, Git prompts): the app's Prompter while
// the UI runs. Ask queues a prompt, which the UI shows as a modal with a masked input, and waits
// for the person's answer, their refusal (Esc), the git that asked leaving (ctx), or the UI
// closing. The answer goes to the one Ask that waits for it, and nowhere else: not to the log,
// not to the screen.
type Prompts struct {
	mu     sync.Mutex
	queue  []*pending
	closed bool
	notify chan struct{}
}

// pending is one prompt waiting for the person; reply is buffered, answered at most once.
type pending struct {
	prompt app.Prompt
	reply  chan promptReply
}

type promptReply struct {
	secret api.Secret
	err    error
}

// ErrRefused is the answer of a prompt the person refused (Esc): git's prompt fails.
var ErrRefused = errors.New("the person refused the prompt")

// errUIClosed is the answer of a prompt open when the UI stopped, or put after.
var errUIClosed = errors.New("the app's UI closed with the prompt open")

// NewPrompts makes an empty queue.
func NewPrompts() *Prompts { return &Prompts{notify: make(chan struct{}, 1)} }

var _ app.Prompter = (*Prompts)(nil)

// Ask shows p to the person and waits for their answer.
func (q *Prompts) Ask(ctx context.Context, p app.Prompt) (api.Secret, error) {
	pd := &pending{prompt: p, reply: make(chan promptReply, 1)}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return api.Secret{}, errUIClosed
	}
	q.queue = append(q.queue, pd)
	q.mu.Unlock()
	q.poke()
	select {
	case r := <-pd.reply:
		return r.secret, r.err
	case <-ctx.Done():
		q.drop(pd) // the modal closes: the git that asked is gone
		return api.Secret{}, ctx.Err()
	}
}

// Close refuses the prompts open and every later one: the UI stopped.
func (q *Prompts) Close() {
	q.mu.Lock()
	open := q.queue
	q.queue, q.closed = nil, true
	q.mu.Unlock()
	for _, pd := range open {
		pd.reply <- promptReply{err: errUIClosed}
	}
	q.poke()
}

// first is the prompt to show, nil for none.
func (q *Prompts) first() *pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		return nil
	}
	return q.queue[0]
}

// answer gives pd its reply, if it still waits for one.
func (q *Prompts) answer(pd *pending, r promptReply) {
	if q.drop(pd) {
		pd.reply <- r
	}
}

// drop takes pd out of the queue; false when it was not in it (answered, or gone).
func (q *Prompts) drop(pd *pending) bool {
	q.mu.Lock()
	i := slices.Index(q.queue, pd)
	if i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
	}
	q.mu.Unlock()
	q.poke()
	return i >= 0
}

func (q *Prompts) poke() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (m Model) waitPrompts() tea.Cmd {
	if m.opts.Prompts == nil {
		return nil
	}
	return m.waitFor(m.opts.Prompts.notify, promptsMsg{})
}

// showPrompt shows the first prompt waiting, if it is not the one shown: a new one starts with
// an empty input.
func (m *Model) showPrompt() tea.Cmd {
	pd := m.opts.Prompts.first()
	if pd == m.prompt {
		return nil
	}
	m.prompt = pd
	m.secret.SetValue("")
	if pd == nil {
		m.secret.Blur()
		return nil
	}
	return m.secret.Focus()
}

// promptKey is a key while a prompt is shown: Enter answers it, Esc refuses it, the rest is
// typed into the masked input.
func (m Model) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	pd := m.prompt
	switch k.String() {
	case "enter":
		secret := api.NewSecret(m.secret.Value())
		m.secret.SetValue("")
		m.status = "answered git's prompt of " + promptWho(pd.prompt)
		m.opts.Prompts.answer(pd, promptReply{secret: secret})
	case "esc":
		m.secret.SetValue("")
		m.status = "refused git's prompt of " + promptWho(pd.prompt)
		m.opts.Prompts.answer(pd, promptReply{err: ErrRefused})
	default:
		var cmd tea.Cmd
		m.secret, cmd = m.secret.Update(k)
		return m, cmd
	}
	return m, m.showPrompt()
}

// promptWho names who raised a prompt, for the status line.
func promptWho(p app.Prompt) string {
	if p.Terminal == 0 {
		return p.Environment + " (the app's own git)"
	}
	return api.TerminalID{Environment: p.Environment, Terminal: p.Terminal}.String()
}

// promptPane is git's prompt as a modal: who raised it (the terminal, proven by its askpass key,
// or the app's own gits, proven by theirs), on which host, and what the app proved and did not,
// the prompt, and the masked input.
func (m Model) promptPane(line func(string), rows int) {
	p := m.prompt.prompt
	who := "the app's own git"
	if p.Terminal != 0 {
		who = "terminal " + api.TerminalID{Environment: p.Environment, Terminal: p.Terminal}.String()
	}
	program := cmp.Or(p.Program, "git") // checked by the app: a program's name, nothing else
	text := wrap(fmt.Sprintf("%s in %s, on %s, asks:", program, who, termsafe.Escape(p.Host, 80)), m.width-2)
	text = append(text, wrap(p.Text, m.width-2)...) // escaped by the app already
	if p.Proof != "" {
		text = append(text, "")
		text = append(text, wrap(p.Proof, m.width-2)...)
	}
	text = append(text, "", m.secret.View(), "", "Enter answers; Esc refuses (git fails). The answer goes to that git only.")
	m.pane(line, "Git asks", text, rows)
}
