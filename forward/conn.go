package forward

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/sshconfig"
)

// State is where a connection stands.
type State int

const (
	// Connecting: dialing, authenticating, opening and checking the forward, running OnConnect.
	Connecting State = iota
	// Connected: the forward is open and served; Status.Addr says where on the host.
	Connected
	// Retrying: the last attempt failed with an error a retry may fix; the next one is due in
	// Status.RetryIn.
	Retrying
	// Failed: an error retrying alone cannot fix (a host key, authentication, forwarding
	// forbidden, GatewayPorts, a bad setting): a person must act. Run waits, and tries again
	// when one of the files the attempt read changes (ssh_config, known_hosts) or when
	// [Conn.Retry] is called.
	Failed
	// Stopped: Run's context ended.
	Stopped
)

func (s State) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Retrying:
		return "retrying"
	case Failed:
		return "failed"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a connection's state and what goes with it.
type Status struct {
	State State
	Since time.Time
	// Addr is the forwarded address on the host, when connected: "127.0.0.1:41877".
	Addr string
	// PortChanged is set when connected on another port than the one asked for.
	PortChanged *PortChanged
	// Err is why the last attempt or connection ended: set when retrying or failed, and when
	// connecting again after a connection was lost.
	Err error
	// RetryIn is the wait before the next attempt, when retrying.
	RetryIn time.Duration
}

// String is the status as people read it: "connecting", "connected: 127.0.0.1:41877 on the
// host", "retrying in 8s: <error>", "failed: <error>", "stopped".
func (s Status) String() string {
	switch s.State {
	case Connected:
		return fmt.Sprintf("connected: %s on the host", s.Addr)
	case Retrying:
		return fmt.Sprintf("retrying in %s: %v", roundWait(s.RetryIn), s.Err)
	case Failed:
		return fmt.Sprintf("failed: %v", s.Err)
	case Connecting:
		if s.Err != nil {
			return fmt.Sprintf("connecting (after: %v)", s.Err)
		}
	}
	return s.State.String()
}

func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}

// Conn is one supervised SSH connection with its reverse forward. Make it with [New], run it
// with [Conn.Run]; the other methods may be called from any goroutine.
type Conn struct {
	cfg    Config // checked, defaults filled in
	cfgErr error

	running atomic.Bool

	mu     sync.Mutex
	status Status
	client *ssh.Client
	fwd    Forward
	lost   error // why the last connection that was up ended
	warned map[sshconfig.Warning]bool

	nudge chan struct{} // Retry's, for Run; holds one
	path  chan string   // the path watch's reasons (see paths), for Run; holds one

	// Carried from one connection to the next; only Run's goroutine touches them.
	port  int          // the port to ask for
	prev  *hostSession // the sshd session of the connection before
	stuck []string     // the marks of connects whose sh never got past the start-up files (giveup.go)
	files watched      // the files the last attempt read

	heldMu sync.Mutex
	held   []*heldConn // connections lost to the path, to reset once it works (see heldConn)
}

// New returns a Conn for cfg. Nothing happens until Run; a cfg missing Host or Target makes Run
// fail.
func New(cfg Config) *Conn {
	checked, err := cfg.check()
	return &Conn{cfg: checked, cfgErr: err, port: cfg.PreferredPort, status: Status{State: Connecting, Since: time.Now()},
		warned: map[sshconfig.Warning]bool{}, nudge: make(chan struct{}, 1), path: make(chan string, 1)}
}

// Retry asks for a new attempt now: the person says they fixed something (trusted the host's
// key, added a key to the agent, changed the host). A failed connection tries again at once, and
// so does one waiting to retry; during an attempt, the next one comes at once should this one
// fail. A connected connection is left alone. It never blocks.
func (c *Conn) Retry() {
	select {
	case c.nudge <- struct{}{}:
	default: // one is already waiting
	}
}

// Check asks a connected connection to prove itself now, as after the computer slept: a
// keepalive must come back within [CheckTimeout] (longer on a slow link), or the connection is
// ended whole and made again. reason is for the log ("tmux stopped answering"). Bytes that keep
// coming from the host meanwhile count as an answer. It never blocks.
func (c *Conn) Check(reason string) { c.repost(reason) }

// Status returns the connection's current status.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Client returns the live SSH client while connected, else nil. It is closed under the caller
// when the connection is lost.
func (c *Conn) Client() *ssh.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// Addr returns the forwarded address on the host while connected ("127.0.0.1:41877"), else "".
func (c *Conn) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		return ""
	}
	return c.fwd.Addr
}

func (c *Conn) setStatus(s Status) {
	s.Since = time.Now()
	c.mu.Lock()
	c.status = s
	c.mu.Unlock()
	if c.cfg.OnStatus != nil {
		c.cfg.OnStatus(s)
	}
}

// Run keeps the connection up until ctx ends, then closes it and returns nil. It reconnects
// after every loss, at once after a connection that had proved healthy (it answered a
// keepalive, or served for a second), within a random spread of up to half of MinBackoff, else after a wait that starts
// at MinBackoff and doubles up to MaxBackoff, jittered by ±20%. An error retrying alone cannot
// fix makes the state Failed: Run then waits until a file the attempt read changes (the
// ssh_config files, every hop's known_hosts files; looked at every half second) or [Conn.Retry]
// is called, and tries again from the start. It returns an error at once only for a Config that
// cannot work (no Host, no Target). Run may be called again after it returned, not twice at once.
func (c *Conn) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("forward: Run is already running")
	}
	defer c.running.Store(false)
	if c.cfgErr != nil {
		c.setStatus(Status{State: Failed, Err: c.cfgErr})
		return c.cfgErr
	}
	defer c.resetHeld()
	// The computer's sleep and its network's changes reach the connection (see paths).
	defer paths.subscribe(c.path)()

	failures := 1 // so that a first attempt that fails waits MinBackoff before the next
	var last error
	for {
		// A Retry from before this attempt is answered by it.
		select {
		case <-c.nudge:
		default:
		}
		c.setStatus(Status{State: Connecting, Err: last})
		healthy, err := c.connectOnce(ctx)
		if ctx.Err() != nil {
			c.setStatus(Status{State: Stopped})
			return nil
		}
		last = err
		if isPermanent(err) {
			c.setStatus(Status{State: Failed, Err: err})
			if !c.waitForFix(ctx) {
				c.setStatus(Status{State: Stopped})
				return nil
			}
			failures = 1 // something changed: start the backoff over
			continue
		}
		if healthy {
			failures = 0
			c.spread(ctx)
			if ctx.Err() != nil {
				c.setStatus(Status{State: Stopped})
				return nil
			}
		}
		if failures > 0 {
			wait := c.backoff(failures)
			c.setStatus(Status{State: Retrying, Err: err, RetryIn: wait})
			var pe *pathError
			if errors.As(err, &pe) {
				c.waitForPath(ctx, wait, pe.addr)
			} else {
				c.sleep(ctx, wait)
			}
			if ctx.Err() != nil {
				c.setStatus(Status{State: Stopped})
				return nil
			}
		}
		failures++
	}
}

// waitForFix waits, failed, until ctx ends (false), Retry is called, or a file the failed
// attempt read is no longer as it was then.
func (c *Conn) waitForFix(ctx context.Context) bool {
	tick := time.NewTicker(filePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.nudge:
			c.cfg.Logger.Info("trying again after a failure, as asked", "host", c.cfg.Host)
			return true
		case <-tick.C:
			if path, ok := c.files.changed(); ok {
				c.cfg.Logger.Info("trying again after a failure: a file it read changed", "host", c.cfg.Host, "file", path)
				return true
			}
		}
	}
}

// probeInterval is how often a wait after a path failure checks whether the path is back.
const probeInterval = 500 * time.Millisecond

// waitForPath waits d, or until the first hop at addr answers: a probe every probeInterval
// opens a TCP connection there and waits for the server's first bytes (its SSH banner), which
// only come through a working path. So a long outage, whose backoff has grown to MaxBackoff,
// heals within about probeInterval of the path coming back, while a host that answers and then
// fails is still retried only at the backoff's pace.
func (c *Conn) waitForPath(ctx context.Context, d time.Duration, addr string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	answered := make(chan struct{}, 1)
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-answered:
			return
		case <-c.nudge:
			return
		case reason := <-c.path:
			c.cfg.Logger.Info("trying again at once", "host", c.cfg.Host, "reason", reason)
			c.spread(ctx)
			return
		case <-tick.C:
			go func() {
				if c.probe(ctx, addr) {
					select {
					case answered <- struct{}{}:
					default:
					}
				}
			}()
		}
	}
}

// probe says whether the server at addr sends its first bytes within probeTimeout.
func (c *Conn) probe(ctx context.Context, addr string) bool {
	release, ok := tryStartup(addr)
	if !ok {
		return false
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := c.cfg.Dialer(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var b [1]byte
	n, _ := conn.Read(b[:])
	return n == 1
}

// probeTimeout bounds one probe; probes overlap when the path swallows them.
const probeTimeout = 2 * time.Second

// sleep waits d, or until ctx ends or Retry is called.
func (c *Conn) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-c.nudge:
	case reason := <-c.path:
		c.cfg.Logger.Info("trying again at once", "host", c.cfg.Host, "reason", reason)
		c.spread(ctx)
	case <-t.C:
	}
}

// spread is the wait before a connect that starts "at once" (after a healthy connection's
// loss, or a change of the network): at random, up to half of MinBackoff (125 ms by default),
// or until ctx ends or Retry is called. Connections that lose their path at the same moment (a
// laptop's wake, a bastion's restart) so start their handshakes spread over that time rather
// than in the same instant; the slots per address (startup) bound how many run at once.
func (c *Conn) spread(ctx context.Context) {
	if c.cfg.MinBackoff < 2 {
		return
	}
	t := time.NewTimer(rand.N(c.cfg.MinBackoff / 2))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-c.nudge:
	case <-t.C:
	}
}

// backoff is the wait after the nth failure in a row (n ≥ 1).
func (c *Conn) backoff(n int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 1; i < n && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// servedFor is how long a connection that answered no keepalive yet must have been connected to
// count as healthy: one that came up and served resets the backoff, so that its loss (a killed
// session, soon after the last heal) is retried at once, while a host that drops every
// connection as it comes up is still retried at most about once per servedFor.
const servedFor = time.Second

// connectOnce makes one connection and serves it until it ends. healthy says whether it was
// connected and then answered a keepalive or served for servedFor before it ended: an attempt
// that never got as far as connected is a failure to back off from, however long the host took
// to fail it.
func (c *Conn) connectOnce(ctx context.Context) (healthy bool, err error) {
	// This attempt sees the network as it is now: a change it would be told of is older.
	select {
	case <-c.path:
	default:
	}
	h, err := c.resolve()
	if err != nil {
		return false, err
	}
	began := time.Now()
	step := func(what string) {
		c.cfg.Logger.Debug(what, "host", c.cfg.Host, "after", time.Since(began).Round(time.Millisecond))
	}
	l, err := c.dialAcrossChanges(ctx, h)
	if err != nil {
		return false, err
	}
	step("ssh connected")
	defer l.close()
	stop := context.AfterFunc(ctx, l.close)
	defer stop()

	var proved atomic.Bool
	go l.keepalive(h.ServerAliveInterval, h.ServerAliveCountMax, c.path, func() { proved.Store(true) }, c.cfg.Logger)

	// The shell starts first, so that the host runs the user's start-up files while it is
	// asked for the forward.
	sh, err := startShell(l.client)
	if err != nil {
		return false, l.cause(err)
	}
	// The shell's commands wait for the user's start-up files: each gets a deadline.
	var (
		ln  net.Listener
		fwd Forward
	)
	// A connect that fails from here on ends what it left running on the host before its
	// connection closes (giveUp), then closes the sh, unless OnConnect kept it.
	kept, gaveUp := false, false
	giveUp := func() {
		if !gaveUp {
			gaveUp = true
			c.giveUp(l, sh)
		}
	}
	defer func() { // the sh is lent to OnConnect meanwhile, which may keep it
		if !kept {
			sh.close()
		}
	}()
	err = Within(l.ctx, h.Alias, "checking the forward", c.cfg.CommandTimeout, func(ctx context.Context) (err error) {
		ln, fwd, err = c.openForward(ctx, l, sh, h, c.port, c.prev)
		return err
	})
	if err != nil {
		giveUp()
		return false, l.cause(err)
	}
	step("forward open")
	ready := make(chan struct{})
	go c.serve(l.ctx, ln, ready, newHostEnds(l.ctx, l.client, h.Alias, fwd.Port, c.cfg.CommandTimeout, c.cfg.Logger))

	info, err := c.readForward(l.ctx, sh, h, fwd)
	if err != nil {
		giveUp()
		return false, l.cause(err)
	}
	if err := c.checkForward(h, fwd, info); err != nil {
		l.close()
		return false, err
	}
	close(ready)
	c.port = fwd.Port
	c.prev = &info.session

	step("forward checked")
	c.endStuck(l.ctx, sh)
	if c.cfg.OnConnect != nil {
		lent := &Shell{sh: sh}
		err := c.cfg.OnConnect(l.ctx, l.client, fwd, lent)
		kept = lent.end()
		if err != nil {
			giveUp()
			if kept {
				lent.Close()
			}
			return false, l.cause(err) // it names its own step (see Config.OnConnect)
		}
	}
	if !kept {
		sh.close()
	}

	served := c.connected(l, fwd)
	return proved.Load() || served >= servedFor, l.cause(nil)
}

// resolve reads the host's ssh_config afresh for an attempt. The files are looked at before they
// are read, so that an edit made meanwhile counts as a change should this attempt fail.
func (c *Conn) resolve() (*sshconfig.Host, error) {
	c.files = nil
	opts := c.cfg.sshConfig()
	c.files.add(opts.Files()...)
	h, warnings, err := sshconfig.Resolve(opts)
	c.warn(warnings)
	if err != nil {
		return nil, err
	}
	c.files.add(knownHostsFiles(h)...)
	return h, nil
}

// readForward reads, through the shell sh, who listens on the forward's port on the host and who
// the session is, within the command timeout.
func (c *Conn) readForward(ctx context.Context, sh *hostShell, h *sshconfig.Host, fwd Forward) (hostInfo, error) {
	var info hostInfo
	err := Within(ctx, h.Alias, "checking the forward", c.cfg.CommandTimeout, func(ctx context.Context) (err error) {
		info, err = readHostInfo(ctx, sh, fwd.Port, c.cfg.Listeners)
		return err
	})
	var te *TimeoutError
	if err != nil && !errors.As(err, &te) {
		err = fmt.Errorf("check the forward on the host: %w", err)
	}
	return info, err
}

// checkForward checks that the forward's 127.0.0.1 listener on the host is ours (checkLoopback);
// another program's on other addresses of the port is logged.
func (c *Conn) checkForward(h *sshconfig.Host, fwd Forward, info hostInfo) error {
	if !info.tcpRead {
		return fmt.Errorf("%w: the host has no /proc/net/tcp to read (the forward serves Linux hosts only)", ErrUncheckable)
	}
	if err := checkLoopback(info.sockets, fwd.Port, info.session.UID, info.fds); err != nil {
		return err
	}
	if _, others := ownListeners(info.sockets, fwd.Port, info.session.UID, info.fds); len(others) > 0 {
		c.cfg.Logger.Info("another program listens on the forward's port on the host too, on other addresses; 127.0.0.1 stays ours",
			"host", h.Alias, "port", fwd.Port, "others", len(others))
	}
	return nil
}

// connected serves the connection l with its forward fwd until it ends, and says for how long.
func (c *Conn) connected(l *link, fwd Forward) time.Duration {
	c.mu.Lock()
	c.client, c.fwd = l.client, fwd
	c.mu.Unlock()
	c.setStatus(Status{State: Connected, Addr: fwd.Addr, PortChanged: fwd.Changed})
	up := time.Now()
	<-l.ctx.Done()
	c.mu.Lock()
	c.client, c.fwd, c.lost = nil, Forward{}, l.cause(nil)
	c.mu.Unlock()
	return time.Since(up)
}

// Lost says why the last connection that was up ended (the host stopped answering keepalives,
// wrapping [ErrKeepalive], say); nil before any ended. It is set by the time [Conn.Client] no
// longer returns that connection's client.
func (c *Conn) Lost() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// dialAcrossChanges is dial, started again at once when this computer's network changes before
// the first hop has sent a byte. A connect begun while the network was down (a laptop waking, a
// Wi-Fi that drops) may have sent its SYN where no answer comes back, and TCP sends it again only
// 1, 3, 7 s later, up to ConnectTimeout (seen in a wake test on Linux 6.18: such connects waited
// out their 15 s, while new ones went through at once); the change that brings the network back
// is the moment to start over. Once the host has answered, the dial goes on through a
// change: its path works, and the change is left for the connection's keepalive check.
func (c *Conn) dialAcrossChanges(ctx context.Context, h *sshconfig.Host) (*link, error) {
	for {
		l := newLink()
		l.reached, l.hold = c.resetHeld, c.hold
		dctx, cancel := context.WithCancelCause(ctx)
		done, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-done:
			case reason := <-c.path:
				if l.received.Load() == 0 {
					cancel(&pathChanged{reason})
				} else {
					c.repost(reason)
				}
			}
		}()
		err := dialInto(dctx, c.cfg, h, l)
		close(done)
		<-watched
		var pc *pathChanged
		changed := errors.As(context.Cause(dctx), &pc)
		cancel(nil)
		switch {
		case err == nil:
			if changed {
				c.repost(pc.reason) // it came as the dial ended: the keepalive's check is for it
			}
			return l, nil
		case changed && ctx.Err() == nil:
			c.cfg.Logger.Info("connecting again at once", "host", c.cfg.Host, "reason", pc.reason)
			c.spread(ctx)
			continue
		}
		return nil, err
	}
}

// pathChanged is why a dial was cut short: the network changed before the host answered.
type pathChanged struct{ reason string }

func (p *pathChanged) Error() string { return p.reason }

// repost gives a path change back to the next that waits for one (Run's wait, the keepalive).
func (c *Conn) repost(reason string) {
	select {
	case c.path <- reason:
	default: // one is already waiting
	}
}

// warn reports each warning once for the life of c.
func (c *Conn) warn(ws []sshconfig.Warning) {
	for _, w := range ws {
		c.mu.Lock()
		seen := c.warned[w]
		c.warned[w] = true
		c.mu.Unlock()
		if seen {
			continue
		}
		if c.cfg.OnWarning != nil {
			c.cfg.OnWarning(w)
		} else {
			c.cfg.Logger.Warn("ssh config line skipped", "file", w.File, "line", w.Line, "reason", w.Reason)
		}
	}
}
