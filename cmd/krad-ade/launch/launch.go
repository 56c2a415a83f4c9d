// Package launch is the krad-ade program: it checks and locks its config folder, reads the app's
// configuration, makes the tokens, writes the local terminals' token file, opens the bus on
// 127.0.0.1, leaves api.json for other programs while discovery is on, and serves until SIGINT or
// SIGTERM, when it removes api.json (if the file is still its own) and the token file.
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
package launch

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/config"
	"github.com/krad-ade/krad/discovery"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/atomicfile"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/internal/version"
	"github.com/krad-ade/krad/local"
	"github.com/krad-ade/krad/tokenfile"
	"github.com/krad-ade/krad/ui"
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
	fs := pflag.NewFlagSet("krad-ade", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configDir := fs.String("config-dir", "", "the folder of config.toml and api.json (default: $XDG_CONFIG_HOME/krad-ade, else ~/.config/krad-ade)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	leads := fs.StringArray("lead", nil, "open a terminal running `CMD` as the lead of a new session (repeatable)")
	sshConfig := fs.String("ssh-config", "", "print what the app resolved for SSH environment `NAME` from your ssh config, in ssh -G's format, and exit")
	headless := fs.Bool("headless", false, "log to stderr instead of showing the UI, as when stdin or stdout is not a terminal")
	showVersion := fs.Bool("version", false, "print the build and exit")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return fail(stderr, exitUsage, err.Error(), "run krad-ade --help")
	}
	if *help {
		fmt.Fprintf(stdout, "krad-ade: the agents app and its bus.\n\nUsage: krad-ade [flags]\n\nFlags:\n%s", fs.FlagUsages())
		return exitOK
	}
	if *showVersion {
		fmt.Fprintf(stdout, "krad-ade %s (agents API v%d)\n", version.Build, api.Version)
		return exitOK
	}
	if fs.NArg() > 0 {
		return fail(stderr, exitUsage, fmt.Sprintf("krad-ade takes no arguments, got %d", fs.NArg()), "run krad-ade --help")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(stderr, exitUsage, "--log-level must be debug, info, warn or error", "run krad-ade --help")
	}
	// On a terminal the log goes to the UI's log pane and its log file; the lines are the same.
	var shown *face
	logTo := stderr
	if !*headless && !fs.Changed("ssh-config") && onTerminal(os.Stdin, stdout) {
		file, err := openLog(getenv)
		if err != nil {
			return fail(stderr, exitError, err.Error(), "set XDG_STATE_HOME or HOME to an absolute path, or run krad-ade --headless")
		}
		defer file.Close()
		shown = &face{in: os.Stdin, out: stdout.(*os.File), stderr: stderr, lines: ui.NewLogLines(), file: file}
		logTo = io.MultiWriter(shown.lines, file) // the pane first: a full disk stops only the file
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level}))
	if fs.Changed("ssh-config") {
		return printSSHConfig(*sshConfig, *configDir, getenv, stdout, stderr)
	}

	companion, err := findCompanion(getenv)
	if err != nil {
		return fail(stderr, exitError, err.Error(),
			"build krad-ade, krad and krad-ade-agents into one folder (./scripts/start does) and start krad-ade from there")
	}
	dir := *configDir
	if dir == "" {
		if dir, err = discovery.Dir(getenv); err != nil {
			return fail(stderr, exitError, err.Error(), "set XDG_CONFIG_HOME or HOME to an absolute path, or pass --config-dir")
		}
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fail(stderr, exitError, fmt.Sprintf("config folder: %v", err), "pass --config-dir with an absolute path")
	}
	// Nothing in the config folder is read, and nothing is started, before the folder is known
	// to be the user's alone and no other krad-ade runs on it or on its tmux server.
	configPath := filepath.Join(dir, config.FileName)
	if err := makeConfigFolder(dir); err != nil {
		return failConfig(stderr, configPath, err)
	}
	// The tmux server the app drives, as the lock and the app both reach it.
	tmuxConfig := app.TmuxConfig{Env: tmuxEnv(os.Environ())}
	locks, msg, hint := lockInstance(dir, tmuxConfig)
	if locks == nil {
		return fail(stderr, exitError, msg, hint)
	}
	defer locks.release()
	cfg, err := config.Load(configPath)
	if err != nil {
		return failConfig(stderr, configPath, err)
	}

	// The --lead terminals are this run's, not config.toml's: cfg stays what the file says, so
	// that the config watcher does not take them for a change.
	terminals := slices.Clone(cfg.Terminals)
	for _, cmd := range *leads {
		if strings.TrimSpace(cmd) == "" {
			return fail(stderr, exitUsage, "--lead needs a command", "run krad-ade --lead 'claude'")
		}
		terminals = append(terminals, config.Terminal{Command: cmd, Lead: true})
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
	return r.serve(ctx, cfg, tmuxConfig, terminals, configPath, stderr)
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

func (a *run) serve(ctx context.Context, cfg config.Config, tmuxConfig app.TmuxConfig, terminals []config.Terminal, configPath string, stderr io.Writer) (code int) {
	ctx, quit := context.WithCancel(ctx) // the UI's q
	defer quit()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	busToken, err := api.NewToken()
	if err != nil {
		return fail(stderr, exitError, err.Error(), "the system's random source failed; try again")
	}
	leadToken, err := api.NewToken()
	if err != nil {
		return fail(stderr, exitError, err.Error(), "the system's random source failed; try again")
	}
	pid := os.Getpid()

	// What can refuse to start comes before anything is started (tmux, the bus, the bridges), so
	// that a refused start leaves no process behind: the token file, the listener, api.json.
	// undo holds what is made on the way, undone last first if the start fails; it is cleared
	// once the bus is made, and the stop removes the files itself.
	var undo []func()
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}()
	tokenFile, err := tokenfile.Write(ctx, a.shell(), a.instance(), busToken)
	if err != nil {
		return fail(stderr, exitError, err.Error(),
			"krad-ade keeps the local terminals' token file in ~/.krad-ade/run, as on SSH hosts: make ~/.krad-ade a folder of your own, and check that HOME is set")
	}
	undo = append(undo, func() { a.removeTokenFile(tokenFile) })
	// Listen where the terminals of an earlier run still look for the bus, if that port is free.
	ln, err := local.ListenLoopback(app.PreviousEndpoint(ctx, tmuxConfig, app.Local))
	if err != nil {
		return fail(stderr, exitError, err.Error(), "check that the loopback interface is up")
	}
	undo = append(undo, func() { ln.Close() })
	a.file = discovery.File{
		APIVersion: api.Version,
		Endpoint:   ln.Addr().String(),
		Token:      busToken,
		PID:        pid,
		StartedAt:  time.Now().UTC(),
	}
	apiPath := filepath.Join(a.dir, discovery.FileName)
	where := "discovery is off (config.toml), so only the app's terminals find the bus"
	if cfg.Discovery {
		if err := discovery.Write(a.dir, a.file); err != nil {
			return fail(stderr, exitError, err.Error(),
				"check that the folder is yours and the disk has room, or set discovery = false in config.toml")
		}
		undo = append(undo, func() { a.removeAPIFile(apiPath) })
		where = "api.json at " + apiPath
	}
	var model *app.App
	var srv *local.Server
	// Each connection a host makes to its forward reaches the bus through a socket pair, not a
	// second TCP connection, marked with the environment whose forward it came through: the bus
	// lets it speak for that environment only.
	toBus := func(env string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) { return srv.Pipe(ctx, local.FromForward(env)) }
	}
	hs := &hosts{run: a, token: busToken, ports: a.forwardPorts(), toBus: toBus, on: map[string]*host{},
		model: func() *app.App { return model }, sshAskpass: cfg.SSHAskpass}
	var initial []*host
	var remotes []app.Remote
	for _, env := range cfg.Environments {
		h := hs.newHost(env)
		initial = append(initial, h)
		remotes = append(remotes, app.Remote{Name: env.Name, Host: h.bridge, SSH: env.SSH})
	}
	worktrees, err := a.worktreeRoot(cfg.Worktrees)
	if err != nil {
		return fail(stderr, exitError, err.Error(), `set worktrees = "/an/absolute/folder" in config.toml`)
	}
	askpass := a.askpassWanted()
	model = app.New(app.Config{
		WorktreeRoot: worktrees,
		Agents:       agentProfiles(cfg.Agents),
		Endpoint:     ln.Addr().String(),
		Token:        busToken,
		TokenFile:    tokenFile,
		BinDir:       filepath.Dir(a.companion),
		Path:         a.getenv("PATH"),
		Tmux:         tmuxConfig,
		Quiet:        cfg.Quiet,
		Terminals:    terminalSpecs(terminals),
		Remotes:      remotes,
		Logger:       a.log,
		// The extensions run with the app's environment, as tmux does: without the KRAD_ADE_*
		// variables of a terminal the app may have been started from.
		Extensions: extension.Config{Extensions: extensionSpecs(cfg.Extensions), Env: tmuxConfig.Env, Logger: a.log},
		Editor:     app.Editor{Command: cfg.Editor.Command, SSHCommand: cfg.Editor.SSHCommand},
		Askpass:    askpass,
		// ssh's prompts too when config.toml asks, unless the user has an SSH_ASKPASS of their own.
		SSHAskpass: cfg.SSHAskpass && askpass && a.getenv(api.VarSSHAskpass) == "",
	})
	srv, err = local.Listen(local.Config{
		BusToken:  busToken,
		LeadToken: leadToken,
		Build:     version.Build,
		PID:       pid,
		Logger:    a.log,
		Handler:   model,
		Listener:  ln,
	})
	if err != nil {
		return fail(stderr, exitError, err.Error(), "check that the loopback interface is up")
	}
	undo = nil

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	modelled := make(chan struct{})
	go func() {
		defer close(modelled)
		_ = model.Run(ctx)
	}()
	// The bridges outlive ctx by their cleanup: token files are removed from the hosts over the
	// live connections before they close.
	bctx, stopBridges := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBridges()
	hs.ctx, hs.said = bctx, ctx
	hs.mu.Lock()
	for _, h := range initial {
		hs.startLocked(h)
	}
	hs.mu.Unlock()

	reload := make(chan struct{}, 1)
	if a.face != nil {
		shown := a.face.show(ctx, model, cfg, configPath, reload, quit)
		defer func() {
			<-shown // the terminal is given back before krad-ade says it stopped
			if a.face.err != nil {
				code = fail(a.face.stderr, exitError, "the UI stopped: "+a.face.err.Error(), "run krad-ade --headless")
			}
			fmt.Fprintf(a.face.out, "krad-ade: stopped; the terminals keep running (%s); the log is in %s\n",
				model.AttachHint(app.Local), a.face.file.Name())
		}()
	}
	fmt.Fprintf(a.stdout, "krad-ade: bus on %s; %s\n", srv.Addr(), where)
	a.log.Info("serving", "endpoint", srv.Addr(), "build", version.Build, "pid", pid, "companion", a.companion, "discovery", cfg.Discovery)
	select {
	case <-model.Ready():
		fmt.Fprintf(a.stdout, "krad-ade: environment %s: %s\n", app.Local, model.AttachHint(app.Local))
	case <-time.After(readyWait):
		fmt.Fprintf(a.stdout, "krad-ade: environment %s is not up yet; the log says why (is tmux installed?)\n", app.Local)
	case <-ctx.Done():
	}
	go func() {
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
	}()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var recovered func()
		if a.face != nil {
			recovered = a.face.settings.Recovered
		}
		config.WatchAll(ctx, configPath, configPoll, reload, cfg, config.Callbacks{
			Recovered: recovered,
			Change: func(c config.Config) {
				a.apply(c, apiPath)
				hs.apply(c.Environments, terminalSpecs(c.Terminals))
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

	<-ctx.Done()
	<-served
	<-modelled
	<-watched
	hs.stop()
	stopBridges()
	a.removeFiles(apiPath, tokenFile)
	a.log.Info("stopped")
	return exitOK
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

func agentProfiles(as []config.Agent) []app.AgentProfile {
	out := make([]app.AgentProfile, 0, len(as))
	for _, a := range as {
		out = append(out, app.AgentProfile{Name: a.Name, Command: a.Command, PromptArg: a.PromptArg})
	}
	return out
}

func extensionSpecs(xs []config.Extension) []extension.Spec {
	out := make([]extension.Spec, 0, len(xs))
	for _, x := range xs {
		out = append(out, extension.Spec{Name: x.Name, Command: x.Command, Env: x.Env, Environments: x.Environments})
	}
	return out
}

func terminalSpecs(ts []config.Terminal) []app.TerminalSpec {
	specs := make([]app.TerminalSpec, 0, len(ts))
	for _, t := range ts {
		specs = append(specs, app.TerminalSpec{
			Environment: t.Environment,
			Title:       t.Title,
			Command:     t.Command,
			Dir:         t.Dir,
			Lead:        t.Lead,
		})
	}
	return specs
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
	dir := configDir
	if dir == "" {
		var err error
		if dir, err = discovery.Dir(getenv); err != nil {
			return fail(stderr, exitError, err.Error(), "set XDG_CONFIG_HOME or HOME to an absolute path, or pass --config-dir")
		}
	}
	configPath := filepath.Join(dir, config.FileName)
	if err := config.CheckFolder(dir); err != nil {
		return failConfig(stderr, configPath, err)
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return failConfig(stderr, configPath, err)
	}
	var names []string
	for _, env := range cfg.Environments {
		if env.SSH == "" {
			continue
		}
		if env.Name == name {
			h, warnings, err := forward.Config{Host: env.SSH}.Resolve()
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

// failConfig says why the config folder or config.toml at path stops the app from starting.
func failConfig(stderr io.Writer, path string, err error) int {
	var me *config.ModeError
	var ce *config.Error
	switch {
	case errors.As(err, &me):
		return fail(stderr, exitError, err.Error(), me.Fix)
	case errors.As(err, &ce):
		return fail(stderr, exitError, fmt.Sprintf("%v (%s)", err, path), "fix that line, or move the file away to start on the defaults")
	}
	return fail(stderr, exitError, err.Error(), "check that the config folder and config.toml are yours, or pass --config-dir")
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
