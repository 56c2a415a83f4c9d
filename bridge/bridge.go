// Package bridge makes an SSH host an environment of the app: it keeps a supervised SSH
// connection to the host (package forward) with a reverse forward of the bus on the host's
// loopback, and after every (re)connect it gets the host ready: the static krad installed for the
// host's platform (package remote), the bus token written to an owner-only file (package
// tokenfile). It then serves the app as an app.Host: the host's tmux, driven in control mode over
// an SSH session, and the variables its terminals get.
//
// # Security model
//
// The token reaches the host only on the stdin of an SSH session, into a 0600 file in a 0700
// folder of the user's; terminals there get the file's path (KRAD_ADE_TOKEN_FILE), never the
// token. The forward listens on the host's 127.0.0.1 only (forward refuses a host whose sshd
// would bind every interface), and the static krad there checks that the listener behind its
// endpoint is its own user's before it sends the token (package listenowner). The token file is
// removed when the app exits cleanly ([Environment.Cleanup]). Anyone who is root on the host, or
// the user there, can read the token while the app runs: the bridge protects it from other users.
// What the token opens from there is the host's own environment only: the Target the caller gives
// forward.Config must hand each connection to the bus as that environment's (local.Server.Pipe
// with local.FromForward), and the bus refuses any other caller it names. The host's tmux, which
// the host controls, is outside input too: the tmux client bounds its lines and replies, and the
// app bounds the work, the terminals and the log its notifications cause and checks every value it
// reads back; what a failed start of tmux says reaches errors quoted and cut.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/forward"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tmux"
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
	// the bridge's own, and OnStatus is called after the bridge has seen the status.
	Forward forward.Config
	// Logger gets what the bridge did on each connect; nil discards.
	Logger *slog.Logger
}

// Environment is one SSH environment's bridge. It implements app.Host.
type Environment struct {
	cfg  Config
	conn *forward.Conn
	log  *slog.Logger

	mu        sync.Mutex
	vars      app.HostVars
	connected chan struct{} // closed while connected; replaced when the connection goes
}

var _ app.Host = (*Environment)(nil)

// New makes an SSH environment's bridge; Run connects it.
func New(cfg Config) *Environment {
	e := &Environment{cfg: cfg, log: cfg.Logger, connected: make(chan struct{})}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	fc := cfg.Forward
	onStatus := fc.OnStatus
	fc.OnConnect = e.prepare
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

// hostScript learns what the terminals need to know of the host: its home, its PATH, and
// whether tmux is there.
var hostScript = shell.Script{Name: "HOST", Body: `
krad_home;
t=$(command -v tmux || true);
krad_say ok "$HOME" "$PATH" "$t";
`}

// prepare gets a freshly connected host ready, before the connection counts as up: krad
// installed, the token file written, tmux found.
func (e *Environment) prepare(ctx context.Context, client *ssh.Client, fwd forward.Forward) error {
	h := remote.SSH(client)
	plat, err := remote.Probe(ctx, h)
	if err != nil {
		return err
	}
	bin, err := remote.ReadBinary(filepath.Join(e.cfg.BinDir, plat.StaticName()), plat, e.cfg.Version)
	if err != nil {
		return forward.Permanent(fmt.Errorf("the static krad for %s: %w", plat, err))
	}
	binDir, err := remote.Install(ctx, h, bin)
	if err != nil {
		return fmt.Errorf("install krad on the host: %w", err)
	}
	tokenPath, err := tokenfile.Write(ctx, h, e.cfg.Instance, e.cfg.Token)
	if err != nil {
		return fmt.Errorf("write the token file on the host: %w", err)
	}
	out, runErr := h.Run(ctx, hostScript.Command(), nil)
	lines, err := hostScript.Result(out, runErr)
	if err != nil {
		return fmt.Errorf("look at the host: %w", err)
	}
	if len(lines) != 3 {
		return fmt.Errorf("look at the host: %d lines, want 3", len(lines))
	}
	home, path, tmuxPath := lines[0], lines[1], lines[2]
	if tmuxPath == "" {
		return fmt.Errorf("tmux is not installed on the host, and its terminals are tmux windows: install it there (Debian: apt-get install tmux)")
	}
	dir := e.cfg.Dir
	if dir == "~" {
		dir = home
	} else if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		dir = home + "/" + rest
	}
	e.mu.Lock()
	e.vars = app.HostVars{
		Endpoint:  fwd.Addr,
		TokenFile: tokenPath,
		BinDir:    binDir,
		Path:      withoutDir(path, binDir),
		Dir:       dir,
	}
	e.mu.Unlock()
	e.log.Info("host ready", "environment", e.cfg.Name, "platform", plat.String(), "forward", fwd.Addr, "krad", binDir)
	return nil
}

// withoutDir is PATH without dir, which the terminals get first.
func withoutDir(path, dir string) string {
	var keep []string
	for _, p := range strings.Split(path, ":") {
		if p != dir && p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ":")
}

// Vars is what terminals on the host get, as of the last connect.
func (e *Environment) Vars() app.HostVars {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.vars
}

// AttachHint is how a person sees the environment's terminals.
func (e *Environment) AttachHint(session string) string {
	return fmt.Sprintf("ssh -t %s tmux -L %s attach -t %s", e.cfg.Forward.Host, app.SocketName, session)
}

// ErrNotConnected is returned by Attach while the host cannot be reached.
var ErrNotConnected = errors.New("the host is not connected")

// Attach waits for the connection, then starts the host's tmux in control mode over an SSH
// session, attached to session (created, with its holder window, if need be).
func (e *Environment) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	e.mu.Lock()
	connected := e.connected
	e.mu.Unlock()
	select {
	case <-connected:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	client := e.conn.Client()
	if client == nil {
		return nil, ErrNotConnected
	}
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open an SSH session for tmux: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	var stderr limited
	sess.Stderr = &stderr
	// The same new-session as on this computer: names escaped for tmux's formats, then quoted
	// for the host's shell.
	args, err := tmux.NewSessionArgs(session, 200, 50, app.HolderName, app.HolderCommand)
	if err != nil {
		sess.Close()
		return nil, err
	}
	cmd := "exec tmux -u -L " + shell.Quote(app.SocketName) + " -C"
	for _, a := range args {
		cmd += " " + shell.Quote(a)
	}
	if err := sess.Start(cmd); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start tmux on the host: %w", err)
	}
	var cell atomic.Pointer[tmux.Client]
	first := make(chan tmux.UnsolicitedReply, 1)
	var once sync.Once
	c := tmux.New(&sessionRW{r: stdout, w: stdin, s: sess}, func(n tmux.Notification) {
		if r, ok := n.(tmux.UnsolicitedReply); ok {
			once.Do(func() { first <- r })
		}
		onNote(cell.Load(), n)
	})
	cell.Store(c)
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case r := <-first:
		if r.Failed {
			c.Close()
			// The host's own words, quoted and cut as the tmux package quotes a failed command.
			return nil, fmt.Errorf("tmux on the host: %w", &tmux.CommandError{Lines: r.Lines})
		}
		return c, nil
	case <-c.Done():
		return nil, fmt.Errorf("tmux on the host ended at once: %v: %s", c.Err(), termsafe.Quote(stderr.String()))
	case <-timeout.C:
		c.Close()
		return nil, fmt.Errorf("tmux on the host did not answer within 30 s")
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
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

// sessionRW is an SSH session's stdin and stdout as one stream for the tmux client.
type sessionRW struct {
	r io.Reader
	w io.WriteCloser
	s *ssh.Session
	// wmu is held by Write: x/crypto/ssh's CloseWrite (stdin's Close) is not safe beside a Write.
	wmu sync.Mutex
}

func (s *sessionRW) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *sessionRW) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w.Write(p)
}

// Close ends tmux's input, then the session. A Write still in flight (the host reads slowly, or
// not at all) is not waited for: closing the session ends it.
func (s *sessionRW) Close() error {
	if s.wmu.TryLock() {
		s.w.Close()
		s.wmu.Unlock()
	}
	return s.s.Close()
}

// limited keeps the first 4 KiB written to it: tmux's stderr, for errors.
type limited struct {
	mu sync.Mutex
	b  []byte
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 4<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limited) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.b))
}
