package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/forward/sshconfig"
)

// link is one SSH connection and everything it runs over: the clients of the ProxyJump hops and
// the TCP connection to the first. Closing it closes all of them, the TCP connection first, so
// that nothing above it can block on a dead path. (Closing a reverse forward's listener alone
// sends cancel-tcpip-forward and waits for a reply that a dead path never brings.)
type link struct {
	client  *ssh.Client
	closers []io.Closer // the TCP connection first, then up the hops

	ctx    context.Context // done when the link is
	cancel context.CancelFunc

	once sync.Once
	mu   sync.Mutex
	err  error // why the link ended, the first cause given

	received atomic.Int64 // bytes read from the first hop: a path that brings any works

	// reached, when set, is called once the TCP connection to the first hop is made; hold, when
	// set, is given that connection, when the link ends for keepalives unanswered, in place of
	// its close (see heldConn).
	reached func()
	hold    func(*heldConn)
}

func newLink() *link {
	l := &link{}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// fail ends the link with err as its cause, unless it had already ended. When the link went
// through a ProxyCommand that exited by itself, that is the cause: what the SSH library saw, an
// end of input, was its effect.
func (l *link) fail(err error) {
	l.once.Do(func() {
		if hc, ok := l.first().(*heldConn); ok && l.hold != nil && errors.Is(err, ErrKeepalive) {
			l.hold(hc)
		}
		for _, c := range l.closers {
			c.Close()
		}
		if pc, ok := l.first().(*commandConn); ok && err != errClosed {
			if perr := pc.exitError(); perr != nil {
				err = fmt.Errorf("connection lost: %w", perr)
			}
		}
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		l.cancel()
	})
}

// first returns the connection to the first hop, or nil.
func (l *link) first() io.Closer {
	if len(l.closers) == 0 {
		return nil
	}
	return l.closers[0]
}

// close ends the link, if it had not already ended, as closed by us.
func (l *link) close() { l.fail(errClosed) }

var errClosed = errors.New("connection closed")

// quickAck says whether a first hop's TCP connection acknowledges at once what it reads (see
// quickAcks); BenchmarkConnect turns it off for its baseline.
var quickAck = true

// cause returns why the link ended, or err if it has not.
func (l *link) cause(err error) error {
	if l.ctx.Err() == nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// dialInto connects to h through its ProxyJump hops, each with its own handshake timeout, and
// authenticates on each, into l, which it closes on failure: a caller may watch l.received
// while it runs.
func dialInto(ctx context.Context, c Config, h *sshconfig.Host, l *link) error {
	chain := append(append([]*sshconfig.Host(nil), h.Jump...), h)
	var prev *ssh.Client
	for i, hop := range chain {
		var first *link
		if i == 0 {
			first = l
		}
		client, conn, err := dialHop(ctx, c, hop, prev, first)
		if err != nil {
			l.close()
			if i < len(chain)-1 {
				return fmt.Errorf("jump host %s: %w", hop, err)
			}
			return err
		}
		l.closers = append(l.closers, conn, client)
		prev = client
	}
	l.client = prev
	go func() {
		err := l.client.Wait()
		if err == nil {
			err = io.EOF
		}
		l.fail(fmt.Errorf("connection lost: %w", err))
	}()
	return nil
}

// dialHop opens the connection to one host, over prev's when there is one, else through its
// ProxyCommand or over TCP, and runs the SSH handshake on it. The dial and the handshake share
// the host's ConnectTimeout: as a deadline on the connection where it takes one (TCP, a
// ProxyCommand's pipes), and over anything as a timer that closes it.
//
// Only a direct TCP connection's failures are the path's ([pathError]): the probes that watch a
// path dial TCP, which says nothing of the way a ProxyCommand goes.
//
// first, when not nil, is the link whose first hop this is: it counts the bytes read from the
// connection, and a direct TCP connection is its heldConn.
func dialHop(ctx context.Context, c Config, h *sshconfig.Host, prev *ssh.Client, first *link) (*ssh.Client, net.Conn, error) {
	var counter *atomic.Int64
	if first != nil {
		counter = &first.received
	}
	hk, err := knownhosts.New(h, c.Logger)
	if err != nil {
		return nil, nil, err
	}
	ks, err := loadKeys(h, c.agentSocket())
	if err != nil {
		return nil, nil, err
	}
	defer ks.close()
	if len(ks.signers) == 0 {
		return nil, nil, ks.authError(h, nil)
	}
	// At most MaxStartups handshakes at once with one address: the app's start, or a wake,
	// with many hosts behind one bastion.
	release, err := startup(ctx, h.Addr())
	if err != nil {
		return nil, nil, err
	}
	defer release()

	ctx, cancel := context.WithTimeout(ctx, h.ConnectTimeout)
	defer cancel()
	var (
		conn   net.Conn
		proxy  *commandConn
		direct = prev == nil && h.ProxyCommand == ""
	)
	switch {
	case prev != nil:
		conn, err = prev.DialContext(ctx, "tcp", h.Addr())
	case h.ProxyCommand != "":
		proxy, err = startProxyCommand(h.ProxyCommand, h.Addr())
		if err != nil {
			return nil, nil, fmt.Errorf("connect to %s: start ProxyCommand %s: %w", h.Addr(), strconv.Quote(h.ProxyCommand), err)
		}
		c.Logger.Debug("ProxyCommand started", "host", h.Alias, "command", h.ProxyCommand, "pid", proxy.cmd.Process.Pid)
		conn = proxy
	default:
		conn, err = c.Dialer(ctx, "tcp", h.Addr())
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("connect to %s: no answer in %s (ConnectTimeout)", h.Addr(), h.ConnectTimeout)
		} else {
			err = fmt.Errorf("connect to %s: %w", h.Addr(), err)
		}
		return nil, nil, onPath(direct, h.Addr(), err)
	}
	if direct && first != nil && first.reached != nil {
		first.reached()
	}
	conn, raw := hopConn(conn, direct, first)
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d) // a channel over a hop says it has no deadlines: the timer is for it
	}
	// The timer also closes the agent's connection: a signature the agent waits to confirm
	// would otherwise hold the handshake past its deadline.
	stop := context.AfterFunc(ctx, func() {
		conn.Close()
		ks.close()
	})
	cc, chans, reqs, err := ssh.NewClientConn(conn, h.Addr(), &ssh.ClientConfig{
		User:              h.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(ks.signers...)},
		HostKeyCallback:   hk.Check,
		HostKeyAlgorithms: hk.Algorithms(),
	})
	// The timer fired, or the deadline did: whatever the handshake said, it was cut short.
	cutShort := !stop() || errors.Is(err, os.ErrDeadlineExceeded)
	if cutShort || err != nil {
		conn.Close()
		if cc != nil {
			cc.Close()
		}
		if err := ctx.Err(); cutShort && err != nil && err != context.DeadlineExceeded {
			return nil, nil, err
		}
		if perr := proxy.exitError(); perr != nil {
			return nil, nil, fmt.Errorf("connect to %s: %w", h.Addr(), perr)
		}
		if cutShort {
			err = fmt.Errorf("ssh handshake with %s: no answer in %s (ConnectTimeout)%s", h.Addr(), h.ConnectTimeout, proxySaid(proxy))
			return nil, nil, onPath(direct, h.Addr(), err)
		}
		var hke *knownhosts.HostKeyError
		switch {
		case errors.As(err, &hke):
			return nil, nil, hke
		case isAuthFailure(err):
			return nil, nil, ks.authError(h, err)
		}
		err = fmt.Errorf("ssh handshake with %s: %w%s", h.Addr(), err, proxySaid(proxy))
		// A server that closed before its first byte (an sshd just started again, or past its
		// MaxStartups) said no more than a probe would: the wait before the next attempt watches
		// the path, and the first banner there ends it.
		return nil, nil, onPath(direct && counter != nil && counter.Load() == 0, h.Addr(), err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), raw, nil
}

// hopConn is a hop's connection as the SSH client is to use it, and raw, what the link closes (or
// holds) and asks how a ProxyCommand ended: a direct first hop's is a heldConn; a direct hop's
// TCP connection acknowledges at once what it reads (quickAcks); the first link's counts what it
// reads (link.received).
func hopConn(conn net.Conn, direct bool, first *link) (wrapped, raw net.Conn) {
	sock := conn
	if direct && first != nil {
		conn = &heldConn{Conn: conn}
	}
	raw = conn
	if direct {
		conn = quickAcks(conn, sock)
	}
	if first != nil {
		conn = countingConn{conn, &first.received}
	}
	return conn, raw
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// proxySaid is what a ProxyCommand that did not exit by itself last said on its stderr, for an
// error: " (ProxyCommand said: …)", or "".
func proxySaid(p *commandConn) string {
	if p == nil {
		return ""
	}
	if s := p.said(); s != "" {
		return " (ProxyCommand said: " + s + ")"
	}
	return ""
}

// pathError is a failure to reach the first hop at all: the network on the way, more likely than
// the host, is down. Waits before the next attempt then watch the path (see [Conn.Run]).
type pathError struct {
	addr string // the first hop's address
	err  error
}

func (e *pathError) Error() string { return e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// onPath wraps err in a *pathError when it is the first hop's.
func onPath(first bool, addr string, err error) error {
	if !first {
		return err
	}
	return &pathError{addr: addr, err: err}
}

// keepalive sends keepalive@openssh.com every interval and waits for the reply. When a request
// has gone unanswered for maxMissed intervals the link is dead: it is ended whole. So a dead path
// is noticed within interval × (maxMissed+1). onReply is called after each reply: the path works.
// A reason on check (the path watch's: the computer slept, the network changed) asks for a reply
// at once: one that does not come within checkTimeout ends the link too.
//
// An interval of 0 (ServerAliveInterval 0) sends none, as in ssh: a dead path is then noticed
// only when TCP gives up on it, or by a check.
func (l *link) keepalive(interval time.Duration, maxMissed int, check <-chan string, onReply func(), logger *slog.Logger) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var (
		pending chan error
		sent    time.Time
		missed  int
		rtt     time.Duration // the slowest of the recent replies' round trips, decaying
		due     <-chan time.Time
		why     string // the check's reason while one is due
		seen    int64  // the bytes received when the check began, or its window was renewed
	)
	send := func() {
		pending, sent = make(chan error, 1), time.Now()
		go func(ch chan<- error) {
			// OpenSSH answers with a failure: any answer is a reply.
			_, _, err := l.client.SendRequest("keepalive@openssh.com", true, nil)
			ch <- err
		}(pending)
	}
	for {
		select {
		case <-l.ctx.Done():
			return
		case err := <-pending:
			pending, missed, due = nil, 0, nil
			if err != nil {
				l.fail(fmt.Errorf("keepalive: %w", err))
				return
			}
			rtt = max(time.Since(sent), rtt*7/8)
			onReply()
		case reason := <-check:
			// The path may have changed under the connection: it must answer now.
			if pending == nil {
				send()
			}
			if due == nil {
				d := checkTimeout(rtt)
				due, why, seen = time.After(d), reason, l.received.Load()
				logger.Debug("checking the connection", "reason", reason, "within", d)
			}
		case <-due:
			// Bytes that came meanwhile went all the way: the path works, and the reply is
			// late behind them (a flood through the forward, a busy host). The check waits on
			// while they come; the keepalives' own count still applies.
			if n := l.received.Load(); n != seen {
				seen = n
				due = time.After(checkTimeout(rtt))
				continue
			}
			l.fail(fmt.Errorf("%w: no reply within %s after %s", ErrKeepalive, checkTimeout(rtt), why))
			return
		case <-tick:
			if pending != nil {
				missed++
				if missed >= maxMissed {
					l.fail(fmt.Errorf("%w: no reply in %s (ServerAliveInterval %s × ServerAliveCountMax %d)",
						ErrKeepalive, time.Duration(maxMissed)*interval, interval, maxMissed))
					return
				}
				logger.Debug("keepalive: no reply yet", "missed", missed)
				continue
			}
			send()
		}
	}
}

// checkTimeout is how long a check of the connection (after sleep, or a change of the network)
// waits for its keepalive's reply: CheckTimeout, or four times the slowest recent round trip on
// a slow link, so that a connection that works is not taken for dead.
func checkTimeout(rtt time.Duration) time.Duration { return max(CheckTimeout, 4*rtt) }

// CheckTimeout is the least time a connection has to answer a keepalive after the computer slept
// or its network changed, before it is taken for dead and made again.
const CheckTimeout = 1500 * time.Millisecond
