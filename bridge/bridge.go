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
// with local.FromForward), and the bus refuses any other caller it names. The host's tmux, which
// the host controls, is outside input too: the tmux client bounds its lines and replies, and the
// app bounds the work, the terminals and the log its notifications cause and checks every value it
// reads back; what a failed start of tmux says reaches errors quoted and cut.
package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"weak"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tmux"
	"github.com/krad-ade/krad/tokenfile"
	"github.com/krad-ade/krad/worktree"
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
	spare     spareShell      // the last connect's sh, kept for tmux's first attach
}

// spareShell is a connect's sh on the host, kept past the connect ([forward.Shell.Keep]) for
// the first tmux attach of that connection to exec tmux in: a reconnect then costs the host one
// SSH session and one run of the user's start-up files, not two.
type spareShell struct {
	sh     *forward.Shell
	client *ssh.Client // the connection it belongs to
}

// keepShell keeps sh, the connect's on client, as the spare; a spare of an earlier connect that
// no attach took is ended.
func (e *Environment) keepShell(client *ssh.Client, sh *forward.Shell) {
	sh.Keep()
	e.mu.Lock()
	old := e.spare
	e.spare = spareShell{sh: sh, client: client}
	e.mu.Unlock()
	if old.sh != nil {
		old.sh.Close()
	}
}

// takeShell takes the spare when it is client's, and nil otherwise.
func (e *Environment) takeShell(client *ssh.Client) *forward.Shell {
	e.mu.Lock()
	defer e.mu.Unlock()
	sp := e.spare
	if sp.client != client {
		return nil
	}
	e.spare = spareShell{}
	return sp.sh
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

// TmuxDir is the folder of the host's tmux socket, under the home: the app's own, made and
// checked like the other folders under ~/.krad-ade, rather than tmux's default /tmp/tmux-UID,
// which another user of the host can create first and so keep tmux from starting.
const TmuxDir = "~/.krad-ade/tmux"

// WorktreesDir is the folder under the host's home that holds the checkouts of its groups (the
// worktrees root of package worktree), made and checked like the other folders under ~/.krad-ade:
// a group's checkout is where its worker runs, so no other user may choose it.
const WorktreesDir = "~/.krad-ade/worktrees"

// hostScript ($1 the session, $2 the socket's name) learns what the terminals need to know of the
// host: its home, its PATH, and whether tmux is there; it makes the worktrees root,
// ~/.krad-ade/worktrees, and the socket folder, ~/.krad-ade/tmux, and reports the socket's path,
// and "legacy" when an earlier version's tmux server (tmux -L krad-ade, in tmux's default folder)
// has the session and ours does not; the server's identity (tmuxServer); and the askpass programs
// the user has of their own there, which stay: "own" for git's (GIT_ASKPASS, or git's
// core.askPass), "ssh" for ssh's (SSH_ASKPASS); and "groups" when the worktrees root holds
// anything (else the host has no groups, and after an attach no group to retire).
//
// It runs at every connect, so it starts few programs: tmux is asked about the earlier version's
// server only where a socket of that name is there to ask (a host that never ran one starts no
// tmux here), the boot and the host's name are read by sh's own read from /proc, and git is
// asked for core.askPass only when its global config (GIT_CONFIG_GLOBAL, ~/.gitconfig, or
// git/config under XDG_CONFIG_HOME) may hold one: a file is read by sh, and only one that
// mentions askpass or an include (in any case, as git's keys are) starts git.
var hostScript = shell.Script{Name: "HOST", Body: `
umask 077;
krad_home;
t=$(command -v tmux || true);
h=$HOME; p=$PATH;
krad_enters "~" .krad-ade worktrees;
g=;
for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then g=groups; break; fi; done;
cd .. || krad_fail "enter ~/.krad-ade";
krad_enter tmux "~/.krad-ade/tmux";
s="$PWD/$2";
if [ ${#s} -gt 107 ]; then krad_fail "use the tmux socket $s: its path is longer than the 107 bytes a Unix socket's may have; the home folder's path must be shorter"; fi;
old=;
for f in "${TMUX_TMPDIR:-/tmp}"/tmux-*/krad-ade; do if [ -S "$f" ]; then old=maybe; break; fi; done;
if [ -n "$old" ] && [ -n "$t" ] && ! tmux -S "$s" has-session -t "=$1" >/dev/null 2>&1 && tmux -L krad-ade has-session -t "=$1" >/dev/null 2>&1; then old=legacy; else old=; fi;
b=; { read -r b </proc/sys/kernel/random/boot_id; } 2>/dev/null || b=;
n=; { read -r n </proc/sys/kernel/hostname; } 2>/dev/null || n=$(uname -n);
i=$(ls -di . 2>/dev/null || true);
krad_gitconf() {
  if [ -n "${GIT_CONFIG_GLOBAL+set}" ]; then return 0; fi;
  for f in "$h/.gitconfig" "${XDG_CONFIG_HOME:-$h/.config}/git/config"; do
    if [ -f "$f" ] && [ -r "$f" ]; then while IFS= read -r l || [ -n "$l" ]; do case $l in *[Aa][Ss][Kk][Pp][Aa][Ss][Ss]*|*[Ii][Nn][Cc][Ll][Uu][Dd][Ee]*) return 0;; esac; done <"$f"; fi;
  done;
  return 1;
};
a=;
if [ -n "${GIT_ASKPASS:-}" ] || { krad_gitconf && command -v git >/dev/null 2>&1 && [ -n "$(git config --global --includes --get core.askPass 2>/dev/null)" ]; }; then a=own; fi;
if [ -n "${SSH_ASKPASS:-}" ]; then a="$a ssh"; fi;
krad_say ok "$h" "$p" "$t" "$s" "$old" "$b $n $i $s" "$a" "$g";
`}

// tmuxServer names a tmux server on a host as a line of hostScript: the kernel's boot (its
// boot_id), the host's name, and the inode and path of the socket's folder. Environments that
// are Host aliases of one host, as the same user, share its server.
//
// tmux 3.3a (Debian 12's) crashes (a NULL pointer in the server) when sessions or windows are
// made while other control clients attach: several environments on one server that attach at
// once (the app's start, a laptop's wake) brought it down, and every environment there with it,
// again and again (20 Host aliases of one host took 131 s to come up). starts holds one lock per
// server, taken from the start of a tmux control client to its first reply, so that the
// environments of one server attach one after another, while those of other servers do not wait.
// It narrows the window rather than close it (a window opened by one environment while another
// attaches is not held back): a crash that still happens is healed as any other, by attaching again.
var starts sync.Map // tmuxServer → *sync.Mutex

func startLock(server string) *sync.Mutex {
	mu, _ := starts.LoadOrStore(server, new(sync.Mutex))
	return mu.(*sync.Mutex)
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

// stepError is err, or the *forward.TimeoutError it holds, bare: the status then says first what
// the host did not finish.
func stepError(err error) error {
	var te *forward.TimeoutError
	if errors.As(err, &te) {
		return te
	}
	return err
}

// prepare gets a freshly connected host ready, before the connection counts as up: krad
// installed, the token file written, tmux found and its socket folder made. The looks run first
// in the connect's own sh on the host, in a subshell of it (lent by forward: no SSH session, no
// login shell, not even an sh of their own), with a look at the token file in place of its
// write; on a reconnect, where the file still holds the token and krad's files are those
// verified before, that is all the host is asked.
// Only what the look did not find costs an exec: the token file's write (the token on its stdin,
// which the lent sh cannot carry), the copy of krad. A look that fails there is done again as one
// exec, the token's write with it (a shell.Batch: one SSH exec, one login shell), whose errors
// say in full why, with what the host printed on stderr. Each command has a deadline (the
// Forward's CommandTimeout).
func (e *Environment) prepare(ctx context.Context, client *ssh.Client, fwd forward.Forward, sh *forward.Shell) error {
	h := remote.SSH(client)
	e.mu.Lock()
	last := e.verified
	e.mu.Unlock()
	looks := func(token shell.Step) shell.Batch {
		return shell.Batch{
			remote.ProbeStep(),
			remote.LookStep(e.cfg.Version, last),
			token,
			{Script: hostScript, Args: []string{e.cfg.Name, app.SocketName}, Folders: []string{".krad-ade", ".krad-ade/worktrees", ".krad-ade/tmux"}},
		}
	}
	check, err := tokenfile.CheckStep(e.cfg.Instance)
	if err != nil {
		return forward.Permanent(err)
	}
	batch := looks(check)
	out, runErr := timed{lentShell{sh}, e, "preparing the host"}.Run(ctx, batch.Subshell(), nil)
	if te := (*forward.TimeoutError)(nil); errors.As(runErr, &te) {
		return te
	}
	var (
		tokenPath string
		holds     bool
	)
	l, err := readLooks(e.cfg.Version, batch, out, runErr)
	if err == nil {
		rep, repErr := batch.Result(2, out, runErr)
		tokenPath, holds, err = tokenfile.ReadCheck(e.cfg.Instance, e.cfg.Token, rep, repErr)
	}
	switch {
	case err != nil:
		e.log.Debug("the look in the connect's shell failed: again as an exec", "environment", e.cfg.Name, "error", err)
		token, err := tokenfile.WriteStep(e.cfg.Instance, e.cfg.Token)
		if err != nil {
			return forward.Permanent(err)
		}
		batch = looks(token)
		out, runErr = timed{h, e, "preparing the host"}.Run(ctx, batch.Command(), batch.Stdin())
		if te := (*forward.TimeoutError)(nil); errors.As(runErr, &te) {
			return te
		}
		if l, err = readLooks(e.cfg.Version, batch, out, runErr); err != nil {
			return err
		}
		rep, repErr := batch.Result(2, out, runErr)
		if tokenPath, err = tokenfile.ReadWrite(e.cfg.Instance, rep, repErr); err != nil {
			return err
		}
	case !holds:
		e.log.Debug("the token file is to be written", "environment", e.cfg.Name)
		if tokenPath, err = tokenfile.Write(ctx, timed{h, e, "writing the token file"}, e.cfg.Instance, e.cfg.Token); err != nil {
			return stepError(err)
		}
	}
	plat, found, lines := l.plat, l.found, l.host
	bin, err := readStatic(filepath.Join(e.cfg.BinDir, plat.StaticName()), plat, e.cfg.Version)
	if err != nil {
		return forward.Permanent(fmt.Errorf("the static krad for %s: %w", plat, err))
	}
	binDir, verified, err := remote.InstallFound(ctx, timed{h, e, "installing krad"}, *bin, found, last)
	if err != nil {
		return stepError(err)
	}
	e.mu.Lock()
	e.verified = verified
	e.mu.Unlock()
	home, path, tmuxPath, socket, legacy, server := lines[0], lines[1], lines[2], lines[3], lines[4] == "legacy", lines[5]
	// The user's own askpass on the host (GIT_ASKPASS, or git's core.askPass; SSH_ASKPASS) is
	// left alone.
	own := strings.Fields(lines[6])
	askpass, sshAskpass := !slices.Contains(own, "own"), !slices.Contains(own, "ssh")
	if tmuxPath == "" {
		return fmt.Errorf("tmux is not installed on the host, and its terminals are tmux windows: install it there (Debian: apt-get install tmux)")
	}
	if !safePath(socket) {
		return fmt.Errorf("look at the host: the tmux socket %s is not an absolute path the app can pass on: the home folder's path there "+
			"holds a backslash or a control character; give the user a home folder without them", termsafe.QuoteMax(socket, 200))
	}
	dir := e.cfg.Dir
	if dir == "~" {
		dir = home
	} else if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		dir = home + "/" + rest
	}
	e.mu.Lock()
	e.vars = app.HostVars{
		TerminalVars: api.TerminalVars{Endpoint: fwd.Addr, TokenFile: tokenPath, BinDir: binDir, Path: path, Askpass: askpass, SSHAskpass: askpass && sshAskpass && e.cfg.SSHAskpass},
		Dir:          dir,
	}
	e.groups = lines[7] == "groups"
	e.home = home
	e.socket = socket
	e.server = server
	if legacy && !e.legacy {
		e.log.Info("the host's tmux server of an earlier version (tmux -L krad-ade) has this environment's session: "+
			"the app attaches to it while it runs, and starts no server there", "environment", e.cfg.Name)
	}
	e.legacy = legacy
	e.mu.Unlock()
	e.log.Info("host ready", "environment", e.cfg.Name, "platform", plat.String(), "forward", fwd.Addr, "krad", binDir, "tmux", socket)
	e.keepShell(client, sh)
	return nil
}

// looked is what the looks of a connect read (steps 0, 1 and 3 of prepare's batch): the host's
// platform, what is installed of krad, and hostScript's 8 lines.
type looked struct {
	plat  remote.Platform
	found remote.Found
	host  []string
}

// readLooks reads the looks of prepare's batch. Each step's failure is named by its package
// ("probe the host's platform: …", "install krad: …"), in the order of the steps: the status
// shows it as it is.
func readLooks(version string, batch shell.Batch, out []byte, runErr error) (l looked, err error) {
	if l.plat, err = remote.ReadProbe(batch.Result(0, out, runErr)); err != nil {
		return looked{}, err
	}
	look, err := batch.Result(1, out, runErr)
	if l.found, err = remote.ReadLook(version, look, err); err != nil {
		return looked{}, err
	}
	if l.host, err = batch.Result(3, out, runErr); err != nil {
		return looked{}, fmt.Errorf("look at the host: %w", err)
	}
	if len(l.host) != 8 {
		return looked{}, fmt.Errorf("look at the host: %d lines, want 8", len(l.host))
	}
	return l, nil
}

// lentShell runs commands in the connect's sh that forward lends prepare, as a remote.Host
// whose commands read nothing.
type lentShell struct{ sh *forward.Shell }

func (l lentShell) Run(ctx context.Context, command string, stdin io.Reader) ([]byte, error) {
	if stdin != nil {
		return nil, errors.New("run in the connect's shell: a command there reads nothing")
	}
	return l.sh.Run(ctx, command)
}

// statics shares the static krad that one prepare read with the others under way at the same
// time (the app's start, a laptop's wake): a file of several MiB, read and hashed once rather than
// once per host, held in memory by those prepares only (a weak pointer: the collector frees it
// once the last one is done). A file rebuilt meanwhile (another size or mtime) is read again.
var statics struct {
	mu sync.Mutex
	m  map[staticKey]weak.Pointer[remote.Binary]
}

type staticKey struct {
	path    string
	size    int64
	mtime   time.Time
	plat    remote.Platform
	version string
}

// readStatic is remote.ReadBinary, shared through statics.
func readStatic(path string, plat remote.Platform, version string) (*remote.Binary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read the static krad: %w", err)
	}
	k := staticKey{path: path, size: fi.Size(), mtime: fi.ModTime(), plat: plat, version: version}
	statics.mu.Lock()
	defer statics.mu.Unlock()
	if b := statics.m[k].Value(); b != nil {
		return b, nil
	}
	b, err := remote.ReadBinary(path, plat, version)
	if err != nil {
		return nil, err
	}
	if statics.m == nil {
		statics.m = map[staticKey]weak.Pointer[remote.Binary]{}
	}
	statics.m[k] = weak.Make(&b)
	return &b, nil
}

// safePath says whether p is an absolute path that a command line for the host's login shell
// can carry quoted (see shell.Quote): no control characters, no backslash.
func safePath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' })
}

// Worktree runs a group operation on the host, where the environment's repository is: one SSH
// exec of the static krad installed there, `krad-ade-agents worktree`, with op on its stdin (its
// Dir the environment's folder, "" the home; its Root ~/.krad-ade/worktrees) and the Result as one
// line of JSON on its stdout. It does not wait for a connection: while the host is not connected
// it answers unavailable, with the connection's status. ctx is the request's deadline: when it
// ends, the host is asked to send the command SIGTERM and the session is closed, either of which
// makes the command cancel the operation (a group half made is undone, git is stopped).
func (e *Environment) Worktree(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	e.mu.Lock()
	connected, vars, home := e.connected, e.vars, e.home
	e.mu.Unlock()
	client := e.conn.Client()
	if !isClosed(connected) || client == nil {
		return worktree.Result{}, api.Errorf(api.CodeUnavailable, "environment %s is not connected, so its groups cannot be reached: %s",
			e.cfg.Name, e.conn.Status())
	}
	op.Dir = vars.Dir
	if !strings.HasPrefix(op.Dir, "/") {
		op.Dir = strings.TrimSuffix(home+"/"+op.Dir, "/")
	}
	op.Root = home + strings.TrimPrefix(WorktreesDir, "~")
	if !utf8.ValidString(op.Dir) || !utf8.ValidString(op.Root) {
		// JSON carries only UTF-8 strings: the host would be given another folder.
		return worktree.Result{}, api.Errorf(api.CodeUnavailable, "the folder of environment %s on the host, %s, is not UTF-8, "+
			"and groups need its path passed on as it is: give the environment a folder whose path is UTF-8",
			e.cfg.Name, termsafe.Quote(op.Dir))
	}
	in, err := json.Marshal(op)
	if err != nil {
		return worktree.Result{}, fmt.Errorf("the group operation: %w", err)
	}
	// The answer holds a patch of up to api.MaxPatch bytes, in base64 on the wire, and the list
	// of files: the bus's own bound on an answer's line, not the 1 MiB of the host's other
	// commands.
	h := remote.SSHWith(client, remote.Options{MaxStdout: api.MaxAnswerLine, Stop: ssh.SIGTERM})
	out, err := h.Run(ctx, appGitEnv(e.cfg.Name, vars.TerminalVars)+shell.Quote(vars.BinDir+"/krad-ade-agents")+" worktree", bytes.NewReader(in))
	if err != nil {
		if ctx.Err() != nil {
			return worktree.Result{}, fmt.Errorf("the group operation on the host: %w", context.Cause(ctx))
		}
		return worktree.Result{}, fmt.Errorf("krad-ade-agents worktree on the host: %w", err)
	}
	return readResult(out)
}

// readResult reads the Result krad-ade-agents worktree printed: the last line of out. What the
// host's shell start-up files print comes before it, and may end without a newline, so that
// the line starts with it: the Result is then found at one of the first few '{' of the line.
func readResult(out []byte) (worktree.Result, error) {
	line := bytes.TrimSuffix(out, []byte("\n"))
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var res worktree.Result
	err := errors.New("no '{'")
	for try, rest := 0, line; try < maxNoiseTries; try++ {
		i := bytes.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		res = worktree.Result{}
		if err = json.Unmarshal(rest[i:], &res); err == nil {
			return res, nil
		}
		rest = rest[i+1:]
	}
	return worktree.Result{}, fmt.Errorf("krad-ade-agents worktree on the host printed no result (%s): %s",
		termsafe.Escape(err.Error(), 150), termsafe.Escape(string(line), 200))
}

// maxNoiseTries is how many '{' of the result's line readResult tries: noise before the result
// has few, if any.
const maxNoiseTries = 8

// Stalled says why the host's tmux stopped answering (err): the SSH link, or tmux itself. It asks
// the connection to prove itself (forward.Conn.Check: a keepalive within CheckTimeout) and waits
// for the outcome. A link that does not answer is ended and made again by the connection: the
// error says so, so that a person is not sent to look at a tmux that was never the cause.
func (e *Environment) Stalled(ctx context.Context, err error) error {
	client := e.conn.Client()
	if client == nil {
		return fmt.Errorf("the SSH connection to %s was lost; the app is connecting again: %w", e.cfg.Forward.Host, err)
	}
	e.conn.Check("tmux stopped answering")
	// The check takes CheckTimeout, more on a link whose round trips are slow; bytes that come
	// meanwhile extend it. A link not dropped within stalledWait is said to have held, no more.
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(stalledWait)
	for {
		select {
		case <-ctx.Done():
			return err
		case <-deadline:
			return fmt.Errorf("tmux on %s is not answering, though the SSH link to it held (a keepalive check did not drop it within %s); the app attaches again: %w", e.cfg.Forward.Host, stalledWait, err)
		case <-t.C:
			if e.conn.Client() != client {
				e.log.Info("tmux stopped answering because the SSH link did: the connection is made again", "environment", e.cfg.Name, "host", e.cfg.Forward.Host)
				return fmt.Errorf("the SSH link to %s is not answering (a keepalive had no reply within %s); the app is connecting again: %w", e.cfg.Forward.Host, forward.CheckTimeout, err)
			}
		}
	}
}

// stalledWait is how long Stalled waits for the connection's check.
const stalledWait = 2*forward.CheckTimeout + time.Second

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

// AttachHint is how a person sees the environment's terminals: ssh -t HOST 'tmux -S
// ~/.krad-ade/tmux/krad-ade attach -t NAME', the remote command quoted so that the host's shell
// expands the ~, and HOST quoted for the person's shell when it needs to be (a user name may hold
// quotes or a ';'). session is an environment's name, one plain word. While the app uses an
// earlier version's server, the hint names that one.
func (e *Environment) AttachHint(session string) string {
	e.mu.Lock()
	legacy := e.legacy
	e.mu.Unlock()
	host := shell.Word(e.cfg.Forward.Host)
	if legacy {
		return fmt.Sprintf("ssh -t %s tmux -L %s attach -t %s", host, app.SocketName, session)
	}
	return fmt.Sprintf("ssh -t %s 'tmux -S %s/%s attach -t %s'", host, TmuxDir, app.SocketName, session)
}

// ErrNotConnected is returned by Attach while the host cannot be reached.
var ErrNotConnected = errors.New("the host is not connected")

// Attach waits for the connection, then starts the host's tmux in control mode over SSH (in the
// connect's sh for the connection's first attach, else in a session of its own), attached to
// session (created, with its holder window, if need be), on the socket in ~/.krad-ade/tmux, or
// on an earlier version's server while that one has the session. tmux must answer within the
// Forward's CommandTimeout.
func (e *Environment) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	e.mu.Lock()
	connected := e.connected
	e.mu.Unlock()
	select {
	case <-connected:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	socket, legacy, server := e.socket, e.legacy, e.server
	e.mu.Unlock()
	// The same new-session as on this computer, names escaped for tmux's formats; each argument
	// then quoted for the host's shell.
	opts := tmux.StartOptions{SocketPath: socket, Session: session, WindowName: app.HolderName, Command: app.HolderCommand}
	if legacy {
		// Only ever attached to: the app keeps no server on the old socket, whose folder another
		// user can take (one tmux starts to find no session there exits at once).
		opts = tmux.StartOptions{SocketName: app.SocketName, Session: session, AttachOnly: true}
	}
	args, err := opts.Args()
	if err != nil {
		return nil, err
	}
	cmd := "tmux"
	for _, a := range args {
		cmd += " " + shell.Quote(a)
	}
	client := e.conn.Client()
	if client == nil {
		return nil, ErrNotConnected
	}
	// One attach at a time per tmux server (see starts), up to its first reply.
	start := startLock(server)
	start.Lock()
	stdin, stdout, sess, stderr, err := e.startTmux(client, cmd)
	if err != nil {
		start.Unlock()
		return nil, err
	}
	c, err := e.attach(ctx, stdin, stdout, sess, stderr, onNote)
	start.Unlock()
	if err != nil && legacy && e.legacyGone(ctx, client, session, err) {
		e.mu.Lock()
		e.legacy = false
		e.mu.Unlock()
		e.log.Info("the earlier version's tmux server is gone: the app's own takes its place", "environment", e.cfg.Name, "err", err)
	}
	return c, err
}

// legacyGone says, after an attach to the earlier version's server failed with attachErr, whether
// that server is known not to hold session any more: tmux there says so (has-session exits 1, for
// no server or no such session). The failed attach alone is no evidence: a stuck server times out,
// the connection may have dropped, the app may be stopping; taking any of those for the server's
// end would start a second server on the new socket and leave the old one's agents for good.
func (e *Environment) legacyGone(ctx context.Context, client *ssh.Client, session string, attachErr error) bool {
	var te *forward.TimeoutError
	if ctx.Err() != nil || errors.As(attachErr, &te) {
		return false
	}
	cmd := "tmux -L " + shell.Quote(app.SocketName) + " has-session -t " + shell.Quote("="+session)
	_, err := timed{remote.SSH(client), e, "looking for the earlier version's tmux server"}.Run(ctx, cmd, nil)
	var exit *remote.ExitError
	return errors.As(err, &exit) && exit.Status == 1
}

// startTmux starts cmd, a tmux control client's command line, on client: in the connect's kept
// sh when this is the connection's first attach (no SSH session and no login shell of its own),
// else as an SSH exec of its own, as the login shell runs it. tmux prints before it reads (the
// reply to its command line's command), as the kept sh needs ([forward.Shell.Exec]).
func (e *Environment) startTmux(client *ssh.Client, cmd string) (io.WriteCloser, io.Reader, *ssh.Session, *capped.Buffer, error) {
	if sh := e.takeShell(client); sh != nil {
		stdin, stdout, sess, stderr, err := sh.Exec(cmd)
		if err == nil {
			return stdin, stdout, sess, stderr, nil
		}
		e.log.Debug("tmux could not start in the connect's shell: in a session of its own", "environment", e.cfg.Name, "error", err)
	}
	sess, err := client.NewSession()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("open an SSH session for tmux: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, nil, nil, nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, nil, nil, nil, err
	}
	stderr := capped.First(4 << 10)
	sess.Stderr = stderr
	if err := sess.Start("exec " + cmd); err != nil {
		sess.Close()
		return nil, nil, nil, nil, fmt.Errorf("start tmux on the host: %w", err)
	}
	return stdin, stdout, sess, stderr, nil
}

// attach waits for the first reply of the tmux control client started on sess (tmux.Attach),
// within the Forward's CommandTimeout.
func (e *Environment) attach(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, sess *ssh.Session, stderr *capped.Buffer, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	d := e.cfg.Forward.CommandTimeout
	tctx, cancel := context.WithTimeoutCause(ctx, d, &forward.TimeoutError{Host: e.cfg.Forward.Host, Step: "starting tmux", After: d})
	defer cancel()
	c, err := tmux.Attach(tctx, newSessionRW(stdout, stdin, sess), onNote)
	var ce *tmux.CommandError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &ce):
		// The host's own words, quoted and cut as the tmux package quotes a failed command.
		return nil, fmt.Errorf("tmux on the host: %w", err)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case tctx.Err() != nil:
		return nil, context.Cause(tctx) // the step's *forward.TimeoutError, bare
	default:
		return nil, fmt.Errorf("tmux on the host ended at once: %v: %s", err, termsafe.QuoteMax(strings.TrimSpace(stderr.String()), tmux.MaxErrorText))
	}
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

// sessionRW is an SSH session's stdin and stdout as one stream for the tmux client. Its Close
// ends a Read at once, as the client needs: closing the session alone does not while tmux runs
// on the host (sshd keeps the channel open until the command ends, and a tmux client whose
// server is stopped does not end), so stdout is read through a pipe that Close closes, and the
// copy into it ends with the session or the connection.
type sessionRW struct {
	r *io.PipeReader
	s *ssh.Session

	// wmu is held by Write, and by Close while it ends stdin: the SSH library's channel must
	// not be written and half-closed at once. Close does not wait for a Write (one stalled on
	// a full window would hold it): the session's close ends stdin on the host all the same.
	wmu sync.Mutex
	w   io.WriteCloser
}

func newSessionRW(stdout io.Reader, stdin io.WriteCloser, sess *ssh.Session) *sessionRW {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, stdout)
		pw.CloseWithError(err)
	}()
	return &sessionRW{r: pr, w: stdin, s: sess}
}

func (s *sessionRW) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *sessionRW) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w.Write(p)
}

func (s *sessionRW) Close() error {
	if s.wmu.TryLock() {
		s.w.Close()
		s.wmu.Unlock()
	}
	s.r.Close()
	return s.s.Close()
}
