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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/worktree"
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

// TerminalSpec is a terminal the user named in config.toml, with --lead or --lead-agent, or in
// the app's own face.
type TerminalSpec struct {
	Environment string // "" means main
	Title       string
	Command     string // a shell command line; "" means the user's shell (or Agent's command)
	// Agent names an agent profile (Config.Agents) whose command the terminal runs, as Spawn runs
	// it (its kind's hooks included, so that it tells its own state); "" for Command. Not both.
	Agent string
	Dir   string // working folder; "" means the environment's
	Lead  bool
}

// key names a configured terminal in its window's options.
func (s TerminalSpec) key() string {
	fields := []string{s.Environment, s.Title, s.Command, s.Dir, strconv.FormatBool(s.Lead)}
	if s.Agent != "" { // the keys of terminals without one stay those of earlier versions
		fields = append(fields, "agent", s.Agent)
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
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
	// Setups say what new groups' checkouts get ([[setup]] in config.toml), in the file's order.
	Setups []GroupSetup
	// MCP serves the MCP request: the krad mcp of the static krad on a host, relayed to one the
	// app runs (package mcprelay). nil: the request is not served.
	MCP MCPRelay
}

// GroupSetup is one [[setup]] of config.toml: for Environment ("" every one), the rule the
// environment's host applies to each new group of the repositories it names.
type GroupSetup struct {
	Environment string
	Rule        worktree.SetupRule
}

// MCPRelay answers the MCP request of a caller that came in by origin (package mcprelay).
type MCPRelay interface {
	Handle(ctx context.Context, from api.Caller, origin access.Origin, b *api.MCPBody) (api.MCPAnswer, error)
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
	// Kind is the agent's CLI, when krad knows it (agenthooks.Kinds: claude, codex, gemini):
	// the app starts it with the hooks by which it tells its own state. "" for any other
	// command, whose state comes from its screen.
	Kind string
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

// groupOf is the group of terminal n of environment env ("" for none), and whether there is such
// a terminal.
func (a *App) groupOf(env string, n int) (group string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(env, n)
	if t == nil {
		return "", false
	}
	return t.group, true
}

// Facts resolves a caller, under one lock: a Terminal caller must name a live terminal of this
// app, and the lead of a session is RoleLead; for a request that names a target, whether the
// target is one of the caller's workers.
func (a *App) Facts(_ context.Context, from api.Caller, req api.Request) (local.Facts, error) {
	switch from.Kind {
	case api.CallerClient:
		return local.Facts{Role: access.RoleClient}, nil
	case api.CallerGit:
		return local.Facts{Role: access.RoleGit}, nil
	}
	env := from.Terminal.Environment
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.terminalLocked(env, from.Terminal.Terminal)
	if t == nil {
		return local.Facts{}, api.Errorf(api.CodeForbidden, "%s is not a terminal of this app: it may have been closed, or be from an earlier run", from.Terminal)
	}
	f := local.Facts{Role: access.TerminalRole(t.role)}
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
	// The requests about agents (agents.go; Spawn spawn.go, Send send.go).
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
	api.SyncGroup:   withBody((*App).syncGroup),
	api.PushGroup:   withBody((*App).pushGroup),
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
	// The static krad's krad mcp on a host, relayed to one the app runs (package mcprelay).
	api.MCP: func(a *App, ctx context.Context, c *local.Call) (any, error) {
		if a.cfg.MCP == nil {
			return nil, api.NotServed(string(api.MCP), "")
		}
		b, err := bodyOf[api.MCPBody](c)
		if err != nil {
			return nil, err
		}
		return a.cfg.MCP.Handle(ctx, c.From, c.Origin, b)
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
			return nil, api.Errorf(api.CodeUnavailable, "environment %s is still coming up; try again", name).WithReason(api.ReasonEnvironmentDown)
		}
		a.mu.Lock()
	}
	if !e.up {
		return nil, e.downError()
	}
	return e, nil
}

// termsafeName is a name from a client, quoted and cut for a message.
func termsafeName(s string) string { return termsafe.QuoteMax(s, 60) }
