package app

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/krad-ade/krad/agenthooks"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// Spawn: a worker opened beside its lead, in the lead's group or another, with a command or an
// agent of config.toml, and its prompt typed in (prompt.go).

// spawn answers Spawn: the worker's window opened in the lead's session (in its group's checkout
// when it has one, made if need be), its prompt typed once it is ready, and its agent as it is
// once it has started or failed to.
func (a *App) spawn(ctx context.Context, from api.TerminalID, b *api.SpawnBody) (api.Agent, error) {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return api.Agent{}, err
	}
	prompt := b.Prompt
	argv, typed, err := a.spawnArgv(b)
	if err != nil {
		return api.Agent{}, err
	}
	a.mu.Lock()
	lead := a.terminalLocked(from.Environment, from.Terminal)
	if lead == nil {
		a.mu.Unlock()
		return api.Agent{}, api.NoTerminal(from.Environment, from.Terminal)
	}
	spec := windowSpec{
		title:   b.Title,
		role:    api.RoleWorker,
		session: lead.session,
		group:   cmp.Or(b.Group, lead.group),
		lead:    lead.number,
		argv:    argv,
		prompt:  typed,
	}
	a.mu.Unlock()
	if spec.title == "" {
		spec.title = cmp.Or(b.Agent, api.ProgramTitle(spec.argv), "shell")
	}
	if spec.group != "" {
		// The worker starts in the group's checkout, made now if the group does not exist yet;
		// the group's lock is held until its terminal is open, so that it cannot retire under
		// the new worker.
		g, unlock, err := e.joinGroup(ctx, spec.group)
		if err != nil {
			return api.Agent{}, err
		}
		defer unlock()
		spec.dir, spec.port = g.Dir, g.Port
		if st := g.Setup; st != nil {
			if st.State == worktree.SetupFailed {
				return api.Agent{}, api.Errorf(api.CodeConflict, "%s", st.FailedMessage(g))
			}
			spec.setup = st.State != worktree.SetupDone
		}
	}
	opened := time.Now()
	t, err := e.open(ctx, spec)
	if err != nil {
		return api.Agent{}, err
	}
	if spec.prompt {
		// open took t.sendMu for the prompt: a Send types after it.
		go func() {
			defer t.sendMu.Unlock()
			e.typePrompt(t, prompt, opened.Add(promptReady))
		}()
	}
	// Give the worker a moment to start, so that one whose command fails at once (not found,
	// say) is answered as failed, with its exit code, rather than starting: wait for run's first
	// report (its start, or its end) or the end of the window's process.
	ag, err := a.waitFor(ctx, from.Environment, t.number, spawnSettle, func(t *terminal) bool {
		return t.heard || t.dead
	}, false)
	if err != nil && !errors.Is(err, api.ErrTimedOut) {
		return api.Agent{}, err
	}
	return ag, nil
}

// spawnSettle is how long Spawn waits for its worker to leave starting.
const spawnSettle = time.Second

// spawnArgv is the worker's command: its command, or its agent's profile; empty means the user's
// shell. typed says whether the prompt is to be typed in: it is, unless the profile takes it as an
// argument. Otherwise the prompt is never in the command: every user of the host reads a
// process's arguments (ps, /proc/PID/cmdline), so it is typed into the worker (typePrompt).
func (a *App) spawnArgv(b *api.SpawnBody) (argv []string, typed bool, err error) {
	if b.Agent == "" {
		return append([]string(nil), b.Command...), b.Prompt != "", nil
	}
	if len(b.Command) > 0 {
		return nil, false, api.Errorf(api.CodeBadRequest, "Spawn: give a command or an agent, not both")
	}
	return a.profileArgv(b.Agent, b.Prompt)
}

// profileArgv is the command of agent profile name, with its kind's hooks, for a Spawn (with its
// prompt, "" for none) and a terminal the person named (TerminalSpec.Agent). typed is as
// spawnArgv's. A name no profile has is bad_request, naming those there are.
func (a *App) profileArgv(name, prompt string) (argv []string, typed bool, err error) {
	for _, p := range a.cfg.Agents {
		if p.Name != name {
			continue
		}
		// A known kind's hooks: words of the app's own before the command line, and arguments
		// after it (agenthooks.AgentArgs).
		args, prefix := agenthooks.AgentArgs(p.Kind)
		typed := prompt != ""
		if p.PromptArg && prompt != "" {
			args, typed = append(args, prompt), false
		}
		if len(args) == 0 {
			return []string{"sh", "-c", prefix + p.Command}, typed, nil
		}
		// "$@" after the command line: each argument is one, never parsed by the shell (the
		// prompt included).
		return append([]string{"sh", "-c", prefix + p.Command + ` "$@"`, "sh"}, args...), typed, nil
	}
	names := make([]string, 0, len(a.cfg.Agents))
	for _, p := range a.cfg.Agents {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, false, api.Errorf(api.CodeBadRequest, "no agent %s: config.toml names no agents; add an [[agent]] table with its name and command, or give the command itself",
			termsafeName(name)).WithReason(api.ReasonNoAgent)
	}
	return nil, false, api.Errorf(api.CodeBadRequest, "no agent %s: the agents are %s ([[agent]] in config.toml)", termsafeName(name), strings.Join(names, ", ")).WithReason(api.ReasonNoAgent)
}
