// Package forward keeps one SSH connection per SSH environment up, with a reverse forward on the
// host's loopback that leads back to a local target (the agents bus). It knows nothing of what
// goes through: it moves bytes.
//
// # Use
//
//	c := forward.New(forward.Config{
//		Host: "buildbox", // a Host alias of ~/.ssh/config, or [user@]host[:port]
//		Target: func(ctx context.Context) (net.Conn, error) {
//			var d net.Dialer
//			return d.DialContext(ctx, "tcp", bus.Addr())
//		},
//		OnConnect: func(ctx context.Context, client *ssh.Client, fwd forward.Forward, sh *forward.Shell) error {
//			// Write the token file, install the CLI, attach tmux: on every (re)connect,
//			// before the state says connected. fwd.Addr is "127.0.0.1:41877" on the host.
//			return nil
//		},
//		OnStatus: func(s forward.Status) { log.Printf("environment build: %s", s) },
//	})
//	err := c.Run(ctx) // until ctx ends (nil); an error only for a Config without Host or Target
//
// [Conn.Status], [Conn.Client], [Conn.Addr] and [Conn.Retry] may be called at any time from any
// goroutine.
//
// # What a connect does
//
//  1. ssh_config is read again (~/.ssh/config, then /etc/ssh/ssh_config; see
//     [sshconfig.Resolve]), so an edit takes effect at the next connect.
//  2. The first hop is dialed (through [Config.Dialer] when set), or reached through its
//     ProxyCommand, and each later hop through the previous hop's client; each hop has its own
//     handshake timeout, ConnectTimeout (15 s by default), over the dial and the whole SSH
//     handshake. A first hop's TCP connection acknowledges what it reads at once, on Linux:
//     sshd sends with Nagle's algorithm on until a session's command starts (a bastion, for
//     good), and a reply it held behind one not yet acknowledged cost each connect 40 ms of
//     the client's delayed ACK (quickack_linux.go).
//  3. Each hop's key is checked against known_hosts, and the keys are offered: the agent's, then
//     the identity files'.
//  4. Keepalives start (keepalive@openssh.com, every ServerAliveInterval).
//  5. A plain sh starts on the host, and the host is asked for a reverse forward on 127.0.0.1: on
//     port 0 (the host chooses) the first time, and on the port of the connection before after a
//     reconnect, so that the variables of terminals already running stay true.
//  6. Through that sh, the host's /proc/net/tcp says whether the forward listens on loopback only,
//     and the pid of the sshd process serving this connection is recorded. Only that session's
//     listeners count (our uid's, and among its own descriptors where those are readable):
//     another user's on the same port, on [::] or the host's LAN address, neither exposes our
//     forward nor receives what is sent to 127.0.0.1, so it is left alone (and logged).
//  7. Connections accepted on the host are piped to Target, both ways, with half-close; and a
//     close is carried as a close. Through SSH a client on the host that closes its socket looks
//     like one that half-closed (sshd sends the channel's EOF either way), so once a
//     connection's input from the host has ended, the host's /proc/net/tcp is read every second
//     (through one sh for all such connections, each read under CommandTimeout's deadline) until
//     the client's socket is gone or held by no process: then both sides are closed. Target's
//     close (hangup, or any end of input where hangup cannot tell) closes both too.
//  8. OnConnect runs, with that sh lent to it ([Shell]); then the sh ends, unless OnConnect kept
//     it for a command to exec there later ([Shell.Keep], [Shell.Exec]), and the state is
//     connected.
//
// Steps 5 and 6 run commands through the user's login shell, which reads its start-up files
// first: each has a deadline, [Config.CommandTimeout] (30 s), so that a ~/.bashrc that loops or
// waits fails the attempt with a [*TimeoutError] ("the host did not finish checking the forward
// within 30s: …") instead of leaving it connecting for good, and a later attempt connects once
// the file is fixed. OnConnect's steps get deadlines of their own through [Within].
//
// # ssh_config
//
// The host is resolved through ssh_config by package [sshconfig], as ssh -G resolves it:
// HostName, Port, User, the identities, the known_hosts files and how strictly they are held,
// the timers, and ProxyJump or ProxyCommand. A line it could not read is left out and reported
// as a [sshconfig.Warning] naming the file and line, through [Config.OnWarning]; a value it
// cannot act on fails the attempt with a [*sshconfig.ConfigError]. Config's UserConfig,
// SystemConfig, KnownHosts, Home and timers are its [sshconfig.Options]. A Match exec command
// that runs past 10 s fails the attempt, which is retried.
//
// # ProxyCommand
//
// A host with a ProxyCommand is reached as ssh reaches it: the command runs as /bin/sh -c "exec
// COMMAND", with the app's environment, and its stdin and stdout are the connection. Only the
// first host of a chain uses its own: ssh ignores the ProxyCommand of the hops it reaches
// through another (ssh -J a,b runs a's, not b's). Of ProxyJump and ProxyCommand the one read
// first wins, as in ssh (ProxyJump none leaves room for a later ProxyCommand). %r puts
// the user name in a command the shell reads, so a user name with characters the shell acts on
// ('$', ';', quotes, …) is refused there, as ssh refuses it on its command line.
//
// The command runs in a process group of its own. When the connection ends, for whatever reason,
// the group is sent SIGTERM, then SIGKILL one second later if the command is still there, and
// whatever else of the group is left is killed too; the command is reaped: nothing it started
// outlives the connection. Its stderr is not shown; the last 2 KiB of it are kept, and when it
// exits by itself the error says so, with its status and the last line it wrote (escaped, so
// that it cannot act on a terminal), e.g. "connect to 10.0.0.1:22: ProxyCommand "nc 10.0.0.1 22"
// exited with status 1: nc: connect to 10.0.0.1 port 22 (tcp) failed: Connection refused".
// Such failures are retried, as a refused TCP connection is; but the wait before the next
// attempt is the backoff alone, since the probes that end it early when the path is back dial
// TCP, which says nothing of the command's way. netcat does not end when the host closes the
// connection while its stdin stays open, so there, as with ssh, keepalives notice a lost one.
// ProxyCommand runs on Linux only.
//
// # Authentication
//
// Keys are offered in this order: the agent's ($SSH_AUTH_SOCK, [Config.AgentSocket] or
// IdentityAgent), then the identity files (~/.ssh/id_ed25519, id_ecdsa, id_rsa when none is
// configured). Under IdentitiesOnly the agent offers only the keys of the identity files (their
// public halves are read from the private key file or from the .pub beside it). A passphrase is
// never asked for: an encrypted identity file is used through the agent's copy, and when no
// agent holds it the failure is an [*AuthError] that names it and says to ssh-add it. With no key
// at all to offer the failure comes before dialing. User certificates and security keys (*_sk)
// are not used.
//
// # Host keys
//
// Each hop's key is checked against its known_hosts files by package [knownhosts], as ssh
// checks it: host certificates against @cert-authority lines, then plain keys; an unknown host
// is added only under StrictHostKeyChecking accept-new or no, and a changed key is never
// accepted. A refusal is a [*knownhosts.HostKeyError] that says what to run once a person has
// checked the key.
//
// # Keepalives, reconnects, states
//
// A request that goes unanswered for ServerAliveCountMax intervals ends the connection, so a
// dead path is noticed within ServerAliveInterval × (ServerAliveCountMax+1). The connection is
// then closed whole: the TCP connection first, then every client above it (closing a reverse
// forward's listener alone sends cancel-tcpip-forward and waits for a reply a dead path never
// brings).
//
// After a connection that had been connected and answered a keepalive (or served for a second:
// the backoff starts over once a connection came up and served) is lost, the next attempt
// starts at once, within a random spread of up to half of MinBackoff (125 ms), so that many
// connections lost at the same moment (a wake, a bastion's restart) do not start their
// handshakes in the same instant; an attempt that failed before it was connected counts as a
// failure, however long it took.
// Failed attempts then wait MinBackoff (250 ms), doubling up to MaxBackoff (30 s), ±20% jitter.
// While the first hop cannot be reached at all, the wait also ends as soon as it answers again
// (a probe every 500 ms opens a TCP connection and waits for the server's first bytes), so a
// long outage heals well under a second after the path is back.
//
// Sleep and changes of this computer's network are watched for too (pathwatch.go): the wall
// clock running ahead of the monotonic one, and on Linux the kernel's rtnetlink messages of
// links, addresses and routes. After either, every connected Conn checks itself at once, with a
// keepalive that must come back within [CheckTimeout] (1.5 s, or four times the slowest recent
// round trip; longer while other bytes still come from the host), else the connection is made
// again; and every Conn waiting to retry tries at once. At most [MaxStartups] handshakes run at
// once with one address, so that many Conns coming back together through one bastion take
// turns rather than have its sshd refuse them.
//
// The states, as [Status.String] writes them:
//
//	connecting
//	connected: 127.0.0.1:41877 on the host
//	retrying in 8s: ssh handshake with 10.0.0.7:22: no answer in 15s (ConnectTimeout)
//	retrying in 8s: the host did not finish checking the forward within 30s: …
//	failed: host key of buildbox has changed: …
//	stopped
//
// Failed is for errors retrying alone cannot fix: [*knownhosts.HostKeyError], [*AuthError],
// [*sshconfig.ConfigError], [ErrForwardingForbidden], [ErrNotLoopback], [ErrUncheckable], and
// errors OnConnect wraps in [Permanent]. Other errors, OnConnect's included, are retried. A
// failed connection waits for a person's fix, and tries again from the start:
//
//   - when a file the failed attempt read is no longer as it was then (by content, looked at
//     every half second): the ssh_config files (not those they Include) and the known_hosts
//     files of every hop, so that trusting a host's key, or fixing a setting, is enough;
//   - when [Conn.Retry] is called (the app calls it on SIGHUP), for fixes elsewhere: a key
//     added to the agent, a change on the host.
//
// Retry also ends the wait of a connection that is retrying. A fix that does not fix gives
// the state failed again, with the new error.
//
// # The port on the host
//
// A reconnect asks for the port of the connection before. When the host refuses it, the likely
// cause is that the host's sshd has not yet noticed that the old connection is dead, and its old
// session still listens there. That session is ended (kill, on the host) only when all of this
// holds, read from /proc on the host: it is the same process recorded at the old connect (its pid
// and its start time), its name is sshd, and a listening socket on that port belongs to our uid
// (and, where its descriptors are readable, is one of its own). It gets SIGTERM and then SIGCONT
// (a stopped process acts on no signal but SIGKILL and SIGCONT, and keeps its port meanwhile),
// and SIGKILL if it is still there a second later; each command checks the start time again
// first. Only once it is gone (or a zombie, which holds no socket) is the port asked for again;
// when it is still taken (another program holds it), the host chooses a new one and
// [Forward.Changed] and [Status.PortChanged] say so: terminals holding the old address need
// telling.
//
// A host that refuses a forward even on a port of its choosing forbids forwarding
// (AllowTcpForwarding no or local, DisableForwarding, PermitListen, or restrict,
// no-port-forwarding or permitlisten in authorized_keys): that is [ErrForwardingForbidden], with
// what to change.
//
// # What runs on the host
//
// One sh per connect, started by the user's login shell with exec (exec sh -s MARK, MARK a random
// word that names this connect's sh on the host, see below), that runs: echo, id -u, grep
// of /proc/net/tcp and /proc/net/tcp6 (or the command [Config.Listeners] gives, which lists the
// listeners alone), its own read of /proc/PID/stat, ls -l /proc/PID/fd, and
// when a stale session holds the port, sed and kill, and sed again until that session is gone;
// then what OnConnect runs in it ([Shell]), and it ends, or becomes the command OnConnect exec's
// there. Everything it prints is read after marker lines, so what a chatty start-up file prints first is ignored. The
// host must be Linux (the static CLI the app installs is Linux-only too): without /proc/net/tcp
// the forward cannot be checked and is not served.
//
// A connect that fails ends what it started on the host before its connection closes: sshd does
// not, when a session closes (a login shell looping in ~/.bashrc, a command that hangs), and it
// signals a session when asked only where it runs with privilege separation, which it does not
// for root. So each session given up is signalled, and then, from the connect's sh (or, when that
// sh itself hangs, from an exec of its own), the script remote/shell's EndSessions ends every
// other session of that connection: every process whose session is led by a child of the
// connection's sshd. A connect whose sh never got past the start-up files keeps its MARK; the
// first later connect whose sh answers ends the user's sessions led by a process whose command
// line holds one of those marks, which only those shells can hold.
//
// # Security model
//
//   - The forward listens on the host's loopback only, and this is checked, not assumed: an sshd
//     with GatewayPorts yes ignores the address asked for and listens on every interface. Such a
//     forward is closed before it carries a byte (connections that came in are held until the
//     check passes, 32 at most, and closed when it fails), and the connection fails with
//     [ErrNotLoopback]: set GatewayPorts no (or clientspecified) for the user. An address the
//     check cannot read fails the same way ([ErrUncheckable]). Only the session's own listeners
//     are judged, so that no other user of the host can make this check fail.
//   - Host keys and certificates are checked as ssh checks them; a changed key is never
//     accepted, and an unknown one only under accept-new or no, as the user's ssh_config says.
//   - Nothing prompts and nothing waits for a person: a passphrase, a host key to confirm, an agent
//     that waits for a confirmation all end as errors or timeouts.
//   - Nothing from the host or from files reaches an error with control characters in it, and
//     host names are checked before they are put in a hint's command.
//   - Only our own processes are ever killed on the host, as described above: our stale sshd
//     session, the sessions of a connection of ours that gave up, and the login shells that hold
//     the random mark of a connect of ours.
//   - The only local command run is the user's own ProxyCommand, from their ssh_config, as ssh
//     runs it. What goes into it through %h %n %p %r is checked first: host names as host
//     names, ports as numbers, users without characters the shell acts on.
//
// What it does not protect: the forwarded port is reachable by every user of the host, as any
// loopback port is. What goes through must authenticate itself (the bus token); and once the
// forward is gone another user could bind the port, which is why the CLI checks who owns a
// listener before it sends a token. Between the forward opening and the check, a connection
// could reach sshd, but it is held, never piped; and since nothing reads what those connections
// send until then, only 32 are held (each may hold SSH's window, 2 MiB), the others closed.
package forward
