package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/tmux"
)

// The requests about agents, as the dispatch table (handlers) calls them: List and ListAll,
// SubscribeAgents, Check, Wait, Read, Report, Close and CloseSession. Send is send.go's, Spawn
// spawn.go's; the group requests are groups.go's.

// list answers List and ListAll. A terminal's List is its group in its environment, its ListAll
// its environment; a Client gets every open environment for both; each agent as the caller may
// see it (access.AgentFor).
func (a *App) list(from api.Caller, all bool) []api.Agent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.agentsLocked(from, all)
}

// agentsLocked is the agents caller from lists, as it may see them (access.AgentFor): List,
// ListAll and the snapshot of SubscribeAgents. a.mu must be held.
func (a *App) agentsLocked(from api.Caller, all bool) []api.Agent {
	agents := a.inScopeLocked(from, all)
	for i := range agents {
		agents[i] = access.AgentFor(from, agents[i])
	}
	return agents
}

// inScopeLocked is the agents caller from lists, whole. a.mu must be held.
func (a *App) inScopeLocked(from api.Caller, all bool) []api.Agent {
	agents := []api.Agent{}
	var group string
	if from.Kind != api.CallerClient {
		if t := a.terminalLocked(from.Terminal.Environment, from.Terminal.Terminal); t != nil {
			group = t.group
		}
	}
	for name, e := range a.envs {
		if from.Kind != api.CallerClient && name != from.Terminal.Environment {
			continue
		}
		for _, t := range e.terminals {
			if from.Kind != api.CallerClient && !all && t.group != group {
				continue
			}
			agents = append(agents, t.agent())
		}
	}
	sort.Slice(agents, func(i, j int) bool {
		if agents[i].Environment != agents[j].Environment {
			return agents[i].Environment < agents[j].Environment
		}
		return agents[i].Terminal < agents[j].Terminal
	})
	return agents
}

// subscribe streams a snapshot, then every change, until the subscriber leaves or is dropped.
func (a *App) subscribe(ctx context.Context, c *local.Call) {
	a.mu.Lock()
	snap, err := api.NewAnswer(api.AnswerAgents, a.agentsLocked(c.From, true))
	if err != nil || !a.hub.add(c.Stream, c.From, snap) {
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-c.Stream.Gone():
	}
	a.mu.Lock()
	a.hub.remove(c.Stream)
	a.mu.Unlock()
}

// check answers Check: the agent now, or after its next change within wait_secs.
func (a *App) check(ctx context.Context, from api.TerminalID, b *api.CheckBody) (api.Agent, error) {
	a.mu.Lock()
	t := a.terminalLocked(from.Environment, int(b.Target))
	if t == nil {
		a.mu.Unlock()
		return api.Agent{}, api.NoTerminal(from.Environment, int(b.Target))
	}
	first := t.agent()
	a.mu.Unlock()
	if b.WaitSecs == nil {
		return first, nil
	}
	wait := api.NewRequest(api.Check, b).WaitFor()
	got, err := a.waitFor(ctx, from.Environment, int(b.Target), wait, func(t *terminal) bool {
		return t.agent() != first
	}, false)
	if errors.Is(err, api.ErrTimedOut) {
		return got, nil // the wait ended without a change: the agent as it is
	}
	return got, err
}

// wait answers Wait: the agent once it settles after the request arrived.
func (a *App) wait(ctx context.Context, from api.TerminalID, b *api.WaitBody) (api.Agent, error) {
	d := api.NewRequest(api.Wait, b).WaitFor()
	return a.waitFor(ctx, from.Environment, int(b.Target), d, func(t *terminal) bool {
		return t.settled(a.cfg.Reaction)
	}, true)
}

// waitFor waits up to d for cond to hold for terminal n, re-checking it on every change. With
// looks, it also looks at the terminal when its pending Send needs a look to be settled: once
// the reaction window has passed, to tell whether a job the Send started still runs. A terminal
// that is removed meanwhile is answered as closed. When d passes it returns the agent as it is and
// api.ErrTimedOut, also when a look is under way: a look never runs past d.
func (a *App) waitFor(ctx context.Context, env string, n int, d time.Duration, cond func(*terminal) bool, looks bool) (api.Agent, error) {
	deadline := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	var last api.Agent
	var calm time.Time // after a look failed, the next waits until then
	for {
		a.mu.Lock()
		t := a.terminalLocked(env, n)
		if t == nil {
			a.mu.Unlock()
			if last.Terminal == 0 {
				return api.Agent{}, api.NoTerminal(env, n)
			}
			last.State = api.StateClosed
			return last, nil
		}
		last = t.agent()
		if cond(t) {
			a.mu.Unlock()
			return last, nil
		}
		if !time.Now().Before(deadline) {
			a.mu.Unlock()
			return last, api.ErrTimedOut
		}
		changed := a.changed
		var look <-chan time.Time
		var send *pendingSend
		if now := time.Now(); looks {
			if in, ok := t.lookIn(now, a.cfg.Reaction); ok {
				in = max(in, calm.Sub(now), time.Millisecond)
				look, send = time.After(in), t.send
			}
		}
		e := a.envs[env]
		a.mu.Unlock()
		select {
		case <-changed:
		case <-look:
			// The look ends by the Wait's deadline: the bus gives the Wait only a second more.
			end := time.Now().Add(lookTimeout)
			if deadline.Before(end) {
				end = deadline
			}
			lctx, cancel := context.WithDeadline(ctx, end)
			err := e.look(lctx, t, send)
			cancel()
			if err != nil {
				calm = time.Now().Add(restConfirm)
			}
		case <-timer.C:
			return last, api.ErrTimedOut
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// report applies an agent's report about itself.
func (a *App) report(from api.TerminalID, b *api.ReportBody) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(from.Environment, from.Terminal)
	if t == nil {
		return api.NoTerminal(from.Environment, from.Terminal)
	}
	heard, dead := t.heard, t.dead
	if t.report(b, time.Now()) {
		a.publishLocked(api.AgentChanged, t)
	} else if t.heard != heard || t.dead != dead {
		// The agent as shown is the same (its output had made it working before run's start
		// came), but a Spawn waits to hear from its worker: it must not wait for the next
		// change.
		a.notifyLocked()
	}
	if b.Setup != "" {
		a.setupReportedLocked(t, b)
	}
	if !t.reported {
		a.envs[from.Environment].armQuietLocked(t)
	}
	return nil
}

func (a *App) read(ctx context.Context, from api.TerminalID, b *api.ReadBody) (api.Screen, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return api.Screen{}, err
	}
	a.mu.Lock()
	t := a.terminalLocked(from.Environment, int(b.Target))
	var pane tmux.PaneID
	opening := false
	if t != nil {
		pane, opening = t.pane, !t.attached()
	}
	a.mu.Unlock()
	if t == nil {
		return api.Screen{}, api.NoTerminal(from.Environment, int(b.Target))
	}
	if opening {
		return api.Screen{}, api.Errorf(api.CodeConflict, "%s is still opening; try again", t.id())
	}
	lines := 0
	if b.Lines != nil {
		lines = *b.Lines
	}
	text, err := e.capture(ctx, pane, lines)
	if err != nil {
		return api.Screen{}, err
	}
	return api.Screen{Terminal: int(b.Target), Text: text}, nil
}

func (a *App) close(ctx context.Context, from api.TerminalID, b *api.CloseBody) error {
	return a.closeTerminal(ctx, from.Environment, int(b.Target))
}

// closeTerminal closes terminal n of env: Close, and the app's own face.
func (a *App) closeTerminal(ctx context.Context, env string, n int) error {
	e, err := a.env(ctx, env)
	if err != nil {
		return err
	}
	a.mu.Lock()
	t := a.terminalLocked(env, n)
	a.mu.Unlock()
	if t == nil {
		return api.NoTerminal(env, n)
	}
	if err := e.kill(ctx, t); err != nil {
		return err
	}
	// The last terminal of a group retires it: Close answers once that is done (an AppEvent
	// says what was kept), within its deadline.
	e.retiredBy(ctx, t.group)
	return nil
}

// closeSession closes every worker of the lead's session.
func (a *App) closeSession(ctx context.Context, lead api.TerminalID) error {
	e, err := a.env(ctx, lead.Environment)
	if err != nil {
		return err
	}
	a.mu.Lock()
	var workers []*terminal
	for _, t := range e.terminals {
		if t.role == api.RoleWorker && t.lead == lead.Terminal {
			workers = append(workers, t)
		}
	}
	a.mu.Unlock()
	var errs []error
	for _, t := range workers {
		if err := e.kill(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", t.id(), err))
		}
	}
	for _, t := range workers {
		e.retiredBy(ctx, t.group)
	}
	return errors.Join(errs...)
}
