package forward

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/listenownertest"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// cutProxy stands for the network between the client and sshd. cut makes it a path that lost
// its state: the connections open then never pass another byte (nor a close), and new ones are
// accepted but pass nothing until restore. cutLosing is a cut whose new connections are lost
// too, as a SYN sent into a network that has gone: they never pass, even after restore. Nothing
// is closed, so neither side hears of it.
type cutProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cond     *sync.Cond
	blocking bool // new connections wait
	losing   bool // new connections made while blocking are frozen
	lost     int  // how many were
	closed   bool
	conns    []*proxyConn
}

type proxyConn struct {
	a, b   net.Conn
	frozen bool // open during a cut: never passes again
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// throughCutProxy starts an sshd, named build in a new env, and a cutProxy before it: the
// Config for build dials through the proxy.
func throughCutProxy(t *testing.T) (Config, *cutProxy) {
	t.Helper()
	e := newEnv(t)
	s := e.startBuild()
	p := newCutProxy(t, s.Addr)
	cfg := e.cfg("build")
	cfg.Dialer = p.dialer
	return cfg, p
}

// dialer is a Config.Dialer that goes through the proxy whatever the address.
func (p *cutProxy) dialer(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, p.addr())
}

func (p *cutProxy) accept() {
	for {
		a, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			a.Close()
			continue
		}
		c := &proxyConn{a: a, b: b}
		p.mu.Lock()
		if p.blocking && p.losing {
			c.frozen = true
			p.lost++
			p.cond.Broadcast()
		}
		if p.closed {
			p.mu.Unlock()
			a.Close()
			b.Close()
			return
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.pipe(c, a, b)
		go p.pipe(c, b, a)
	}
}

// pipe copies src to dst, each chunk (and the end) only when the path passes.
func (p *cutProxy) pipe(c *proxyConn, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.wait(c) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			c.a.Close()
			c.b.Close()
			return
		}
	}
}

// wait blocks while c may not pass; false when the proxy closed.
func (p *cutProxy) wait(c *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && (c.frozen || p.blocking) {
		p.cond.Wait()
	}
	return !p.closed
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocking = true
	for _, c := range p.conns {
		c.frozen = true
	}
}

// cutLosing cuts the path, and loses the connections made until restore.
func (p *cutProxy) cutLosing() {
	p.cut()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.losing = true
}

// waitLost waits until n connections were lost.
func (p *cutProxy) waitLost(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && p.lost < n {
		p.cond.Wait()
	}
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocking, p.losing = false, false
	p.cond.Broadcast()
}

func (p *cutProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.cond.Broadcast()
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.a.Close()
		c.b.Close()
	}
}

func TestSSHDKilledAndRestarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	r := run(t, e.cfg("build"))
	st, i := r.connected(0)
	carries(t, st.Addr)

	s.Kill()
	lost, j := r.wait(5*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	if lost.Err == nil || r.c.Client() != nil || r.c.Addr() != "" {
		t.Errorf("after the kill: status %v, Client %v, Addr %q", lost, r.c.Client(), r.c.Addr())
	}
	// Down for a while: attempts fail and back off.
	r.wait(5*time.Second, j, func(s Status) bool { return s.State == Retrying })
	if err := s.Restart(); err != nil {
		t.Fatalf("restart sshd: %v", err)
	}
	st2, _ := r.connected(j)
	if st2.Addr != st.Addr || st2.PortChanged != nil {
		t.Fatalf("after the restart: %v, want the same address %s", st2, st.Addr)
	}
	carries(t, st2.Addr)
}

// TestReconnectsSpread: connections to one host lost at the same moment (its sshd killed with
// every session, as a bastion's restart does it) connect again at once, but not in the same
// instant: each within a random spread of up to half of MinBackoff, so that dozens of hosts behind
// one bastion do not all knock at once. MinBackoff is long here (4 s: a spread of up to 2 s), so
// that neither a busy machine's scheduling (which could spread connects with no spread at all)
// nor the backoff of a failed attempt (3.2 s at the least) could pass for the spread.
func TestReconnectsSpread(t *testing.T) {
	t.Parallel()
	const n = 12
	e := newEnv(t)
	s := e.startBuild()
	var (
		mu     sync.Mutex
		killed time.Time
		first  = map[int]time.Time{} // each connection's first dial after the kill
	)
	runs := make([]*running, n)
	for i := range runs {
		cfg := e.cfg("build")
		cfg.MinBackoff, cfg.MaxBackoff = 4*time.Second, 8*time.Second
		cfg.ServerAliveInterval, cfg.ServerAliveCountMax = 100*time.Millisecond, 3
		cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			if _, ok := first[i]; !ok && !killed.IsZero() {
				first[i] = time.Now()
			}
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		runs[i] = run(t, cfg)
	}
	for _, r := range runs {
		r.connected(0)
	}
	// Each is healthy once it has served past servedFor, keepalives answered or not (on a busy
	// machine a reply may come late): its loss is retried at once.
	time.Sleep(servedFor + 500*time.Millisecond)
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	s.Kill()
	dialed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(first)
	}
	if !eventually(10*time.Second, func() bool { return dialed() == n }) {
		t.Fatalf("%d of the %d connections dialed again within 10 s of the kill", dialed(), n)
	}
	mu.Lock()
	defer mu.Unlock()
	var earliest, latest time.Duration = time.Hour, 0
	for _, at := range first {
		d := at.Sub(killed)
		earliest, latest = min(earliest, d), max(latest, d)
	}
	t.Logf("the %d connections dialed again %s to %s after the kill", n, earliest.Round(time.Millisecond), latest.Round(time.Millisecond))
	// Under the 3.2 s that a failed attempt's backoff takes at the least, with a second for a
	// busy machine past the spread's 2 s.
	if latest > 3*time.Second {
		t.Errorf("the last connection dialed again %s after the kill: not at once (the spread is at most 2 s)", latest)
	}
	if latest-earliest < 500*time.Millisecond {
		t.Errorf("the %d connections dialed again within %s of each other: not spread", n, latest-earliest)
	}
}

func TestSilentDrop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	p := newCutProxy(t, s.Addr)

	const interval, count = 200 * time.Millisecond, 3
	cfg := e.cfg("build")
	cfg.Dialer = p.dialer
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = interval, count
	cfg.ConnectTimeout = time.Second
	cfg.Logger = testLogger(t)
	r := run(t, cfg)
	st, i := r.connected(0)
	carries(t, st.Addr)
	old := s.Sessions()

	p.cut()
	cutAt := time.Now()
	lost, j := r.wait(5*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	noticed := r.at(j).Sub(cutAt)
	if !errors.Is(lost.Err, ErrKeepalive) {
		t.Errorf("lost with %v, want ErrKeepalive", lost.Err)
	}
	// The bound is interval × (count+1): a request goes out within an interval of the cut,
	// and count intervals later it is given up; and a second for a loaded machine's scheduling
	// (TCP alone would take minutes: the ErrKeepalive above says which noticed).
	if bound := interval*(count+1) + time.Second; noticed > bound {
		t.Errorf("noticed the cut after %s, want within %s", noticed, bound)
	}
	// The path stays down a while: attempts time out.
	r.wait(5*time.Second, j, func(s Status) bool { return s.State == Retrying })
	time.Sleep(500 * time.Millisecond)

	p.restore()
	restoredAt := time.Now()
	st2, k := r.connected(j)
	t.Logf("noticed the cut in %s; connected %s after the path came back (at %s)", noticed.Round(time.Millisecond), r.at(k).Sub(restoredAt).Round(time.Millisecond), restoredAt.Format("15:04:05.000"))
	for _, h := range r.history() {
		t.Log(h)
	}
	if st2.Addr != st.Addr || st2.PortChanged != nil {
		t.Fatalf("after the cut: %v, want the same address %s", st2, st.Addr)
	}
	carries(t, st2.Addr)
	// The old session, which held the port and never heard of the cut, was ended.
	for _, pid := range old {
		if syscall.Kill(pid, 0) == nil && isSSHD(pid) {
			t.Errorf("the old sshd session %d is still there", pid)
		}
	}
}

// isSSHD says whether pid is (still) an sshd: a killed one may linger as a zombie.
func isSSHD(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.Comm == "sshd" && !st.zombie
}

type testStat struct {
	procStat
	zombie bool
}

func readStat(pid int) (testStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return testStat{}, err
	}
	st, err := parseProcStat(b)
	if err != nil {
		return testStat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return testStat{st, len(s) > i+2 && s[i+2] == 'Z'}, nil
}

func TestPortSquatted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()

	// The second dial waits until the test has taken the old port.
	var dials atomic.Int32
	gate := make(chan struct{})
	cfg := e.cfg("build")
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	r := run(t, cfg)
	st, i := r.connected(0)

	for _, pid := range s.Sessions() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	var squat net.Listener
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if squat, err = net.Listen("tcp", st.Addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old port did not come free: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer squat.Close()
	close(gate)

	st2, _ := r.connected(i + 1)
	if st2.Addr == st.Addr || st2.PortChanged == nil || *st2.PortChanged != (PortChanged{Old: st.Addr, New: st2.Addr}) {
		t.Fatalf("after the squat: %v (%+v), want a new port and PortChanged from %s", st2, st2.PortChanged, st.Addr)
	}
	carries(t, st2.Addr)
}

// A stale session that is stopped (SIGSTOP: a debugger, a job-control accident, a frozen host
// process) does not act on SIGTERM until it is continued, and holds its port meanwhile. The
// reconnect must still get the port back: the old session is continued or killed, and known to
// be gone, before the port is asked for again.
func TestStoppedStaleSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	const interval, count = 200 * time.Millisecond, 3
	cfg := e.cfg("build")
	cfg.ServerAliveInterval, cfg.ServerAliveCountMax = interval, count
	cfg.Logger = testLogger(t)
	r := run(t, cfg)
	st, i := r.connected(0)
	carries(t, st.Addr)

	// Every process of the old session (sshd's monitor and the session process under it) is
	// stopped: the connection goes silent, and the session keeps its listener.
	stopped := s.SessionProcesses()
	if len(stopped) == 0 {
		t.Fatal("no sshd session to stop")
	}
	t.Cleanup(func() {
		for _, pid := range stopped {
			syscall.Kill(pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	for _, pid := range stopped {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stop %d: %v", pid, err)
		}
	}
	t.Logf("stopped the old session's processes %v", stopped)

	lost, j := r.wait(10*time.Second, i+1, func(s Status) bool { return s.State != Connected })
	if !errors.Is(lost.Err, ErrKeepalive) {
		t.Errorf("lost with %v, want ErrKeepalive", lost.Err)
	}
	st2, _ := r.connected(j)
	if st2.Addr != st.Addr || st2.PortChanged != nil {
		t.Fatalf("after the old session stopped: %v, want the same address %s", st2, st.Addr)
	}
	carries(t, st2.Addr)
	// The process that held the port is gone (a zombie at most, when its stopped parent cannot
	// reap it).
	gone := 0
	for _, pid := range stopped {
		if !isSSHD(pid) {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("every process of the old session %v is still there", stopped)
	}
}

// endProcess ends a stopped process that ignores SIGTERM, with SIGKILL, and leaves alone a
// process whose start time is not the one recorded (its pid was reused).
func TestEndProcess(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t, sshdtest.Options{})
	sh, err := startShell(s.Dial(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	// start runs script, which says "ready" once it has set itself up.
	start := func(script string) (*exec.Cmd, *hostSession, chan struct{}) {
		cmd := exec.Command("sh", "-c", script)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		st, err := readStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, &hostSession{PID: cmd.Process.Pid, Start: st.Start}, exited
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	stubborn, p, exited := start(`trap '' TERM; echo ready; while :; do sleep 1; done`)
	syscall.Kill(stubborn.Process.Pid, syscall.SIGSTOP)
	if err := endProcess(ctx, sh, p); err != nil {
		t.Fatalf("endProcess: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("endProcess returned, but the process is still there")
	}
	if ws := stubborn.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the process ended with %v, want SIGKILL", stubborn.ProcessState)
	}

	other, p, exited := start(`echo ready; exec sleep 60`)
	p.Start++ // another process than the one recorded
	if err := endProcess(ctx, sh, p); err != nil {
		t.Fatalf("endProcess: %v", err)
	}
	select {
	case <-exited:
		t.Fatalf("endProcess ended pid %d, whose start time is not the one recorded: %v", p.PID, other.ProcessState)
	case <-time.After(200 * time.Millisecond):
	}
}

// Another user of the host listening on the forward's port, on [::] (IPv6 only) and on the
// host's LAN address, beside our 127.0.0.1, takes nothing from us: the reconnect gets the same
// port and carries, and so does a new connection that asks for that port (the app's restart).
// It used to fail for good, as if the host's sshd had GatewayPorts yes.
func TestForeignListenersOnOurPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	r := run(t, e.cfg("build"))
	st, i := r.connected(0)
	port := strconv.Itoa(mustPort(t, st.Addr))

	listenownertest.StartNetwork(t, "tcp6", "[::]:"+port, false)
	if lan, ok := lanAddr(); ok {
		listenownertest.Start(t, net.JoinHostPort(lan.String(), port), false)
	} else {
		t.Log("no address but loopback here: only [::] is taken")
	}
	for _, pid := range s.Sessions() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	st2, _ := r.connected(i + 1)
	if st2.Addr != st.Addr || st2.PortChanged != nil {
		t.Fatalf("beside another user's listeners: %v, want %s again", st2, st.Addr)
	}
	carries(t, st2.Addr)

	r.stop()
	cfg := e.cfg("build")
	cfg.PreferredPort = mustPort(t, st.Addr)
	r = run(t, cfg)
	st3, _ := r.connected(0)
	if st3.Addr != st.Addr || st3.PortChanged != nil {
		t.Fatalf("a new connection beside another user's listeners: %v, want %s", st3, st.Addr)
	}
	carries(t, st3.Addr)
}

func mustPort(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// lanAddr is an IPv4 address of this machine other than loopback, if it has one.
func lanAddr() (netip.Addr, bool) {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && ip.IsGlobalUnicast() {
				return ip.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}

// TestServerClosesBeforeItsBanner: a server that takes connections and closes them before its
// banner (an sshd just started again, one past its MaxStartups) fails the attempt, and the wait
// before the next watches the path: the connection is made as soon as a banner comes, not after
// the backoff (30 s here).
func TestServerClosesBeforeItsBanner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var open atomic.Bool
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			if !open.Load() {
				a.Close()
				continue
			}
			b, err := net.Dial("tcp", s.Addr)
			if err != nil {
				a.Close()
				continue
			}
			go func() { io.Copy(b, a); b.Close() }()
			go func() { io.Copy(a, b); a.Close() }()
		}
	}()
	cfg := e.cfg("build")
	cfg.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ln.Addr().String())
	}
	cfg.MinBackoff, cfg.MaxBackoff = 30*time.Second, 30*time.Second
	r := run(t, cfg)
	retry, i := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Retrying })
	if !strings.Contains(retry.String(), "handshake") {
		t.Errorf("the status is %q, want the handshake's failure", retry)
	}
	open.Store(true)
	opened := time.Now()
	r.wait(20*time.Second, i, func(s Status) bool { return s.State == Connected })
	t.Logf("connected %s after the server sent banners again", time.Since(opened).Round(time.Millisecond))
}

// TestServedConnectionResetsBackoff: a connection that came up and served, but has answered no
// keepalive yet (its interval is a minute here), is healthy once it served for a second: when its
// session is killed, the next connect starts at once, not after MinBackoff (4 s here, 3.2 s at
// the least with its jitter). Three times in a row: each heal resets the backoff.
func TestServedConnectionResetsBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.startBuild()
	cfg := e.cfg("build")
	cfg.MinBackoff, cfg.MaxBackoff = 4*time.Second, 8*time.Second
	cfg.ServerAliveInterval = time.Minute
	var mu sync.Mutex
	var dials []time.Time
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials = append(dials, time.Now())
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	r := run(t, cfg)
	_, i := r.connected(0)
	for round := range 3 {
		time.Sleep(1500 * time.Millisecond) // served past servedFor, no keepalive answered
		mu.Lock()
		before := len(dials)
		mu.Unlock()
		killed := time.Now()
		for _, pid := range s.Sessions() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		_, j := r.wait(20*time.Second, i+1, func(st Status) bool { return st.State == Connected })
		i = j
		mu.Lock()
		if len(dials) <= before {
			mu.Unlock()
			t.Fatalf("round %d: connected again without a dial", round)
		}
		again := dials[before].Sub(killed)
		mu.Unlock()
		t.Logf("round %d: dialed again %v after the kill", round, again.Round(time.Millisecond))
		if again >= 3*time.Second {
			t.Errorf("round %d: dialed again %v after the kill, the backoff's pace: a connection that served did not reset it", round, again)
		}
	}
}

// TestKeepaliveOff: ServerAliveInterval 0 sends no keepalives, as in ssh, rather than failing;
// the loop waits for a check (after sleep or a change of the network) and ends with the link.
// (The link has no client: a keepalive sent would panic.)
func TestKeepaliveOff(t *testing.T) {
	l := newLink()
	done := make(chan struct{})
	go func() {
		l.keepalive(0, 3, nil, func() { t.Error("a reply without a request") }, nil)
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	l.close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("keepalive(0) did not return when its link ended")
	}
}
