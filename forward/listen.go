package forward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/internal/hangup"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Forward is the reverse forward of one connection: the address on the host that leads to
// Config.Target.
type Forward struct {
	// Addr is the forwarded address on the host: "127.0.0.1:41877". Port is its port.
	Addr string
	Port int
	// Changed is set when the host could not give back the port asked for (the one of the
	// connection before, or Config.PreferredPort): terminals that hold the old address must be
	// told.
	Changed *PortChanged
}

// PortChanged says that a reconnect could not get its old port back on the host.
type PortChanged struct {
	Old, New string // "127.0.0.1:41877"
}

func (p *PortChanged) String() string {
	return fmt.Sprintf("the forward moved from %s to %s on the host: the old port is taken", p.Old, p.New)
}

// hostSession is the host's sshd process that serves one connection, as recorded at connect
// time: the one to end if it outlives the connection and keeps its port.
type hostSession struct {
	PID   int
	Start uint64 // with the pid, names the process for good
	UID   uint32 // the user we are on the host
}

// marker starts each section of the output of the commands this package runs on the host, so
// that what a chatty shell start-up prints before them is never taken for theirs.
const marker = "krad-forward:"

// loopbackHost is the only address the forward listens on.
const loopbackHost = "127.0.0.1"

// maxOutput caps what a command on the host may print before it is cut off.
const maxOutput = 4 << 20

// openForward asks the host to listen on 127.0.0.1:port (0 for a port of its choosing) and to
// forward what it accepts to us. When the port is taken and prev, the sshd session of the
// connection before, still holds it, prev is ended and the port asked for again; when it is still
// taken, the host chooses another and Forward.Changed says so. A refusal of a port of the host's
// choosing means the host forbids forwarding: [ErrForwardingForbidden].
func (c *Conn) openForward(ctx context.Context, l *link, sh *hostShell, h *sshconfig.Host, port int, prev *hostSession) (net.Listener, Forward, error) {
	ln, err := listen(l.client, port)
	if err != nil && port != 0 && isRefused(err) {
		c.cfg.Logger.Debug("the port asked for is taken on the host", "host", h.Alias, "port", port)
		if prev != nil {
			if _, ferr := c.endStaleSession(ctx, sh, port, prev); ferr != nil {
				c.cfg.Logger.Warn("could not end the stale sshd session on the host", "host", h.Alias, "pid", prev.PID, "err", ferr)
			} else {
				// Ended now, or found ending by itself (the host heard of the old connection's
				// end as this one came up: a laptop's wake): the process is gone in a few
				// milliseconds, its socket with it. (A port someone else holds costs this wait.)
				for i := 0; i < 100 && err != nil && isRefused(err); i++ {
					select {
					case <-ctx.Done():
						return nil, Forward{}, l.cause(ctx.Err())
					case <-time.After(10 * time.Millisecond):
					}
					ln, err = listen(l.client, port)
				}
			}
		}
		if err != nil && isRefused(err) {
			c.cfg.Logger.Info("the old port is taken on the host; asking for another", "host", h.Alias, "port", port)
			ln, err = listen(l.client, 0)
		}
	}
	if err != nil {
		if isRefused(err) {
			return nil, Forward{}, fmt.Errorf("%w (%s on %s): the host's sshd_config has AllowTcpForwarding no or local, "+
				"DisableForwarding yes, or a PermitListen that leaves out 127.0.0.1, or our key's line in authorized_keys "+
				"has restrict, no-port-forwarding or permitlisten: allow remote forwarding for this user (AllowTcpForwarding yes or remote)",
				ErrForwardingForbidden, termsafe.Quote(h.User), h.Alias)
		}
		return nil, Forward{}, fmt.Errorf("ask the host for a forward: %w", l.cause(err))
	}
	got := ln.Addr().(*net.TCPAddr).Port
	fwd := Forward{Addr: net.JoinHostPort(loopbackHost, strconv.Itoa(got)), Port: got}
	if port != 0 && got != port {
		fwd.Changed = &PortChanged{Old: net.JoinHostPort(loopbackHost, strconv.Itoa(port)), New: fwd.Addr}
	}
	return ln, fwd, nil
}

// listen asks the host for a reverse forward on 127.0.0.1:port. With port 0, x/crypto reads the
// port the host chose from its reply and gives it in the listener's Addr.
func listen(client *ssh.Client, port int) (net.Listener, error) {
	return client.Listen("tcp", net.JoinHostPort(loopbackHost, strconv.Itoa(port)))
}

// isRefused says whether err is the host's refusal of a tcpip-forward request (as opposed to
// the connection failing under it). x/crypto reports it with an unexported error.
func isRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "tcpip-forward request denied by peer")
}

// hostInfo is what the package reads on the host after the forward is open.
type hostInfo struct {
	session hostSession
	sockets []socket // those on our port
	tcpRead bool     // /proc/net/tcp was there to read
	fds     inodes   // the sockets the session holds; nil when its descriptors are not readable
}

// tcpScript prints the lines of the host's /proc/net/tcp and tcp6 that mention port, and their
// headers, so that a busy host's thousands of sockets stay on the host and an empty answer still
// tells a missing file from a missing socket. grep reads the files itself (-h: no file names),
// one process where cat and grep were two.
func tcpScript(port int) string {
	return fmt.Sprintf(`grep -h -i -e local_address -e ':%04X ' /proc/net/tcp /proc/net/tcp6 2>/dev/null`, port)
}

// listenersCommand is the command cmd gives for port, or "" when there is none to run.
func listenersCommand(cmd func(int) string, port int) string {
	if cmd == nil {
		return ""
	}
	if c := cmd(port); !strings.ContainsAny(c, "\n\r") {
		return c
	}
	return ""
}

// sessionScript prints, after markers, our uid ("uid"), the sockets process pid holds ("fd":
// the lines of ls -l /proc/PID/fd, none when they are not ours to read) and the host's TCP
// sockets on port ("tcp"): all three from the command cmd gives, when there is one, which then
// starts the one program (the static krad's listeners --of PID --sections MARKER); else, or when
// it fails or prints no table, from id, ls and the files.
func sessionScript(cmd func(int) string, port int, pid string) string {
	files := `echo ` + marker + `uid; id -u
echo ` + marker + `fd; ls -l /proc/` + pid + `/fd 2>/dev/null
echo ` + marker + `tcp; ` + tcpScript(port)
	c := listenersCommand(cmd, port)
	if c == "" {
		return files
	}
	return `krad_l=$(` + c + ` --of ` + pid + ` --sections ` + marker + ` 2>/dev/null) && case $krad_l in *local_address*) printf '%s\n' "$krad_l";; *) false;; esac || {
` + files + `
}`
}

// statScript prints the line of /proc/PID/stat, read by sh's own read: no process of its own,
// which is what a cat would cost on every connect. A process whose name holds a newline is cut
// there, and then fails to parse: it is no sshd of ours.
func statScript(pid string) string {
	return `{ read -r krad_stat </proc/` + pid + `/stat && printf '%s\n' "$krad_stat"; } 2>/dev/null`
}

// lookScript prints, after markers, what the check of a session needs of sshd process pid: its
// /proc stat, our uid, its descriptors and the host's TCP sockets on port (sessionScript), and
// then the end marker, by which a reader knows that nothing was cut short.
func lookScript(listeners func(int) string, port int, pid string) string {
	return `echo ` + marker + `stat; ` + statScript(pid) + `; echo
` + sessionScript(listeners, port, pid) + `
echo ` + marker + `end`
}

// infoScript prints, after markers: the pid of the sshd process serving this connection (the
// shell's parent: see startShell), then lookScript of it.
func infoScript(port int, listeners func(int) string) string {
	return `echo ` + marker + `pid; echo $PPID
` + lookScript(listeners, port, "$PPID")
}

// readHostInfo runs infoScript on the host.
func readHostInfo(ctx context.Context, sh *hostShell, port int, listeners func(int) string) (hostInfo, error) {
	out, err := sh.run(ctx, infoScript(port, listeners))
	if err != nil {
		return hostInfo{}, err
	}
	return parseHostInfo(out)
}

// parseHostInfo reads what infoScript printed.
func parseHostInfo(out []byte) (hostInfo, error) {
	sec := sections(out)
	if _, ok := sec["end"]; !ok {
		return hostInfo{}, errors.New("read the host's sockets: the output was cut short")
	}
	var info hostInfo
	pid, err := strconv.Atoi(strings.TrimSpace(string(sec["pid"])))
	if err != nil {
		return hostInfo{}, errors.New("read the host's sshd pid: not a number")
	}
	uid, err := strconv.ParseUint(strings.TrimSpace(string(sec["uid"])), 10, 32)
	if err != nil {
		return hostInfo{}, errors.New("read our uid on the host: not a number")
	}
	info.session = hostSession{PID: pid, UID: uint32(uid)}
	if st, err := parseProcStat(sec["stat"]); err == nil {
		info.session.Start = st.Start
	}
	info.fds = parseFDs(sec["fd"])
	info.sockets = parseProcNetTCP(sec["tcp"])
	info.tcpRead = bytes.Contains(sec["tcp"], []byte("local_address"))
	return info, nil
}

// ownListeners splits the listening sockets on port into those of the sshd session (owned by
// uid, our user on the host, and, when the session's descriptors could be read, among them) and
// the others: another user's, or another process's.
func ownListeners(socks []socket, port int, uid uint32, fds inodes) (own, others []socket) {
	for _, s := range listeners(socks, port) {
		if s.UID == uid && (fds == nil || fds[s.Inode]) {
			own = append(own, s)
		} else {
			others = append(others, s)
		}
	}
	return own, others
}

// checkLoopback fails unless every listening socket of the sshd session (uid and fds, as for
// [ownListeners]) on port is bound to a loopback address, and there is at least one. An sshd
// with GatewayPorts yes ignores the address asked for and listens on every interface.
//
// Other listeners on the same port do not count: another user of the host may bind [::]:port
// (IPv6 only) or the host's LAN address beside our 127.0.0.1:port, and such a socket neither
// exposes our forward nor receives what is sent to 127.0.0.1:port, which the kernel hands to the
// listener bound to that address itself (sharing it through SO_REUSEPORT needs the same user).
// Were it counted, any user of the host could make the forward fail for good.
func checkLoopback(socks []socket, port int, uid uint32, fds inodes) error {
	own, _ := ownListeners(socks, port, uid, fds)
	if len(own) == 0 {
		return fmt.Errorf("%w: port %d has no listener of our sshd session among the host's listening sockets in /proc/net/tcp", ErrUncheckable, port)
	}
	for _, s := range own {
		if !isLoopback(s.Local.Addr()) {
			return fmt.Errorf("%w: it listens on %s: the host's sshd has GatewayPorts yes, so our forward would listen on every interface; "+
				"set GatewayPorts no (or clientspecified) for this user in the host's sshd_config", ErrNotLoopback, s.Local)
		}
	}
	return nil
}

// endStaleSession ends the sshd process of the connection before when it is still the same
// process (pid and start time), still an sshd of our user, and still holds a listening socket
// on port; it says whether it did. It is how a port comes back when the host has not yet
// noticed that the old connection is dead.
func (c *Conn) endStaleSession(ctx context.Context, sh *hostShell, port int, prev *hostSession) (bool, error) {
	out, err := sh.run(ctx, lookScript(c.cfg.Listeners, port, strconv.Itoa(prev.PID)))
	if err != nil {
		return false, err
	}
	sec := sections(out)
	if _, ok := sec["end"]; !ok {
		return false, errors.New("the output was cut short")
	}
	st, err := parseProcStat(sec["stat"])
	if err != nil || st.Start != prev.Start || !strings.HasPrefix(st.Comm, "sshd") {
		return false, nil // gone, or another process now
	}
	// Its descriptors are readable unless sshd made itself non-dumpable (as it does for users
	// other than root): then its start time and our uid on the socket have to do.
	if held, _ := ownListeners(parseProcNetTCP(sec["tcp"]), port, prev.UID, parseFDs(sec["fd"])); len(held) == 0 {
		return false, nil // someone else's listener, or none
	}
	if err := endProcess(ctx, sh, prev); err != nil {
		return false, err
	}
	c.cfg.Logger.Info("ended the stale sshd session that held our port on the host", "host", c.cfg.Host, "pid", prev.PID, "port", port)
	return true, nil
}

// How long a stale session has to act on SIGTERM before it gets SIGKILL, and then to be gone.
// Each check is a round trip to the host, so a slow path checks less often.
const (
	staleTermGrace = time.Second
	staleKillGrace = 3 * time.Second
	stalePoll      = 20 * time.Millisecond
)

// endProcess ends the host's process p and returns once it is gone (a zombie counts: it holds no
// socket). It sends SIGTERM, then SIGCONT: a stopped process acts on no signal but SIGKILL and
// SIGCONT, so the SIGTERM would wait in it for good. If it is still there after staleTermGrace,
// SIGKILL. Each command checks the start time first, so that a pid reused meanwhile is left
// alone.
func endProcess(ctx context.Context, sh *hostShell, p *hostSession) error {
	for _, step := range []struct {
		signals string
		grace   time.Duration
	}{
		{"kill -TERM %[1]d; kill -CONT %[1]d", staleTermGrace},
		{"kill -KILL %[1]d", staleKillGrace},
	} {
		if _, err := sh.run(ctx, ifSameProcess(p, fmt.Sprintf(step.signals, p.PID))); err != nil {
			return err
		}
		deadline := time.Now().Add(step.grace)
		for {
			out, err := sh.run(ctx, ifSameProcess(p, "echo "+marker+"alive"))
			if err != nil {
				return err
			}
			if _, alive := sections(out)["alive"]; !alive {
				return nil
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(stalePoll):
			}
		}
	}
	return fmt.Errorf("pid %d is still there %s after SIGKILL", p.PID, staleKillGrace)
}

// ifSameProcess is a command for the host's sh that runs cmd only while p is the process
// recorded at its connect (the same pid and start time) and is not a zombie.
func ifSameProcess(p *hostSession, cmd string) string {
	return fmt.Sprintf(`( set -- $(sed 's/^.*) //' /proc/%d/stat 2>/dev/null); [ "${20}" = %d ] && [ "$1" != Z ] && [ "$1" != X ] && { %s; } )`,
		p.PID, p.Start, cmd)
}

// sections splits the output of a command on the host at its marker lines: "krad-forward:tcp"
// starts section "tcp". What comes before the first marker is dropped.
func sections(out []byte) map[string][]byte {
	sec := map[string][]byte{}
	name := ""
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(t, []byte(marker)); ok && len(rest) > 0 && !bytes.ContainsAny(rest, " \t") {
			name = string(rest)
			sec[name] = []byte{}
			continue
		}
		if name != "" {
			sec[name] = append(sec[name], line...)
		}
	}
	return sec
}

// maxEarly is how many connections through the forward serve holds before its check passes.
// Anyone on the host can connect to the forward, and until the check passes (as long as the
// host's start-up files take, up to CommandTimeout) nothing reads what they send: each
// connection is an SSH channel whose window lets the host send it 2 MiB, held in this process.
// The target's own bound (the bus's gate) sees them only once they are piped to it. So at most
// maxEarly wait, 64 MiB at the very most, and any more are closed at once. The connections that
// may rightly come this early are few: terminals of an earlier connection, back on the port they
// knew, while the forward is checked.
const maxEarly = 32

// serve accepts the forward's connections until the listener ends, and pipes each to a new
// connection to the target, once ready is closed. Connections that arrive before are held (the
// listener must be serviced, or the SSH connection stalls), up to maxEarly, the others closed at
// once; those held are closed if ctx ends first. ends watches the host's side of connections
// whose input ended.
func (c *Conn) serve(ctx context.Context, ln net.Listener, ready <-chan struct{}, ends *hostEnds) {
	var early atomic.Int32 // connections held until ready
	warned := false
	for {
		remote, err := ln.Accept()
		if err != nil {
			return
		}
		held := false
		select {
		case <-ready:
		default:
			if early.Add(1) > maxEarly {
				early.Add(-1)
				remote.Close()
				if !warned {
					warned = true
					c.cfg.Logger.Warn("connections through the forward before it was checked: those past the limit were closed (a flood from the host?)",
						"host", c.cfg.Host, "limit", maxEarly)
				}
				continue
			}
			held = true
		}
		go func() {
			if held {
				select {
				case <-ready:
					early.Add(-1)
				case <-ctx.Done():
					early.Add(-1)
					remote.Close()
					return
				}
			}
			local, err := c.cfg.Target(ctx)
			if err != nil {
				c.cfg.Logger.Warn("forwarded connection: target unreachable", "err", err)
				remote.Close()
				return
			}
			pipe(ctx, remote, local, ends)
		}()
	}
}

// pipe copies remote (a forwarded connection from the host) to local (the target) and back
// until both directions end, then closes both. The end of either side's input is passed on as a
// half-close, so that a client that shuts down its writing side after its request still gets
// its answer. A close is passed on as a close: once a side whose input ended has closed (local:
// hangup says so; remote: ends finds the client's socket gone from the host), on an error
// reading either side or writing to the host, or when ctx ends, both are closed at once. When
// the target closes while the host still sends, what it answered first still reaches the host.
func pipe(ctx context.Context, remote, local net.Conn, ends *hostEnds) {
	closeBoth := func() {
		remote.Close()
		local.Close()
	}
	defer closeBoth()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	answered := make(chan struct{})
	go func() { // the answers, to the host
		defer close(answered)
		if copyHalf(remote, local, &answerBuffers) != inputEnded {
			cancel()
			return
		}
		// A target whose close hangup cannot tell from a half-close has its end of input taken
		// for a close, as hangup says it must be: else the host's side would stay open.
		if err := hangup.Wait(ctx, local); err == nil || errors.Is(err, hangup.ErrUnknown) {
			cancel()
		}
	}()
	// The requests, from the host.
	switch copyHalf(local, remote, &requestBuffers) {
	case inputEnded:
		if ends != nil && ends.closed(ctx, remote.RemoteAddr()) {
			cancel()
		}
	case readFailed:
		cancel()
	case writeFailed:
		// The target closed: the answers finish on their own. Until then what the host sends
		// is dropped, so that SSH does not keep it.
		discard(remote)
	}
	<-answered
}

// The buffers pipe copies through. A connection holds its buffer only once its first byte has
// come (until then, one byte of its own): a host's client may open many connections and send
// nothing, or little. Requests are lines of at most 64 KiB, read from SSH's memory in small
// pieces; answers come from the target, which sends only once a request passed its checks, and
// may be large (screens, patches).
const (
	requestBuffer = 2 << 10
	answerBuffer  = 32 << 10
)

// The pools of the two buffers, one for each direction.
var (
	requestBuffers = sync.Pool{New: func() any { b := make([]byte, requestBuffer); return &b }}
	answerBuffers  = sync.Pool{New: func() any { b := make([]byte, answerBuffer); return &b }}
)

// How copyHalf ended.
type copyEnd int

const (
	inputEnded  copyEnd = iota // src's input ended, and dst's writing side was shut down
	readFailed                 // reading src failed
	writeFailed                // writing dst failed, or shutting down its writing side did
)

// copyHalf copies src to dst, through a buffer of pool from the second byte on, until src's
// input ends; then it shuts down dst's writing side.
func copyHalf(dst, src net.Conn, pool *sync.Pool) copyEnd {
	var first [1]byte
	b := first[:]
	for {
		n, err := src.Read(b)
		if n > 0 {
			if _, err := dst.Write(b[:n]); err != nil {
				return writeFailed
			}
			if len(b) == 1 {
				buf := pool.Get().(*[]byte)
				defer pool.Put(buf)
				b = *buf
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return readFailed
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
		return writeFailed
	}
	return inputEnded
}

// discard reads and drops what c sends until it ends or is closed.
func discard(c net.Conn) {
	b := make([]byte, 512)
	for {
		if _, err := c.Read(b); err != nil {
			return
		}
	}
}
