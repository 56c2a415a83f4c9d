package forward

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/sshconfig"
)

// Defaults for what Config does not set. (ConnectTimeout and the keepalives have theirs in
// ssh_config's package: [sshconfig.DefaultConnectTimeout] and the two after it.)
const (
	DefaultMinBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultCommandTimeout = 30 * time.Second
)

// None, as a file or socket in Config, means no file or socket at all, as ssh -F none does.
const None = sshconfig.None

// Config describes one SSH environment's connection. Host and Target are required; the zero
// value of every other field means ssh's own default.
type Config struct {
	// Host is the SSH host as ssh takes it on its command line: a Host alias of ssh_config
	// ("buildbox"), or [user@]host[:port]. A user or port given here wins over ssh_config's.
	Host string

	// Target opens a connection to what the forward leads to (the local bus), once for each
	// connection accepted on the host. The two are piped together both ways, with half-close,
	// and a close of either is carried as a close (see the package documentation).
	Target func(ctx context.Context) (net.Conn, error)

	// OnConnect, when set, runs after each (re)connect, once the forward is open and checked and
	// before the state says connected: the caller's own steps on the new client (write the token
	// file, install the CLI, attach tmux). Its ctx ends when the connection does. An error is
	// treated as a failed connect: retried, unless it is wrapped in [Permanent]. The status shows
	// the error as it is, so it should name the step that failed ("write the token file: …").
	// sh is the plain sh on the host that checked the forward, lent for the call: what it runs
	// costs the host no SSH session and no login shell of its own (see [Shell]). OnConnect may
	// keep it, to exec a long-running command in it later ([Shell.Keep]).
	OnConnect func(ctx context.Context, client *ssh.Client, fwd Forward, sh *Shell) error

	// OnStatus, when set, is called with each new status, in order, from Run's goroutine. It
	// should return quickly.
	OnStatus func(Status)

	// OnWarning, when set, is called once for each ssh_config line the package could not read
	// and left out. Without it warnings go to Logger.
	OnWarning func(sshconfig.Warning)

	// Logger receives the details: connections accepted and refused, a stale session ended.
	// Nil discards them.
	Logger *slog.Logger

	// UserConfig is the user's ssh_config file, ~/.ssh/config if empty; SystemConfig the
	// system-wide one, /etc/ssh/ssh_config if empty. [None] reads no file.
	UserConfig, SystemConfig string

	// KnownHosts is the user's known_hosts file, ~/.ssh/known_hosts (and known_hosts2) if empty.
	// A UserKnownHostsFile in ssh_config wins over it. Unknown host keys accepted under
	// StrictHostKeyChecking accept-new are added to it.
	KnownHosts string

	// AgentSocket is the ssh-agent's socket, $SSH_AUTH_SOCK if empty; [None] uses no agent. An
	// IdentityAgent in ssh_config wins over it.
	AgentSocket string

	// Home is the folder "~" and %d stand for, and where OpenSSH's default identity files are
	// looked for; the user's home if empty.
	Home string

	// ConnectTimeout, ServerAliveInterval and ServerAliveCountMax, when not zero, win over
	// ssh_config's values, as ssh -o does. They take durations shorter than a second, which
	// ssh_config cannot.
	ConnectTimeout      time.Duration
	ServerAliveInterval time.Duration
	ServerAliveCountMax int

	// CommandTimeout bounds the commands a connect runs on the host once the handshake is done
	// (checking the forward, which waits for the user's shell start-up files), each, so that a
	// ~/.bashrc that loops fails the attempt with a [*TimeoutError] instead of holding it for
	// good. It bounds each read of the host's sockets while connected too (telling a client's
	// close from its half-close): a shell that passes it is dropped for a new one. Zero is DefaultCommandTimeout. OnConnect's own steps need deadlines of their own:
	// [Within] gives them.
	CommandTimeout time.Duration

	// Listeners, when set, gives a command line for the connect's sh that prints the host's TCP
	// sockets listening on port, as the lines of /proc/net/tcp and tcp6 with a header: what the
	// check of the forward reads, in place of those files, whose reading walks the kernel's whole
	// table of connections (on a host with much memory, several milliseconds each). An empty
	// line means the files. The check adds --of PID --sections MARKER to it: the command then
	// prints, each part after a line MARKER and its name, our uid ("uid"), the sockets process
	// PID holds ("fd", as ls -l /proc/PID/fd ends their lines) and the table ("tcp"), which id
	// and ls would otherwise be started for. When the command fails or prints no header, id, ls
	// and the files are read. The bridge gives the static krad it installed on the host
	// (krad-ade-agents listeners).
	Listeners func(port int) string

	// PreferredPort is the port to ask the host for on the first connect, for instance the one
	// the app had before it restarted; 0 lets the host choose. Later reconnects ask for the port
	// of the connection before.
	PreferredPort int

	// Dialer, when set, opens the TCP connection to the first hop instead of net.Dialer. Tests
	// route it through a proxy they control.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

	// MinBackoff and MaxBackoff bound the wait between failed connects: it starts at MinBackoff,
	// doubles up to MaxBackoff, and is jittered by ±20%. Defaults 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
}

// check validates c and fills in its defaults.
func (c Config) check() (Config, error) {
	if c.Host == "" {
		return c, errors.New("forward: Config.Host is empty")
	}
	if c.Target == nil {
		return c, errors.New("forward: Config.Target is nil")
	}
	if c.PreferredPort < 0 || c.PreferredPort > 65535 {
		return c, errors.New("forward: Config.PreferredPort out of range")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.Dialer == nil {
		var d net.Dialer
		c.Dialer = d.DialContext
	}
	return c, nil
}

// sshConfig is what c says of the host's ssh_config: which files, and what wins over them.
func (c Config) sshConfig() sshconfig.Options {
	return sshconfig.Options{
		Host:                c.Host,
		UserConfig:          c.UserConfig,
		SystemConfig:        c.SystemConfig,
		KnownHosts:          c.KnownHosts,
		Home:                c.Home,
		ConnectTimeout:      c.ConnectTimeout,
		ServerAliveInterval: c.ServerAliveInterval,
		ServerAliveCountMax: c.ServerAliveCountMax,
	}
}

// agentSocket returns the agent's socket as Config gives it: "" for none.
func (c Config) agentSocket() string {
	switch c.AgentSocket {
	case None:
		return ""
	case "":
		return os.Getenv("SSH_AUTH_SOCK")
	}
	return c.AgentSocket
}
