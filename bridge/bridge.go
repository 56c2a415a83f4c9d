// Package bridge makes an SSH host an environment of the app: it keeps a supervised SSH
// connection to the host (package forward) with a reverse forward of the bus on the host's
// loopback, and after every (re)connect it gets the host ready: the static krad installed for the
// host's platform (package remote), the bus token written to an owner-only file (package
// tokenfile), tmux found and its socket folder made. It then serves the app as an app.Host: the
// host's tmux, driven in control mode over SSH (the first attach of a connection in the connect's
// own sh, exec'd: no session of its own), and the variables its terminals get;
// and the environment's groups, whose git operations run on the host, in the static krad installed
// there ([Environment.Worktree]), checked out under ~/.krad-ade/worktrees ([WorktreesDir]).
//
// Every command it runs on the host, and tmux's attach, has a deadline (the Forward's
// CommandTimeout, 30 s): a host whose shell start-up files loop, or whose tmux does not answer,
// fails the attempt with a *forward.TimeoutError that names the step, and the attempt is retried.
//
// The host's tmux server listens on ~/.krad-ade/tmux/krad-ade ([TmuxDir]), a folder of the
// app's own, rather than in tmux's default folder, /tmp/tmux-UID, which any user of the host can
// create first (tmux then refuses it, for good). A host prepared by an earlier version may still
// run a server on the old socket (tmux -L krad-ade) holding the environment's terminals: while it
// has the environment's session and the new socket has none, the app attaches to it (never
// starting a server there), so that an upgrade loses no running agent; once tmux there says it is
// gone (an attach that times out, or fails while the app stops, is not enough), the new socket
// takes its place for good.
//
// # Security model
//
// The token reaches the host only on the stdin of an SSH session, into a 0600 file in a 0700
// folder of the user's; terminals there get the file's path (KRAD_ADE_TOKEN_FILE), never the
// token. The forward listens on the host's 127.0.0.1 only (forward refuses a host whose sshd
// would bind every interface), and the static krad there checks that the listener behind its
// endpoint is its own user's before it sends the token (package listenowner). The token file is
// removed when the app exits cleanly ([Environment.Cleanup]). The tmux socket's folder is made
// and checked as the other folders under ~/.krad-ade are (package remote/shell: no symbolic link,
// no other user's folder, made 0700), so that no other user can reach the server or keep it from
// starting. Anyone who is root on the host, or the user there, can read the token while the app
// runs: the bridge protects it from other users.
// What the token opens from there is the host's own environment only: the Target the caller gives
// forward.Config must hand each connection to the bus as that environment's (local.Server.Pipe
// with access.FromForward), and the bus refuses any other caller it names. The host's tmux, which
// the host controls, is outside input too: the tmux client bounds its lines and replies, and the
// app bounds the work, the terminals and the log its notifications cause and checks every value it
// reads back; what a failed start of tmux says reaches errors quoted and cut.
package bridge

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tokenfile"
)

// Config is one SSH environment's bridge.
type Config struct {
	// Name is the environment's name: its tmux session on the host, E in E:N.
	Name string
	// Dir is the terminals' working folder on the host; a leading ~/ is the host's home.
	Dir string
	// Token is the bus token, for the host's token file.
	Token api.Token
	// Instance names this app among others that use the same host: its token file is
	// ~/.krad-ade/run/<Instance>/token, the same path across the app's restarts.
	Instance string
	// BinDir is the local folder with the static builds, krad-linux-amd64 and krad-linux-arm64.
	BinDir string
	// Version is the build installed on hosts, in ~/.krad-ade/bin/<Version>.
	Version string
	// Forward is the connection's configuration. Its Host and Target are required; OnConnect is
	// the bridge's own, and OnStatus is called after the bridge has seen the status. Its
	// CommandTimeout (zero is forward.DefaultCommandTimeout, 30 s) bounds, besides the forward's
	// own check, each command the bridge runs on the host after a connect (the look at the host
	// with the token file, and the copy of krad), and tmux's attach and first reply: a host that
	// passes it is retried, with a *forward.TimeoutError that says which step. A command that is
	// sent a file (the static krad) has it from the last byte the host took, so that a slow link
	// takes as long as it needs.
	Forward forward.Config
	// Logger gets what the bridge did on each connect; nil discards.
	Logger *slog.Logger
	// SSHAskpass: the host's terminals get SSH_ASKPASS too ([git] ssh_askpass), when they get
	// GIT_ASKPASS.
	SSHAskpass bool
}

// Environment is one SSH environment's bridge. It implements app.Host.
type Environment struct {
	cfg  Config
	conn *forward.Conn
	log  *slog.Logger

	mu        sync.Mutex
	vars      app.HostVars
	home      string          // the user's home folder on the host, as of the last connect
	socket    string          // the tmux server's socket on the host, ~/.krad-ade/tmux/krad-ade
	server    string          // the tmux server's identity (hostScript), which its starts lock
	legacy    bool            // attach to an earlier version's server, tmux -L krad-ade, instead
	verified  remote.Verified // the krad installed there, as the last connect checked it
	groups    bool            // the worktrees root held anything at the last connect
	connected chan struct{}   // closed while connected; replaced when the connection goes
	// attachedOn is the SSH client whose session runs the tmux of the last attach that
	// succeeded: what Stalled asks about.
	attachedOn *ssh.Client
	spare      spareShell // the last connect's sh, kept for tmux's first attach
}

var _ app.Host = (*Environment)(nil)

// listeners is the command that lists the host's sockets listening on port for the check of
// the forward (forward.Config.Listeners): the static krad installed there at the last connect,
// which asks the kernel for the listeners alone, rather than sh reading /proc/net/tcp, which
// walks the kernel's whole table of connections. Before the first connect, none: the files are
// read. It runs before this connect's look at krad, from the folder of the app's own version
// under ~/.krad-ade/bin, which that look and every earlier one found to be the user's own and
// no one else's to write; if it is gone or fails, the files are read.
func (e *Environment) listeners(port int) string {
	e.mu.Lock()
	dir := e.vars.BinDir
	e.mu.Unlock()
	if dir == "" || !safePath(dir) {
		return ""
	}
	return shell.Quote(dir+"/krad-ade-agents") + " listeners " + strconv.Itoa(port)
}

// New makes an SSH environment's bridge; Run connects it.
func New(cfg Config) *Environment {
	if cfg.Forward.CommandTimeout <= 0 {
		cfg.Forward.CommandTimeout = forward.DefaultCommandTimeout
	}
	e := &Environment{cfg: cfg, log: cfg.Logger, connected: make(chan struct{})}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	fc := cfg.Forward
	onStatus := fc.OnStatus
	fc.OnConnect = e.prepare
	fc.Listeners = e.listeners
	fc.OnStatus = func(s forward.Status) {
		e.status(s)
		if onStatus != nil {
			onStatus(s)
		}
	}
	e.conn = forward.New(fc)
	return e
}

// Run keeps the connection up until ctx is done; a failed connection waits there for a fix
// (see forward.Conn.Run).
func (e *Environment) Run(ctx context.Context) error { return e.conn.Run(ctx) }

// Retry tries a failed (or retrying) connection again at once: the person says they fixed it.
func (e *Environment) Retry() { e.conn.Retry() }

// Host is the SSH host as configured: a Host alias of ssh_config, or [user@]host[:port].
func (e *Environment) Host() string { return e.cfg.Forward.Host }

// Status is the connection's status now.
func (e *Environment) Status() forward.Status { return e.conn.Status() }

func (e *Environment) status(s forward.Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	up := isClosed(e.connected)
	switch {
	case s.State == forward.Connected && !up:
		close(e.connected)
	case s.State != forward.Connected && up:
		e.connected = make(chan struct{})
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Vars is what terminals on the host get, as of the last connect.
func (e *Environment) Vars() app.HostVars {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.vars
}

// MayHaveGroups is false when the host's worktrees root was empty at the last connect.
func (e *Environment) MayHaveGroups() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.groups
}

// Cleanup removes the token file from the host, if the connection is up; the app calls it as it
// exits cleanly.
func (e *Environment) Cleanup(ctx context.Context) error {
	client, path := e.conn.Client(), e.Vars().TokenFile
	if client == nil || path == "" {
		return nil
	}
	return tokenfile.Remove(ctx, remote.SSH(client), path)
}

// timed is a remote.Host whose every command has the bridge's deadline; past it the command fails
// with a *forward.TimeoutError for step. A command sent a file on stdin (the static krad) has the
// deadline from the last byte the host took (forward.WithinReading): a slow link takes as long as
// it needs, and a host that takes nothing fails as soon as for any other command.
type timed struct {
	h    remote.Host
	e    *Environment
	step string
}

func (t timed) Run(ctx context.Context, command string, stdin io.Reader) (out []byte, err error) {
	d, host := t.e.cfg.Forward.CommandTimeout, t.e.cfg.Forward.Host
	if _, file := stdin.(interface{ Size() int64 }); file {
		err = forward.WithinReading(ctx, host, t.step, d, stdin, func(ctx context.Context, stdin io.Reader) (err error) {
			out, err = t.h.Run(ctx, command, stdin)
			return err
		})
		return out, err
	}
	err = forward.Within(ctx, host, t.step, d, func(ctx context.Context) (err error) {
		out, err = t.h.Run(ctx, command, stdin)
		return err
	})
	return out, err
}

// safePath says whether p is an absolute path that a command line for the host's login shell
// can carry quoted (see shell.Quote): no control characters, no backslash.
func safePath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' })
}
