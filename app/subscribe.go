package app

import (
	"context"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// Event is one change of the app, as SubscribeAgents streams it: exactly one of Agent and App is
// set.
type Event struct {
	Agent *api.AgentEvent
	App   *api.AppEvent
	// Environment, beside an App event environment_added, is the new environment as a snapshot
	// would show it (its ssh host, which the bus's event does not carry). In the process only:
	// the bus sends App alone.
	Environment *EnvironmentStatus
	// Setup, beside an App event group_setup, is the setup as the UI shows it, the end of a
	// failed one's output included (in the process only: the bus's event carries no output).
	Setup *SetupStatus
}

// SetupStatus is a group's setup as one of its terminals told it (krad-ade-agents run --setup).
type SetupStatus struct {
	Terminal api.TerminalID
	Group    string
	// State is api.SetupRunning, api.SetupDone or api.SetupFailed.
	State string
	// Output is, for a failed setup, how it ended and the end of its output, as the terminal
	// sent it: escape it to show it.
	Output string
}

// answer is the event as the bus sends it.
func (ev Event) answer() (api.Answer, error) {
	if ev.Agent != nil {
		return api.NewAnswer(api.AnswerAgentEvent, *ev.Agent)
	}
	return api.NewAnswer(api.AnswerAppEvent, *ev.App)
}

// EnvironmentStatus is an environment as a subscriber first sees it; the AppEvents after the
// snapshot change it.
type EnvironmentStatus struct {
	Name string
	// SSH is an SSH environment's host as config.toml names it, "" for this computer.
	SSH string
	// Up says whether the app is attached to the environment's tmux; Down, when it is not, why
	// (the last EnvironmentDown message), "" while it first comes up.
	Up   bool
	Down string
	// Connection is the last EnvironmentState of an SSH environment ("connected", "retrying in
	// 8s: …"), "" for this computer's.
	Connection string
}

// Snapshot is the app as Subscribe first gives it: every agent, as ListAll answers a Client but
// whole (the app's own face sees what agents said of themselves), and every environment, main
// first.
type Snapshot struct {
	Agents       []api.Agent
	Environments []EnvironmentStatus
}

// subscribeBuffer is how many events an in-process subscriber may fall behind before its channel
// is closed.
const subscribeBuffer = 4096

// Subscribe gives the app as it is now and a channel of every change after it: the same events a
// SubscribeAgents stream sends, published by the same call, in the process, for the app's own
// face. The channel is closed when ctx is done, or when the subscriber fell a full buffer behind:
// it then subscribes again for a fresh snapshot.
func (a *App) Subscribe(ctx context.Context) (Snapshot, <-chan Event) {
	ch := make(chan Event, subscribeBuffer)
	a.mu.Lock()
	snap := Snapshot{Agents: a.inScopeLocked(api.FromClient, true)}
	for _, name := range a.order {
		e := a.envs[name]
		snap.Environments = append(snap.Environments, a.statusLocked(e))
	}
	a.hub.addInner(ch)
	a.mu.Unlock()
	go func() {
		<-ctx.Done()
		a.mu.Lock()
		a.hub.removeInner(ch)
		a.mu.Unlock()
	}()
	return snap, ch
}

// statusLocked is environment e as a subscriber sees it. a.mu must be held.
func (a *App) statusLocked(e *environment) EnvironmentStatus {
	return EnvironmentStatus{Name: e.name, SSH: e.ssh, Up: e.up, Down: e.downMsg, Connection: a.connections[e.name]}
}

// publishAddedLocked tells subscribers that environment e was added: the bus's streams get the
// AppEvent, the process's own the status beside it. a.mu must be held.
func (a *App) publishAddedLocked(e *environment) {
	st := a.statusLocked(e)
	a.hub.publish(Event{App: &api.AppEvent{Kind: api.EnvironmentAdded, Environment: e.name}, Environment: &st})
	a.notifyLocked()
}

// Changes is what terminal id's group changed since its base commit: the stat and the patch, as
// the Changes request of that terminal answers it (the same handler, with the request's
// defaults), for the app's own face. An error (or ctx's end) is an error, never no changes.
func (a *App) Changes(ctx context.Context, id api.TerminalID) (worktree.Changes, error) {
	return a.changes(ctx, id, &api.ChangesBody{})
}

// OpenLead opens a terminal the person named in the app's own face, exactly as a configured
// terminal (a [[terminal]] table, --lead or --lead-agent) is opened: for spec.Lead, a lead of a
// new session; for spec.Agent, its agent profile's command, with its kind's hooks.
func (a *App) OpenLead(ctx context.Context, spec TerminalSpec) (api.Agent, error) {
	env := spec.Environment
	if env == "" {
		env = Local
	}
	e, err := a.env(ctx, env)
	if err != nil {
		return api.Agent{}, err
	}
	ws, err := a.windowSpec(spec)
	if err != nil {
		return api.Agent{}, err
	}
	t, err := e.open(ctx, ws)
	if err != nil {
		return api.Agent{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.agent(), nil
}

// CloseTerminal closes terminal id as a lead's Close of its worker does: its window and process
// end, and the last terminal of a group retires it.
func (a *App) CloseTerminal(ctx context.Context, id api.TerminalID) error {
	return a.closeTerminal(ctx, id.Environment, id.Terminal)
}

// CloseSession closes every worker of lead's session, as the lead's CloseSession does; the lead
// stays.
func (a *App) CloseSession(ctx context.Context, lead api.TerminalID) error {
	return a.closeSession(ctx, lead)
}

// AttachCommand is the shell command line that attaches a person to terminal id's window: the
// environment's attach hint, on that window.
func (a *App) AttachCommand(id api.TerminalID) (string, bool) {
	a.mu.Lock()
	e := a.envs[id.Environment]
	a.mu.Unlock()
	if e == nil {
		return "", false
	}
	return e.host.AttachHint(id.String()), true
}
