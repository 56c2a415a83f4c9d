// Package appmain is the krad-ade program, main.go's whole body (as cmd/krad/cli is krad's): it
// checks and locks its config folder, reads the app's configuration, makes the tokens, writes the
// local terminals' token file, opens the bus on 127.0.0.1, leaves api.json for other programs while
// discovery is on, and serves until SIGINT or SIGTERM, when it removes api.json (if the file is
// still its own) and the token file.
//
// The app serves the bus only when it finds its companion, krad-ade-agents, next to its own
// executable or on PATH: the app starts every worker through it. Without it, krad-ade says so in
// one line, serves nothing and writes no api.json.
//
// On a terminal (stdin and stdout both are) krad-ade shows its UI (package ui) while it serves,
// and its log goes to the UI's log pane and to a log file in the state folder; with --headless, or
// without a terminal (a service, a test, CI), it logs to stderr and prints its lines to stdout.
//
// # Refusing to start
//
// Everything that can make the app refuse to start is checked before it starts anything (tmux,
// the bus, the SSH bridges), so that a refused start leaves no process and no file behind: the
// config folder and config.toml (config.CheckFolder: the user's own, writable by no one else),
// the locks that keep one app per config folder and per tmux server (see lockInstance), the
// config itself, the token file, the listener and api.json. Each refusal is one error line and
// one hint line, and exit code 1.
package appmain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/mcprelay"
	"github.com/krad-ade/krad/tokenfile"
	"github.com/krad-ade/krad/ui"
	"github.com/krad-ade/krad/worktree"
)

// Companion is the name of the agents' companion program.
const Companion = "krad-ade-agents"

// configPoll is how often the config file is looked at: a change is noticed within a second.
const configPoll = 500 * time.Millisecond

// Exit codes of krad-ade.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 5
)

// Run is krad-ade's main. getenv reads the environment; stdout gets the lines a person reads at
// start, stderr the log.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, code, done := parseFlags(args, stdout, stderr)
	if done {
		return code
	}
	// Before anything runs a program: the package managers' folders where an app started with a
	// thin PATH lacks them (macOS, started from Finder or launchd), for the app's own lookups
	// (tmux, git, ssh, the editor) and for its terminals, which get the app's PATH.
	pathAdded := []string(nil)
	if p, added := fullPath(getenv("PATH"), runtime.GOOS, isDir); len(added) > 0 {
		getenv, pathAdded = withVar(getenv, "PATH", p), added
		_ = os.Setenv("PATH", p) // exec.LookPath and tmux's environment read the process's own
	}
	// On a terminal the log goes to the UI's log pane and its log file; the lines are the same.
	var shown *face
	logTo := stderr
	if !o.headless && !o.printSSHConfig && onTerminal(os.Stdin, stdout) {
		var err error
		if shown, err = newFace(getenv, stdout.(*os.File), stderr); err != nil {
			return fail(stderr, exitError, err.Error(), "set XDG_STATE_HOME or HOME to an absolute path, or run krad-ade --headless")
		}
		defer shown.file.Close()
		logTo = io.MultiWriter(shown.lines, shown.file) // the pane first: a full disk stops only the file
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: o.logLevel}))
	if len(pathAdded) > 0 {
		log.Info("PATH lacked the package managers' folders: added at its end", "folders", strings.Join(pathAdded, string(os.PathListSeparator)))
	}
	if o.printSSHConfig {
		return printSSHConfig(o.sshConfig, o.configDir, getenv, stdout, stderr)
	}

	companion, err := findCompanion(getenv)
	if err != nil {
		return fail(stderr, exitError, err.Error(),
			"build krad-ade, krad and krad-ade-agents into one folder (./scripts/start does) and start krad-ade from there")
	}
	dir, err := configFolder(o.configDir, getenv)
	if err != nil {
		return refused(stderr, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fail(stderr, exitError, fmt.Sprintf("config folder: %v", err), "pass --config-dir with an absolute path")
	}
	// The tmux server the app drives, as the lock and the app both reach it.
	tmuxConfig := app.TmuxConfig{Env: tmuxEnv(os.Environ())}
	cfg, locks, err := openConfig(dir, tmuxConfig)
	if err != nil {
		return refused(stderr, err)
	}
	defer locks.release()

	// The --lead terminals are this run's, not config.toml's: cfg stays what the file says, so
	// that the config watcher does not take them for a change.
	terminals := slices.Clone(cfg.Terminals)
	for _, cmd := range o.leads {
		if strings.TrimSpace(cmd) == "" {
			return fail(stderr, exitUsage, "--lead needs a command", "run krad-ade --lead 'claude'")
		}
		terminals = append(terminals, config.Terminal{Command: cmd, Lead: true})
	}
	// --lead-agent names a profile, as a [[terminal]]'s agent does: checked here, as config.toml
	// checks its own.
	for _, name := range o.leadAgents {
		if !slices.ContainsFunc(cfg.Agents, func(p config.Agent) bool { return p.Name == name }) {
			return fail(stderr, exitUsage, fmt.Sprintf("--lead-agent %s: no [[agent]] of config.toml has that name: %s", termsafe.QuoteMax(name, 60), config.AgentsKnown(cfg.Agents)),
				`name an [[agent]] of config.toml, or add one there: [[agent]] with name = "claude", command = "claude" and kind = "claude" (docs/agents.md)`)
		}
		terminals = append(terminals, config.Terminal{Agent: name, Lead: true})
	}

	r := &run{
		log:       log,
		dir:       dir,
		stdout:    stdout,
		companion: companion,
		getenv:    getenv,
		face:      shown,
	}
	if shown != nil {
		// The lines a person reads at start go to the log pane (and file) too.
		r.stdout = logTo
		shown.settings = ui.NewSettings(cfg)
	}
	return r.serve(ctx, cfg, tmuxConfig, terminals, filepath.Join(dir, config.FileName), stderr)
}

// options are krad-ade's flags.
type options struct {
	configDir      string
	logLevel       slog.Level
	leads          []string
	leadAgents     []string
	sshConfig      string
	printSSHConfig bool // --ssh-config was given
	headless       bool
}

// parseFlags reads krad-ade's flags. done says that Run ends here, with code: --help and
// --version print and exit, a usage error is said on stderr.
func parseFlags(args []string, stdout, stderr io.Writer) (o options, code int, done bool) {
	fs := pflag.NewFlagSet("krad-ade", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.configDir, "config-dir", "", "the folder of config.toml and api.json (default: $XDG_CONFIG_HOME/krad-ade, else ~/.config/krad-ade)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.StringArrayVar(&o.leads, "lead", nil, "open a terminal running `CMD` as the lead of a new session (repeatable)")
	fs.StringArrayVar(&o.leadAgents, "lead-agent", nil, "open a terminal running the agent profile `NAME` of config.toml ([[agent]]) as the lead of a new session, with its kind's hooks (repeatable)")
	fs.StringVar(&o.sshConfig, "ssh-config", "", "print what the app resolved for SSH environment `NAME` from your ssh config, in ssh -G's format, and exit")
	fs.BoolVar(&o.headless, "headless", false, "log to stderr instead of showing the UI, as when stdin or stdout is not a terminal")
	showVersion := fs.Bool("version", false, "print the build and exit")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return o, fail(stderr, exitUsage, err.Error(), "run krad-ade --help"), true
	}
	if *help {
		fmt.Fprintf(stdout, "krad-ade: the agents app and its bus.\n\nUsage: krad-ade [flags]\n\nFlags:\n%s", fs.FlagUsages())
		return o, exitOK, true
	}
	if *showVersion {
		fmt.Fprintf(stdout, "krad-ade %s (agents API v%d)\n", version.Build, api.Version)
		return o, exitOK, true
	}
	if fs.NArg() > 0 {
		return o, fail(stderr, exitUsage, fmt.Sprintf("krad-ade takes no arguments, got %d", fs.NArg()), "run krad-ade --help"), true
	}
	if err := o.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return o, fail(stderr, exitUsage, "--log-level must be debug, info, warn or error", "run krad-ade --help"), true
	}
	o.printSSHConfig = fs.Changed("ssh-config")
	return o, exitOK, false
}

// configFolder is the folder --config-dir names, else discovery.Dir's.
func configFolder(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	dir, err := discovery.Dir(getenv)
	if err != nil {
		return "", &refusal{err, "set XDG_CONFIG_HOME or HOME to an absolute path, or pass --config-dir"}
	}
	return dir, nil
}

// openConfig makes and checks the config folder dir, takes the locks that keep one app per
// config folder and per tmux server, and reads config.toml. Nothing in the folder is read, and
// nothing is started, before the folder is known to be the user's alone and no other krad-ade
// runs on it or on its tmux server. Its error is a *refusal.
func openConfig(dir string, tmuxConfig app.TmuxConfig) (config.Config, *instanceLocks, error) {
	configPath := filepath.Join(dir, config.FileName)
	if err := makeConfigFolder(dir); err != nil {
		return config.Config{}, nil, configRefusal(configPath, err)
	}
	locks, msg, hint := lockInstance(dir, tmuxConfig)
	if locks == nil {
		return config.Config{}, nil, &refusal{errors.New(msg), hint}
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		locks.release()
		return config.Config{}, nil, configRefusal(configPath, err)
	}
	return cfg, locks, nil
}

// run is one run of krad-ade.
type run struct {
	log       *slog.Logger
	dir       string
	stdout    io.Writer
	companion string
	getenv    func(string) string

	file discovery.File // what api.json says while discovery is on
	face *face          // the UI, on a terminal; nil when headless
}

// readyWait is how long krad-ade waits for its local environment before it says it is not up.
const readyWait = 15 * time.Second

// serve starts the run's parts (start), runs them until SIGINT, SIGTERM or the UI's q, and stops
// them: the bus, the model, the bridges, the UI, the config watcher, then the files.
func (a *run) serve(ctx context.Context, cfg config.Config, tmuxConfig app.TmuxConfig, terminals []config.Terminal, configPath string, stderr io.Writer) (code int) {
	ctx, quit := context.WithCancel(ctx) // the UI's q
	defer quit()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	p, err := a.start(ctx, cfg, tmuxConfig, terminals)
	if err != nil {
		return refused(stderr, err)
	}
	defer p.relay.Close()

	served := make(chan error, 1)
	go func() { served <- p.bus.Serve(ctx) }()
	modelled := make(chan struct{})
	go func() {
		defer close(modelled)
		_ = p.model.Run(ctx)
	}()
	stopBridges := p.hosts.startAll(ctx, p.initial)
	defer stopBridges()

	reload := make(chan struct{}, 1)
	if a.face != nil {
		shown := a.face.show(ctx, p.model, cfg, configPath, reload, quit)
		defer func() {
			if c := a.face.gone(shown, p.model); c != exitOK {
				code = c
			}
		}()
	}
	a.sayServing(ctx, p, cfg.Discovery)
	go reloadOnHangup(ctx, hup, reload, p.hosts)
	watched := a.watchConfig(ctx, configPath, reload, cfg, p)

	<-ctx.Done()
	<-served
	<-modelled
	<-watched
	p.hosts.stop()
	stopBridges()
	a.removeFiles(p.apiPath, p.tokenFile)
	a.log.Info("stopped")
	return exitOK
}

// parts are what start makes of a run, for serve to run and stop.
type parts struct {
	busToken, leadToken api.Token
	tokenFile           string       // the local terminals' token file
	ln                  net.Listener // the bus's, where the terminals of an earlier run look if it could
	apiPath             string       // api.json, which is there while discovery is on
	where               string       // how other programs find the bus, for the line at start
	hosts               *hosts
	initial             []*host // the SSH environments of config.toml at the start
	relay               *mcprelay.Relay
	model               *app.App
	bus                 *local.Server
}

// undoList is what start made on its way, undone last first if a later step refuses the start.
type undoList []func()

func (u *undoList) add(f func()) { *u = append(*u, f) }

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// start makes the run's parts. What can refuse the start comes before anything is started
// (tmux, the bus, the bridges), so that a refused start leaves no process behind: the tokens,
// the token file, the listener, api.json, the worktrees' folder, the bus. Its error is a
// *refusal, and what it made on the way is undone; once it returns the parts, the stop removes
// the files itself.
func (a *run) start(ctx context.Context, cfg config.Config, tmuxConfig app.TmuxConfig, terminals []config.Terminal) (_ *parts, err error) {
	p := &parts{}
	var undo undoList
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	if err := p.newTokens(); err != nil {
		return nil, err
	}
	if err := a.writeTokenFile(ctx, p, &undo); err != nil {
		return nil, err
	}
	if err := a.listen(ctx, p, tmuxConfig, &undo); err != nil {
		return nil, err
	}
	if err := a.writeAPIFile(p, cfg.Discovery, &undo); err != nil {
		return nil, err
	}
	a.newHosts(p, cfg)
	if err := a.newModel(p, cfg, tmuxConfig, terminals, &undo); err != nil {
		return nil, err
	}
	if err := a.newBus(p); err != nil {
		return nil, err
	}
	return p, nil
}

// newTokens makes the bus token and the lead token of this run.
func (p *parts) newTokens() (err error) {
	if p.busToken, err = api.NewToken(); err == nil {
		p.leadToken, err = api.NewToken()
	}
	if err != nil {
		return &refusal{err, "the system's random source failed; try again"}
	}
	return nil
}

// writeTokenFile writes the local terminals' token file.
func (a *run) writeTokenFile(ctx context.Context, p *parts, undo *undoList) (err error) {
	if p.tokenFile, err = tokenfile.Write(ctx, a.shell(), a.instance(), p.busToken); err != nil {
		return &refusal{err, "krad-ade keeps the local terminals' token file in ~/.krad-ade/run, as on SSH hosts: make ~/.krad-ade a folder of your own, and check that HOME is set"}
	}
	undo.add(func() { a.removeTokenFile(p.tokenFile) })
	return nil
}

// listen opens the bus's listener where the terminals of an earlier run still look for the bus,
// if that port is free.
func (a *run) listen(ctx context.Context, p *parts, tmuxConfig app.TmuxConfig, undo *undoList) (err error) {
	if p.ln, err = local.ListenLoopback(app.PreviousEndpoint(ctx, tmuxConfig, app.Local)); err != nil {
		return &refusal{err, "check that the loopback interface is up"}
	}
	undo.add(func() { p.ln.Close() })
	return nil
}

// writeAPIFile writes api.json while discovery is on, and says how other programs find the bus.
func (a *run) writeAPIFile(p *parts, discover bool, undo *undoList) error {
	a.file = discovery.File{
		APIVersion: api.Version,
		Endpoint:   p.ln.Addr().String(),
		Token:      p.busToken,
		PID:        os.Getpid(),
		StartedAt:  time.Now().UTC(),
	}
	p.apiPath = filepath.Join(a.dir, discovery.FileName)
	p.where = "discovery is off (config.toml), so only the app's terminals find the bus"
	if !discover {
		return nil
	}
	if err := discovery.Write(a.dir, a.file); err != nil {
		return &refusal{err, "check that the folder is yours and the disk has room, or set discovery = false in config.toml"}
	}
	undo.add(func() { a.removeAPIFile(p.apiPath) })
	p.where = "api.json at " + p.apiPath
	return nil
}

// newHosts makes the bridges of config.toml's SSH environments, which startAll runs.
func (a *run) newHosts(p *parts, cfg config.Config) {
	// Each connection a host makes to its forward reaches the bus through a socket pair, not a
	// second TCP connection, marked with the environment whose forward it came through: the bus
	// lets it speak for that environment only.
	toBus := func(env string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) { return p.bus.Pipe(ctx, access.FromForward(env)) }
	}
	p.hosts = &hosts{run: a, token: p.busToken, ports: a.forwardPorts(), toBus: toBus, on: map[string]*host{},
		model: func() *app.App { return p.model }, sshAskpass: cfg.SSHAskpass}
	for _, env := range cfg.Environments {
		p.initial = append(p.initial, p.hosts.newHost(env))
	}
}

// newModel makes the app's model, and the relay of the SSH hosts' krad mcp that it serves.
func (a *run) newModel(p *parts, cfg config.Config, tmuxConfig app.TmuxConfig, terminals []config.Terminal, undo *undoList) error {
	var remotes []app.Remote
	for _, h := range p.initial {
		remotes = append(remotes, app.Remote{Name: h.env.Name, Host: h.bridge, SSH: h.env.SSH})
	}
	worktrees, err := a.worktreeRoot(cfg.Worktrees)
	if err != nil {
		return &refusal{err, `set worktrees = "/an/absolute/folder" in config.toml`}
	}
	askpass := a.askpassWanted()
	// The static krad on SSH hosts relays its krad mcp to one the app runs in this process,
	// whose requests reach the bus the way the host's own do.
	p.relay = mcprelay.New(mcprelay.Config{
		Dial:     func(ctx context.Context, o access.Origin) (net.Conn, error) { return p.bus.Pipe(ctx, o) },
		Endpoint: p.ln.Addr().String(),
		Token:    p.busToken,
		Version:  version.Build,
		Logger:   a.log,
	})
	undo.add(func() { p.relay.Close() })
	p.model = app.New(app.Config{
		WorktreeRoot: worktrees,
		Agents:       each(cfg.Agents, agentProfile),
		Setups:       each(cfg.Setups, groupSetup),
		Endpoint:     p.ln.Addr().String(),
		Token:        p.busToken,
		TokenFile:    p.tokenFile,
		BinDir:       filepath.Dir(a.companion),
		Path:         a.getenv("PATH"),
		Tmux:         tmuxConfig,
		Quiet:        cfg.Quiet,
		Terminals:    each(terminals, terminalSpec),
		Remotes:      remotes,
		Logger:       a.log,
		// The extensions run with the app's environment, as tmux does: without the KRAD_ADE_*
		// variables of a terminal the app may have been started from.
		Extensions: extension.Config{Extensions: each(cfg.Extensions, extensionSpec), Env: tmuxConfig.Env, Logger: a.log},
		Editor:     app.Editor{Command: cfg.Editor.Command, SSHCommand: cfg.Editor.SSHCommand},
		Askpass:    askpass,
		// ssh's prompts too when config.toml asks, unless the user has an SSH_ASKPASS of their own.
		SSHAskpass: cfg.SSHAskpass && askpass && a.getenv(api.VarSSHAskpass) == "",
		MCP:        p.relay,
	})
	return nil
}

// newBus makes the bus on the listener, in front of the model.
func (a *run) newBus(p *parts) (err error) {
	p.bus, err = local.Listen(local.Config{
		BusToken:  p.busToken,
		LeadToken: p.leadToken,
		Build:     version.Build,
		PID:       a.file.PID,
		Logger:    a.log,
		Handler:   p.model,
		Listener:  p.ln,
	})
	if err != nil {
		return &refusal{err, "check that the loopback interface is up"}
	}
	return nil
}

// sayServing says on stdout where the bus is, then how this computer's environment is reached
// once it is up, or that it is not up yet after readyWait.
func (a *run) sayServing(ctx context.Context, p *parts, discover bool) {
	fmt.Fprintf(a.stdout, "krad-ade: bus on %s; %s\n", p.bus.Addr(), p.where)
	a.log.Info("serving", "endpoint", p.bus.Addr(), "build", version.Build, "pid", a.file.PID, "companion", a.companion, "discovery", discover)
	select {
	case <-p.model.Ready():
		fmt.Fprintf(a.stdout, "krad-ade: environment %s: %s\n", app.Local, p.model.AttachHint(app.Local))
	case <-time.After(readyWait):
		fmt.Fprintf(a.stdout, "krad-ade: environment %s is not up yet; the log says why (is tmux installed?)\n", app.Local)
	case <-ctx.Done():
	}
}

// reloadOnHangup makes each SIGHUP a reload of config.toml and a retry of the failed SSH
// environments, until ctx is done.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, reload chan<- struct{}, hs *hosts) {
	for {
		select {
		case <-hup:
			select {
			case reload <- struct{}{}:
			default:
			}
			// SIGHUP also says "I fixed it": failed SSH environments try again.
			hs.retry()
		case <-ctx.Done():
			return
		}
	}
}

// watchConfig applies each change of config.toml until ctx is done (config.WatchAll), and says
// why one is not applied. The channel it returns is closed when it has stopped.
func (a *run) watchConfig(ctx context.Context, configPath string, reload <-chan struct{}, cfg config.Config, p *parts) <-chan struct{} {
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var recovered func()
		if a.face != nil {
			recovered = a.face.settings.Recovered
		}
		config.WatchAll(ctx, configPath, configPoll, reload, cfg, config.Callbacks{
			Recovered: recovered,
			Holding: func(closes []string) {
				a.log.Info("config.toml closes SSH environments, but it changed a moment ago: applied once it has been left alone 2s (a file being written closes none)",
					"environments", strings.Join(closes, ","))
			},
			Change: func(c config.Config) {
				a.apply(c, p.apiPath)
				p.hosts.apply(c.Environments, each(c.Terminals, terminalSpec))
				if a.face != nil {
					a.face.settings.Applied(c)
				}
			},
			Error: func(err error) {
				if a.face != nil {
					a.face.settings.Failed(err)
				}
				attrs := []any{"path", configPath, "err", err}
				var me *config.ModeError
				if errors.As(err, &me) {
					attrs = append(attrs, "fix", me.Fix)
				}
				a.log.Error("config.toml not applied: nothing changed", attrs...)
			}})
	}()
	return watched
}

// removeFiles removes what the run leaves while it runs: api.json, if it is still its own, and
// the local terminals' token file.
func (a *run) removeFiles(apiPath, tokenFile string) {
	a.removeAPIFile(apiPath)
	a.removeTokenFile(tokenFile)
}

// removeAPIFile removes api.json, if it is still this run's.
func (a *run) removeAPIFile(apiPath string) {
	if err := discovery.RemoveIfOurs(apiPath, a.file.PID); err != nil && !errors.Is(err, discovery.ErrNotOurs) {
		a.log.Warn("api.json left in place", "path", apiPath, "err", err)
	}
}

// apply makes a new configuration true: discovery on writes api.json, off removes it at once.
func (a *run) apply(c config.Config, apiPath string) {
	if c.Discovery {
		if err := discovery.Write(a.dir, a.file); err != nil {
			a.log.Error("discovery turned on, but api.json could not be written", "path", apiPath, "err", err)
			return
		}
		a.log.Info("discovery on: api.json written", "path", apiPath)
		return
	}
	if err := discovery.RemoveIfOurs(apiPath, a.file.PID); errors.Is(err, discovery.ErrNotOurs) {
		a.log.Info("discovery off: api.json belongs to another krad-ade and stays", "path", apiPath)
		return
	} else if err != nil {
		a.log.Error("discovery turned off, but api.json could not be removed", "path", apiPath, "err", err)
		return
	}
	a.log.Info("discovery off: api.json removed", "path", apiPath)
}

// forwardPorts is the port each SSH environment's forward had on its host, kept in forwards.json
// in the config folder across the app's runs.
func (a *run) forwardPorts() *portFile {
	pf := &portFile{path: filepath.Join(a.dir, "forwards.json"), ports: map[string]int{}, log: a.log}
	if b, err := os.ReadFile(pf.path); err == nil {
		if err := json.Unmarshal(b, &pf.ports); err != nil {
			a.log.Warn("forwards.json cannot be read; the hosts pick new ports", "path", pf.path, "err", err)
			pf.ports = map[string]int{}
		}
	}
	return pf
}

// portFile is forwards.json: {"build": 41877}.
type portFile struct {
	path  string
	log   *slog.Logger
	mu    sync.Mutex
	ports map[string]int
}

func (p *portFile) get(env string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ports[env]
}

// set records env's forwarded address, "127.0.0.1:41877", written atomically when it changed.
func (p *portFile) set(env, addr string) {
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ports[env] == n {
		return
	}
	p.ports[env] = n
	b, _ := json.Marshal(p.ports)
	if err := atomicfile.WriteFile(p.path, b, 0o600); err != nil {
		p.log.Warn("forwards.json not written: after a restart the hosts may pick new ports", "path", p.path, "err", err)
	}
}

// instance names this app among others that use the same SSH hosts: the same name across its
// restarts (its token file on a host keeps its path), another for another user or config folder.
func (a *run) instance() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", host, os.Getuid(), a.dir)))
	return "app-" + hex.EncodeToString(sum[:6])
}

// tmuxEnv is the environment of the app's tmux processes: the app's own, without the KRAD_ADE_*
// variables of a terminal the app may have been started from, since every window of the tmux
// server would inherit them.
func tmuxEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, api.VarPrefix) {
			env = append(env, kv)
		}
	}
	return env
}

// each is f of every element of xs, in order: the config's tables as the app's types.
func each[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func agentProfile(a config.Agent) app.AgentProfile {
	return app.AgentProfile{Name: a.Name, Command: a.Command, PromptArg: a.PromptArg, Kind: a.Kind}
}

func groupSetup(s config.Setup) app.GroupSetup {
	return app.GroupSetup{Environment: s.Environment, Rule: worktree.SetupRule{Path: s.Path, Remote: s.Remote,
		Include: s.Include, Command: s.Command, TimeoutSecs: int(s.Timeout / time.Second)}}
}

func extensionSpec(x config.Extension) extension.Spec {
	return extension.Spec{Name: x.Name, Command: x.Command, Env: x.Env, Environments: x.Environments}
}

func terminalSpec(t config.Terminal) app.TerminalSpec {
	return app.TerminalSpec{Environment: t.Environment, Title: t.Title, Command: t.Command, Agent: t.Agent,
		Dir: t.Dir, Lead: t.Lead}
}

// worktreeRoot is where this computer's groups are checked out: the config's folder, its ~/
// the home folder, else app.DefaultWorktreeRoot.
func (a *run) worktreeRoot(configured string) (string, error) {
	if configured == "" {
		return app.DefaultWorktreeRoot(a.getenv)
	}
	if rest, ok := strings.CutPrefix(configured, "~/"); ok {
		home := a.getenv("HOME")
		if !filepath.IsAbs(home) {
			return "", fmt.Errorf("worktrees = %q: HOME is not an absolute path, so ~ means nothing", configured)
		}
		return filepath.Join(home, rest), nil
	}
	return filepath.Clean(configured), nil
}

// findCompanion looks for krad-ade-agents next to the running executable, then on the PATH that
// Run was given (not the process's own, so that tests can hand it another).
func findCompanion(getenv func(string) string) (string, error) {
	exe, err := os.Executable()
	if err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			p := filepath.Join(filepath.Dir(exe), Companion)
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, Companion)
		if isExecutable(p) {
			return p, nil
		}
	}
	where := "on PATH"
	if exe != "" {
		where = "next to " + exe + " or on PATH"
	}
	return "", fmt.Errorf("%s not found %s: the bus is not served", Companion, where)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// makeConfigFolder creates the config folder, owner-only, when it is missing, and checks it as
// config.CheckFolder does.
func makeConfigFolder(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create the config folder: %w", err)
		}
		// MkdirAll's mode went through the umask, which may have been odd.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("create the config folder: %w", err)
		}
	}
	return config.CheckFolder(dir)
}

// printSSHConfig prints what the app resolves for the SSH environment name, in ssh -G's format,
// for a person to compare with ssh -G HOST. It reads config.toml as the app does, once the
// folder has passed the same checks, and needs no lock: the app may be running.
func printSSHConfig(name, configDir string, getenv func(string) string, stdout, stderr io.Writer) int {
	dir, err := configFolder(configDir, getenv)
	if err != nil {
		return refused(stderr, err)
	}
	configPath := filepath.Join(dir, config.FileName)
	if err := config.CheckFolder(dir); err != nil {
		return refused(stderr, configRefusal(configPath, err))
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return refused(stderr, configRefusal(configPath, err))
	}
	var names []string
	for _, env := range cfg.Environments {
		if env.SSH == "" {
			continue
		}
		if env.Name == name {
			h, warnings, err := sshconfig.Resolve(sshconfig.Options{Host: env.SSH})
			for _, w := range warnings {
				fmt.Fprintf(stderr, "krad-ade: warning: %s\n", w)
			}
			if err != nil {
				return fail(stderr, exitError, err.Error(), "fix your ssh config, then run krad-ade --ssh-config "+name+" again")
			}
			io.WriteString(stdout, h.DumpConfig())
			return exitOK
		}
		names = append(names, env.Name)
	}
	hint := "config.toml has no SSH environment"
	if len(names) > 0 {
		hint = "the SSH environments of config.toml: " + strings.Join(names, ", ")
	}
	return fail(stderr, exitUsage, fmt.Sprintf("no SSH environment %s in %s", termsafe.Quote(name), configPath), hint)
}

// configRefusal says why the config folder or config.toml at path stops the app from starting.
func configRefusal(path string, err error) error {
	var me *config.ModeError
	var ce *config.Error
	switch {
	case errors.As(err, &me):
		return &refusal{err, me.Fix}
	case errors.As(err, &ce):
		return &refusal{fmt.Errorf("%w (%s)", err, path), "fix that line, or move the file away to start on the defaults"}
	}
	return &refusal{err, "check that the config folder and config.toml are yours, or pass --config-dir"}
}

// refusal is why the app refuses to start, with the hint a person reads after it.
type refusal struct {
	err  error
	hint string
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refused says why the app refuses to start, and the refusal's hint, and returns exitError.
func refused(stderr io.Writer, err error) int {
	hint := ""
	var r *refusal
	if errors.As(err, &r) {
		hint = r.hint
	}
	return fail(stderr, exitError, err.Error(), hint)
}

// fail prints an error and its hint the way every krad program does, and returns code.
func fail(w io.Writer, code int, msg, hint string) int {
	msg = strings.TrimPrefix(msg, "krad-ade: ")
	fmt.Fprintf(w, "krad-ade: error: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(w, "krad-ade: hint: %s\n", hint)
	}
	return code
}

// askpassWanted says whether the app's terminals get GIT_ASKPASS: krad-ade-askpass is next to
// the companion, and the user has no askpass of their own (GIT_ASKPASS, or git's core.askPass),
// which the app then leaves alone.
func (a *run) askpassWanted() bool {
	if a.getenv("GIT_ASKPASS") != "" {
		return false
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(a.companion), api.AskpassName)); err != nil || fi.IsDir() {
		return false
	}
	out, err := exec.Command("git", "config", "--get", "core.askPass").Output()
	return err != nil || strings.TrimSpace(string(out)) == ""
}
