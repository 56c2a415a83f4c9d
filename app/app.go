package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/tmux"
)

// Defaults of Config.
const (
	DefaultQuiet      = 2 * time.Second
	DefaultReaction   = 10 * time.Second
	DefaultPasteDelay = 150 * time.Millisecond
	// DefaultTmuxTimeout is how long tmux may leave a command unanswered (see Config.TmuxTimeout).
	DefaultTmuxTimeout = 15 * time.Second
	// Local is the environment of this computer.
	Local = "main"
)

// TerminalSpec is a terminal the user named in config.toml or with --lead.
type TerminalSpec struct {
	Environment string // "" means main
	Title       string
	Command     string // a shell command line; "" means the user's shell
	Dir         string // working folder; "" means the environment's
	Lead        bool
}

// key names a configured terminal in its window's options.
func (s TerminalSpec) key() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{s.Environment, s.Title, s.Command, s.Dir, strconv.FormatBool(s.Lead)}, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// Config is what the App needs from krad-ade.
type Config struct {
	// Endpoint and Token are what terminals get as KRAD_ADE_ENDPOINT and KRAD_ADE_TOKEN.
	Endpoint string
	Token    api.Token
	// TokenFile, when set, is what they get as KRAD_ADE_TOKEN_FILE: the owner-only file that
	// holds Token, at a path that stays the same across the app's runs.
	TokenFile string
	// BinDir is the app's folder, where krad and krad-ade-agents live: first on every
	// terminal's PATH.
	BinDir string
	// Path is the PATH terminals get after BinDir.
	Path string
	// Tmux says how to reach the environment's tmux server.
	Tmux TmuxConfig
	// Quiet is how long an agent that never reported prints nothing before it is idle.
	Quiet time.Duration
	// Reaction is how long a Wait after a Send waits for a worker that shows nothing of a
	// reaction and runs no job the text started, before it takes the worker's settled state as
	// its answer.
	Reaction time.Duration
	// PasteDelay is the least pause between the text a Send types and its Enter: agent TUIs take
	// an Enter that arrives within about 120 ms of pasted text as part of the paste. The Enter
	// comes after the pause and a look at the screen (a capture-pane round trip), so later still.
	PasteDelay time.Duration
	// TmuxTimeout is how long an environment's tmux may send nothing while a command waits for
	// its reply before the app takes it for stuck (a stopped server, a host that hangs): the
	// environment goes down, its agents are shown unreachable, and the app attaches again. Pane
	// output counts as life (tmux holds replies behind the output it has not sent yet), up to 4
	// × TmuxTimeout for one command (tmux.Client.Watch). A quiet tmux is asked something every
	// TmuxTimeout/4, so silence is noticed within about 1.5 × TmuxTimeout.
	TmuxTimeout time.Duration
	// Dir is the local environment's folder, absolute: where its groups' repository is, and
	// where its terminals start unless told otherwise. "" is the app's working folder.
	Dir string
	// WorktreeRoot is where this computer's groups are checked out, absolute:
	// $XDG_DATA_HOME/krad-ade/worktrees by default (DefaultWorktreeRoot).
	WorktreeRoot string
	// Agents are the agent profiles that Spawn's agent names ([[agent]] in config.toml).
	Agents []AgentProfile
	// Terminals are opened when their environment first comes up in this run.
	Terminals []TerminalSpec
	// Remotes are the SSH environments, each on its Host.
	Remotes []Remote
	Logger  *slog.Logger

	// MaxTerminals is how many terminals an environment may have; 0 means DefaultMaxTerminals.
	MaxTerminals int

	// Extensions are the person's MCP servers that ExtensionTool lends to terminals
	// ([[extension]] in config.toml). Their Env is the app's own (os.Environ) when nil.
	Extensions extension.Config
	// Askpass: terminals of this computer, and the gits the app runs here itself, get
	// GIT_ASKPASS, git's prompts coming to the app (krad-ade leaves it false when the user has an
	// askpass of their own); SSHAskpass: the terminals get SSH_ASKPASS too.
	Askpass, SSHAskpass bool
	// AskpassLimit is how long a git prompt stays open, over all of its polls, before it fails
	// with "no one answered"; zero is DefaultAskpassLimit, 3 minutes.
	AskpassLimit time.Duration
	// Editor is how Code opens a file in the person's editor; none configured, Code is
	// unavailable.
	Editor Editor
	// Prompter answers git's prompts (Askpass): the person, through the UI. nil is headless:
	// Askpass fails at once with a hint. SetPrompter changes it while the app runs.
	Prompter Prompter
}

// AgentProfile is an agent a Spawn may name instead of a command: its shell command line, and how
// it takes a prompt.
type AgentProfile struct {
	Name    string
	Command string
	// PromptArg: the prompt goes as the command's last argument (which every user of the host
	// sees in ps), for an agent that takes it no other way; otherwise it is typed in once the
	// agent is ready.
	PromptArg bool
}

// Remote is an environment on a host other than this computer.
type Remote struct {
	Name string
	Host Host
	// SSH is the environment's ssh host as config.toml names it: {host} of the editor's
	// ssh_command, and the host a git prompt says it came from.
	SSH string
}

// App is the app's model: environments, their terminals and sessions, and one handler per
// request. It implements local.Handler.
type App struct {
	cfg Config
	log *slog.Logger

	ext     *extension.Supervisor
	prompts prompts

	mu      sync.Mutex
	envs    map[string]*environment
	order   []string // the environments' names, main first, then in the order they were added
	hub     hub
	changed chan struct{} // closed and replaced on every change, for waiters
	// connections is the last EnvironmentState of each SSH environment, for Subscribe's
	// snapshot.
	connections map[string]string

	// runCtx is Run's context once Run has begun (nil before): environments added while the app
	// runs are brought up under it. running counts the environments' goroutines. Both under mu.
	runCtx  context.Context
	running sync.WaitGroup
}

var _ local.Handler = (*App)(nil)

// New makes an App; Run brings its environments up.
func New(cfg Config) *App {
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.Reaction <= 0 {
		cfg.Reaction = DefaultReaction
	}
	if cfg.PasteDelay <= 0 {
		cfg.PasteDelay = DefaultPasteDelay
	}
	if cfg.TmuxTimeout <= 0 {
		cfg.TmuxTimeout = DefaultTmuxTimeout
	}
	if cfg.AskpassLimit <= 0 {
		cfg.AskpassLimit = DefaultAskpassLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Extensions.Env == nil {
		cfg.Extensions.Env = os.Environ()
	}
	if cfg.Extensions.Logger == nil {
		cfg.Extensions.Logger = cfg.Logger
	}
	a := &App{cfg: cfg, log: cfg.Logger, envs: map[string]*environment{}, changed: make(chan struct{}),
		ext: extension.New(cfg.Extensions)}
	a.prompts.init(cfg.Prompter)
	specsOf := func(env string) []TerminalSpec {
		var specs []TerminalSpec
		for _, s := range cfg.Terminals {
			if cmp.Or(s.Environment, Local) == env {
				specs = append(specs, s)
			}
		}
		return specs
	}
	if cfg.Dir == "" {
		cfg.Dir, _ = os.Getwd()
	}
	// Every terminal opens in the environment's folder, whatever folder the tmux server was
	// started in (by an earlier start of the app, from another folder).
	local := &localHost{tmux: cfg.Tmux, dir: cfg.Dir, root: cfg.WorktreeRoot,
		vars: HostVars{Dir: cfg.Dir, TerminalVars: api.TerminalVars{Endpoint: cfg.Endpoint, Token: cfg.Token, TokenFile: cfg.TokenFile, BinDir: cfg.BinDir, Path: cfg.Path,
			Askpass: cfg.Askpass, SSHAskpass: cfg.SSHAskpass}}}
	a.envs[Local] = newEnvironment(a, Local, local, specsOf(Local))
	a.order = []string{Local}
	for _, r := range cfg.Remotes {
		a.envs[r.Name] = newEnvironment(a, r.Name, r.Host, specsOf(r.Name))
		a.envs[r.Name].ssh = r.SSH
		a.order = append(a.order, r.Name)
	}
	return a
}

// Run keeps every environment up until ctx is done: when an environment's tmux goes away, its
// terminals are closed, an AppEvent says so, and the environment is brought up again; when only
// the way to it breaks (an SSH connection drops), its terminals live on and the app attaches again
// once it can. When ctx is done the app detaches from every tmux, which keeps the terminals
// running for the next start to adopt, and stops the extensions that run. Environments added
// while it runs (AddEnvironment) are kept up the same way; Run returns once every environment
// has detached.
func (a *App) Run(ctx context.Context) error {
	a.mu.Lock()
	a.runCtx = ctx
	for _, name := range a.order {
		a.startLocked(a.envs[name])
	}
	a.mu.Unlock()
	<-ctx.Done()
	// No environment starts once ctx is done (startLocked), so that the count only falls now.
	a.running.Wait()
	a.ext.Close()
	return nil
}

// startLocked brings environment e up under Run's context, on a goroutine of its own that ends
// when Run's context is done or e is removed. Nothing starts before Run or after its end. a.mu
// must be held.
func (a *App) startLocked(e *environment) {
	if a.runCtx == nil || a.runCtx.Err() != nil || e.done != nil {
		return
	}
	ctx, stop := context.WithCancel(a.runCtx)
	e.stop, e.done = stop, make(chan struct{})
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		defer close(e.done)
		defer stop()
		e.run(ctx)
	}()
}

// ErrEnvironmentExists is AddEnvironment's error for a name the app already has.
var ErrEnvironmentExists = errors.New("the app has an environment of that name")

// ErrNoEnvironment is RemoveEnvironment's error for a name the app does not have (or main, which
// cannot be removed).
var ErrNoEnvironment = errors.New("the app has no SSH environment of that name")

// AddEnvironment adds an SSH environment to the app, before Run or while it runs: it is brought
// up as those of Config.Remotes are, the windows its session already has adopted (an environment
// removed earlier in this run, or one of an earlier run), and its configured terminals, specs,
// opened when it first comes up unless they were adopted. Subscribers get an AppEvent
// (environment_added; in the process, with the environment's status beside it). The name must be
// new: ErrEnvironmentExists.
func (a *App) AddEnvironment(r Remote, specs []TerminalSpec) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.envs[r.Name] != nil || r.Name == Local {
		return fmt.Errorf("add environment %s: %w", r.Name, ErrEnvironmentExists)
	}
	e := newEnvironment(a, r.Name, r.Host, specs)
	e.ssh = r.SSH
	a.envs[r.Name] = e
	a.order = append(a.order, r.Name)
	a.startLocked(e)
	a.publishAddedLocked(e)
	return nil
}

// RemoveEnvironment takes an SSH environment out of the app while it runs, as the app's own stop
// does for every environment: the app detaches from the environment's tmux, which keeps its
// terminals running on the host, unchanged, for a later AddEnvironment of the same name (or the
// next start of the app) to adopt with their numbers. It returns once the app has detached (or
// ctx is done: the environment is then forgotten all the same, its detach still under way). From
// then on the environment is gone from the model: List and ListAll no longer show its agents
// (subscribers get each one's AgentEvent "removed", then an AppEvent environment_removed), its
// terminals' requests are refused as those of no terminal of this app, and its groups are left
// as they are on the host (none retires). The host's own connection (its bridge) is the caller's
// to close, after this returns.
func (a *App) RemoveEnvironment(ctx context.Context, name string) error {
	a.mu.Lock()
	e := a.envs[name]
	if e == nil || name == Local {
		a.mu.Unlock()
		return fmt.Errorf("remove environment %s: %w", name, ErrNoEnvironment)
	}
	// Forgotten first, so that nothing new reaches it (a request, an AddEnvironment of the same
	// name waits for none of its fields); its goroutine then detaches.
	delete(a.envs, name)
	delete(a.connections, name)
	a.order = slices.DeleteFunc(a.order, func(n string) bool { return n == name })
	stop, done := e.stop, e.done
	a.mu.Unlock()
	var err error
	if stop != nil {
		stop()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("remove environment %s: the detach from its tmux did not end: %w", name, context.Cause(ctx))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(e.terminals)) {
		t := e.terminals[n]
		if t.quietTimer != nil {
			t.quietTimer.Stop()
			t.quietTimer = nil
		}
		a.publishLocked(api.AgentRemoved, t)
	}
	a.publishAppLocked(api.AppEvent{Kind: api.EnvironmentRemoved, Environment: name,
		Message: "its terminals run on in its tmux session on the host; adding the environment again adopts them"})
	return err
}

// Environments are the names of the app's environments, main first, then the SSH environments in
// the order they were added.
func (a *App) Environments() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.order)
}

// ReadyOf is closed once environment env is up for the first time; for an environment the app
// does not have, it is a channel that is never closed.
func (a *App) ReadyOf(env string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.envs[env]; e != nil {
		return e.ready
	}
	return nil
}

// EnvironmentState tells subscribers how the way to an environment is (an SSH connection:
// connecting, connected, retrying in 8s: …, failed: …), as an AppEvent.
func (a *App) EnvironmentState(env, state string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.envs[env] == nil {
		return // removed: its connection's last words (closing) are no one's concern
	}
	if a.connections == nil {
		a.connections = map[string]string{}
	}
	a.connections[env] = state
	a.publishAppLocked(api.AppEvent{Kind: api.EnvironmentState, Environment: env, Message: state})
}

// Ready is closed once the local environment is up for the first time.
func (a *App) Ready() <-chan struct{} { return a.ReadyOf(Local) }

// AttachHint is the command that attaches a person to an environment's terminals.
// "" for an environment the app does not have.
func (a *App) AttachHint(env string) string {
	a.mu.Lock()
	e := a.envs[env]
	a.mu.Unlock()
	if e == nil {
		return ""
	}
	return e.host.AttachHint(env)
}

// notifyLocked tells waiters that something changed. a.mu must be held.
func (a *App) notifyLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// publishLocked sends an agent event to subscribers and wakes waiters. a.mu must be held.
func (a *App) publishLocked(kind string, t *terminal) {
	if a.hub.len() > 0 {
		a.hub.publish(Event{Agent: &api.AgentEvent{Kind: kind, Agent: t.agent()}})
	}
	a.notifyLocked()
}

func (a *App) publishAppLocked(ev api.AppEvent) {
	a.hub.publish(Event{App: &ev})
	a.notifyLocked()
}

// terminalLocked finds terminal n of environment env. a.mu must be held.
func (a *App) terminalLocked(env string, n int) *terminal {
	e := a.envs[env]
	if e == nil {
		return nil
	}
	return e.terminals[n]
}

// Facts resolves a caller, under one lock: a Terminal caller must name a live terminal of this
// app, and the lead of a session is RoleLead; for a request that names a target, whether the
// target is one of the caller's workers.
func (a *App) Facts(_ context.Context, from api.Caller, req api.Request) (local.Facts, error) {
	switch from.Kind {
	case api.CallerClient:
		return local.Facts{Role: local.RoleClient}, nil
	case api.CallerGit:
		return local.Facts{Role: local.RoleGit}, nil
	}
	env := from.Terminal.Environment
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(env, from.Terminal.Terminal)
	if t == nil {
		return local.Facts{}, api.Errorf(api.CodeForbidden, "%s is not a terminal of this app: it may have been closed, or be from an earlier run", from.Terminal)
	}
	f := local.Facts{Role: local.RoleTerminal}
	if t.role == api.RoleLead {
		f.Role = local.RoleLead
	}
	if n, ok := req.Target(); ok {
		switch w := a.terminalLocked(env, int(n)); {
		case w == nil:
			f.Target = local.TargetMissing
		case w.role == api.RoleWorker && w.lead == t.number:
			f.Target = local.TargetOwnWorker
		default:
			f.Target = local.TargetOther
		}
	}
	return f, nil
}

// Handle answers one request that passed the bus's checks, with the method the dispatch table
// names for it. Its errors are the bus's to turn into answers.
func (a *App) Handle(ctx context.Context, c *local.Call) (api.Answer, error) {
	h := handlers[c.Request.Name]
	if h == nil {
		return api.Answer{}, api.NotServed(string(c.Request.Name), "")
	}
	v, err := h(a, ctx, c)
	if err != nil {
		return api.Answer{}, err
	}
	if ans, ok := v.(api.Answer); ok { // made by the handler itself: Askpass's secret
		return ans, nil
	}
	return api.AnswerTo(c.Request.Name, v)
}

// handler answers one request: the body of its answer (api.AnswerTo names it), or nil for "Ok".
type handler func(a *App, ctx context.Context, c *local.Call) (any, error)

// handlers is the dispatch table: a request the app serves has a line here, and its answer a line
// in api's table of kinds. A request without a line is answered as not served yet.
var handlers = map[api.Name]handler{
	api.List:            func(a *App, _ context.Context, c *local.Call) (any, error) { return a.list(c.From, false), nil },
	api.ListAll:         func(a *App, _ context.Context, c *local.Call) (any, error) { return a.list(c.From, true), nil },
	api.SubscribeAgents: func(a *App, ctx context.Context, c *local.Call) (any, error) { a.subscribe(ctx, c); return nil, nil },
	api.CloseSession: func(a *App, ctx context.Context, c *local.Call) (any, error) {
		return nil, a.closeSession(ctx, c.From.Terminal)
	},
	api.Check: withBody((*App).check),
	api.Wait:  withBody((*App).wait),
	api.Read:  withBody((*App).read),
	api.Spawn: withBody((*App).spawn),
	api.Send:  withBody(okOnly((*App).send)),
	// The group requests (groups.go).
	api.CreateWorktree: withBody((*App).createWorktree),
	api.Changes:        withBody((*App).changes),
	api.RunVariants:    withBody((*App).runVariants),
	api.PickVariant:    withBody((*App).pickVariant),
	api.Groups: func(a *App, ctx context.Context, c *local.Call) (any, error) {
		return a.groups(ctx, c.From.Terminal)
	},
	api.RetireGroup: withBody((*App).retireGroup),
	api.Close:       withBody(okOnly((*App).close)),
	// The person's MCP servers, lent to terminals: package extension runs them here.
	api.ExtensionTool: withBody(func(a *App, ctx context.Context, from api.TerminalID, b *api.ExtensionToolBody) (api.ExtensionAnswer, error) {
		return a.ext.Handle(ctx, from.Environment, b)
	}),
	api.Code: withBody(okOnly((*App).code)),
	api.Askpass: func(a *App, ctx context.Context, c *local.Call) (any, error) {
		b, err := bodyOf[api.AskpassBody](c)
		if err != nil {
			return nil, err
		}
		return a.askpass(ctx, c.From.Environment, b)
	},
	api.Report: func(a *App, _ context.Context, c *local.Call) (any, error) {
		b, err := bodyOf[api.ReportBody](c)
		if err != nil {
			return nil, err
		}
		return nil, a.report(c.From.Terminal, b)
	},
}

// withBody makes the handler of a request with a body of type B, made by a terminal, from a
// method that takes the calling terminal and the body.
func withBody[B, R any](m func(*App, context.Context, api.TerminalID, *B) (R, error)) handler {
	return func(a *App, ctx context.Context, c *local.Call) (any, error) {
		b, err := bodyOf[B](c)
		if err != nil {
			return nil, err
		}
		v, err := m(a, ctx, c.From.Terminal, b)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

// okOnly adapts a method whose answer is "Ok" to withBody.
func okOnly[B any](m func(*App, context.Context, api.TerminalID, *B) error) func(*App, context.Context, api.TerminalID, *B) (any, error) {
	return func(a *App, ctx context.Context, from api.TerminalID, b *B) (any, error) {
		return nil, m(a, ctx, from, b)
	}
}

// bodyOf is the call's body, of the type api's table of kinds gives its request.
func bodyOf[B any](c *local.Call) (*B, error) {
	b, ok := c.Request.Body.(*B)
	if !ok {
		return nil, fmt.Errorf("%s came with a body of type %T", c.Request.Name, c.Request.Body)
	}
	return b, nil
}

// list answers List and ListAll. A terminal's List is its group in its environment, its ListAll
// its environment; a Client gets every open environment for both.
func (a *App) list(from api.Caller, all bool) []api.Agent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.agentsLocked(from, all)
}

func (a *App) agentsLocked(from api.Caller, all bool) []api.Agent {
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
	if err != nil || !a.hub.add(c.Stream, snap) {
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
	if t.report(b, time.Now()) {
		a.publishLocked(api.AgentChanged, t)
	}
	if !t.reported {
		a.envs[from.Environment].armQuietLocked(t)
	}
	return nil
}

// env returns the environment a caller's request is about, or unavailable while it is down. An
// environment that is coming up (attached, its configured terminals opening, whose first
// commands may already call) is waited for, until ctx ends.
func (a *App) env(ctx context.Context, name string) (*environment, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.envs[name]
	if e == nil {
		return nil, api.Errorf(api.CodeNotFound, "no environment %s", name)
	}
	for !e.up && e.client != nil {
		changed := a.changed
		a.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			a.mu.Lock()
			return nil, api.Errorf(api.CodeUnavailable, "environment %s is still coming up; try again", name)
		}
		a.mu.Lock()
	}
	if !e.up {
		return nil, api.Errorf(api.CodeUnavailable, "environment %s is down; the app is bringing it back", name)
	}
	return e, nil
}

// live finds terminal n of env for a request that acts on it: not_found when there is none,
// conflict when its process has exited.
func (a *App) live(env string, n int, verb string) (*terminal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(env, n)
	if t == nil {
		return nil, api.NoTerminal(env, n)
	}
	if t.dead {
		return nil, api.Errorf(api.CodeConflict, "cannot %s %s: its process has exited (%s)", verb, t.id(), t.state)
	}
	if !t.attached() {
		return nil, api.Errorf(api.CodeConflict, "cannot %s %s: it is still opening; try again", verb, t.id())
	}
	return t, nil
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

// send answers Send: it types the text, then, after the paste delay, Enter.
func (a *App) send(ctx context.Context, from api.TerminalID, b *api.SendBody) error {
	e, err := a.env(ctx, from.Environment)
	if err != nil {
		return err
	}
	t, err := a.live(from.Environment, int(b.Target), "send to")
	if err != nil {
		return err
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	return e.typeText(ctx, t, b.Text, b.Enter == nil || *b.Enter)
}

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
	for _, p := range a.cfg.Agents {
		if p.Name != b.Agent {
			continue
		}
		if p.PromptArg && b.Prompt != "" {
			// "$@" after the command line: the prompt is one argument, never parsed by the shell.
			return []string{"sh", "-c", p.Command + ` "$@"`, "sh", b.Prompt}, false, nil
		}
		return []string{"sh", "-c", p.Command}, b.Prompt != "", nil
	}
	names := make([]string, 0, len(a.cfg.Agents))
	for _, p := range a.cfg.Agents {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, false, api.Errorf(api.CodeBadRequest, "no agent %s: config.toml names no agents; add an [[agent]] table with its name and command, or give the command itself",
			termsafeName(b.Agent))
	}
	return nil, false, api.Errorf(api.CodeBadRequest, "no agent %s: the agents are %s ([[agent]] in config.toml)", termsafeName(b.Agent), strings.Join(names, ", "))
}

// termsafeName is a name from a client, quoted and cut for a message.
func termsafeName(s string) string { return termsafe.QuoteMax(s, 60) }

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
