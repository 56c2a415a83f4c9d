package forward

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/sshconfig"
	"github.com/krad-ade/krad/remote/sshdtest"
)

// These tests run OpenSSH's own sshd (remote/sshdtest), as the current user, on a loopback
// port. No fake SSH server. The host the forward opens its port on is this machine, so the tests
// dial the forwarded port and read /proc themselves.

// keygen makes a key pair with ssh-keygen at path (and path.pub).
func keygen(t testing.TB, path, typ, passphrase string) ssh.PublicKey {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", passphrase, "-C", "test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen -t %s: %v: %s", typ, err, out)
	}
	return readPublicKey(path + ".pub")
}

// echoServer is the local target of the tests' forwards: it reads until the end of input, then
// writes it all back and closes, so that a round trip proves both directions and both
// half-closes.
func echoServer(t testing.TB) func(ctx context.Context) (net.Conn, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := io.ReadAll(c)
				if err != nil {
					return
				}
				c.Write(b)
			}()
		}
	}()
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
}

// roundTrip sends msg through the forward at addr (on this machine, the host) and returns what
// came back after the end of input.
func roundTrip(addr string, msg []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if werr := <-errc; werr != nil {
		return got, werr
	}
	return got, err
}

// env is a user's side for a test: a home with .ssh, a key, an ssh_config.
type env struct {
	t          testing.TB
	home       string
	key        string // the identity file, authorized on the test's sshd
	config     string // ~/.ssh/config
	knownHosts string // ~/.ssh/known_hosts
}

func newEnv(t testing.TB) *env {
	t.Helper()
	sshdtest.Binary(t) // skips the test without OpenSSH (ssh-keygen comes with sshd)
	e := &env{t: t, home: t.TempDir()}
	dir := filepath.Join(e.home, ".ssh")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.key = filepath.Join(dir, "id_ed25519")
	keygen(t, e.key, "ed25519", "")
	e.config = filepath.Join(dir, "config")
	e.knownHosts = filepath.Join(dir, "known_hosts")
	return e
}

// writeConfig writes the blocks into ~/.ssh/config.
func (e *env) writeConfig(blocks ...string) {
	e.t.Helper()
	if err := os.WriteFile(e.config, []byte(strings.Join(blocks, "")), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// trust writes lines into ~/.ssh/known_hosts.
func (e *env) trust(lines ...string) {
	e.t.Helper()
	if err := os.WriteFile(e.knownHosts, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// startBuild starts an sshd that authorizes e's key, names it build in ~/.ssh/config (with the
// extra lines), and trusts its first host key.
func (e *env) startBuild(extra ...string) *sshdtest.Server {
	e.t.Helper()
	s := sshdtest.Start(e.t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}})
	e.writeConfig(hostBlock("build", s, extra...))
	e.trust(s.KnownHostsLine(0))
	return s
}

// hostBlock is an ssh_config Host block for an sshd of the test, at its address (127.0.0.1, or
// its Listen in a network namespace).
func hostBlock(alias string, s *sshdtest.Server, extra ...string) string {
	host, _, _ := net.SplitHostPort(s.Addr)
	b := fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  User %s\n", alias, host, s.Port, localUser())
	for _, l := range extra {
		b += "  " + l + "\n"
	}
	return b
}

// localUser is the user ssh_config's reading connects as when the files name none.
func localUser() string {
	h, _, err := sshconfig.Resolve(sshconfig.Options{Host: "h", UserConfig: None, SystemConfig: None})
	if err != nil {
		panic(err)
	}
	return h.User
}

// cfg is a Config for host in this env: its files only, no agent, short timers.
func (e *env) cfg(host string) Config {
	return Config{
		Host:           host,
		Target:         echoServer(e.t),
		UserConfig:     e.config,
		SystemConfig:   None,
		AgentSocket:    None,
		Home:           e.home,
		ConnectTimeout: 5 * time.Second,
	}
}

// running is a Conn whose Run runs in the background for the test, and the statuses it went
// through.
type running struct {
	t      testing.TB
	c      *Conn
	done   chan error
	cancel context.CancelFunc

	mu       sync.Mutex
	statuses []timedStatus
	changed  chan struct{}
}

type timedStatus struct {
	Status
	at time.Time
}

// run starts cfg's Conn; the test's end stops it and waits for Run to return.
func run(t testing.TB, cfg Config) *running {
	t.Helper()
	r := &running{t: t, done: make(chan error, 1), changed: make(chan struct{}, 1)}
	onStatus := cfg.OnStatus
	cfg.OnStatus = func(s Status) {
		r.mu.Lock()
		r.statuses = append(r.statuses, timedStatus{s, time.Now()})
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
		if onStatus != nil {
			onStatus(s)
		}
	}
	r.c = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.c.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop ends Run's context and waits for Run to return.
func (r *running) stop() {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the next stop
	case <-time.After(10 * time.Second):
		r.t.Error("Run did not return within 10s of its context ending")
	}
}

// wait waits for a status that pred accepts, after the first `after` statuses, and returns it
// with its index.
func (r *running) wait(timeout time.Duration, after int, pred func(Status) bool) (Status, int) {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		for i := after; i < len(r.statuses); i++ {
			if pred(r.statuses[i].Status) {
				s := r.statuses[i].Status
				r.mu.Unlock()
				return s, i
			}
		}
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-deadline:
			r.t.Fatalf("no such status within %s; statuses: %v", timeout, r.history())
		}
	}
}

func (r *running) at(i int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses[i].at
}

func (r *running) history() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.statuses {
		out = append(out, s.at.Format("15:04:05.000")+" "+s.String())
	}
	return out
}

// connected waits for the state connected after the first `after` statuses.
func (r *running) connected(after int) (Status, int) {
	r.t.Helper()
	return r.wait(20*time.Second, after, func(s Status) bool {
		if s.State == Failed {
			r.t.Fatalf("failed: %v", s.Err)
		}
		return s.State == Connected
	})
}

// failed waits for the state failed, and returns its error. Run goes on, waiting for a fix.
func (r *running) failed() error {
	r.t.Helper()
	st, _ := r.wait(20*time.Second, 0, func(s Status) bool { return s.State == Failed })
	if st.Err == nil {
		r.t.Fatalf("failed without an error; statuses: %v", r.history())
	}
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		r.t.Fatalf("Run returned %v when it failed; it should wait for a fix", err)
	default:
	}
	return st.Err
}

// carries checks that the forward at addr carries bytes both ways.
func carries(t testing.TB, addr string) {
	t.Helper()
	msg := bytes.Repeat([]byte("krad through the tunnel\n"), 50000) // 1.2 MB, past every window
	got, err := roundTrip(addr, msg)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("round trip through %s: got %d bytes of %d, %v", addr, len(got), len(msg), err)
	}
}

// testLogger logs to the test's log, with the time.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
