// Package sshdtest runs OpenSSH's sshd for tests: a real server on a loopback port, with its own
// config and host keys in a temporary folder, for the current user, and clients that log in to it
// with a key the test made, or with keys of the test's own (Options.AuthorizedKeys).
//
// The sessions' HOME is a folder of the test's own (sshd_config's SetEnv), so that what a test
// writes under ~ stays in the test's temporary folder, and the user's shell reads that folder's
// start-up files (~/.bashrc), which a test may fill with noise.
//
// A test can take the server down as a crash would (Server.Kill: the listener and every session,
// with SIGKILL), bring it back on the same port (Server.Restart), and find the processes that
// serve its connections (Server.Sessions, which reads Linux's /proc). The end of the test stops
// the server's listener with SIGTERM.
//
// Start skips the test when sshd is not installed, except when the CI variable is set: there the
// scripts install it, and a missing sshd fails the test.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// Options change the server a test starts.
type Options struct {
	// Home is the sessions' HOME; "" is a new temporary folder.
	Home string
	// Env holds more NAME=value variables for the sessions, beside HOME (sshd takes one SetEnv).
	Env []string
	// Config holds more sshd_config lines. They come before the usual ones, so that they
	// override them where sshd keeps a keyword's first value (PermitRootLogin yes, say), though
	// some keywords add up (HostKey, AllowUsers, Port). For the same reason Config cannot hold
	// a Match block, nor SetEnv (which would drop HOME; use Env).
	Config []string
	// HostKeyTypes are the types of the host keys (ssh-keygen -t), in the order of
	// Server.HostKeys; none is one ed25519 key.
	HostKeyTypes []string
	// Certify, when set, is given each host key's public key file and returns the file of a
	// certificate of that key, which sshd then shows (HostCertificate).
	Certify func(pubKeyFile string) string
	// AuthorizedKeys are files of authorized_keys lines (options and all) that may log in too,
	// after the test's own key.
	AuthorizedKeys []string
	// Netns, when set, is the network namespace sshd runs in (ip netns exec; see package
	// kradtest/netnstest), and Listen its address there; Listen is 127.0.0.1 by default.
	Netns, Listen string
}

// Server is a running sshd.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int    // Addr's port
	Home string // the sessions' HOME
	User string // the user to log in as: the current one
	// KeyFile is the private key that logs in, in OpenSSH's format, for clients that read
	// files (ssh -i, an IdentityFile of ssh_config).
	KeyFile string
	// KnownHosts is a known_hosts file that trusts the server's host keys at Addr.
	KnownHosts string
	// HostKeys are the server's host keys, one of each of Options.HostKeyTypes.
	HostKeys []ssh.PublicKey

	sshd, config string
	netns        string
	listen       string // ListenAddress
	signer       ssh.Signer
	log          *logBuffer

	mu       sync.Mutex
	listener *process // the sshd started last
}

// Start starts sshd and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	sshd := Binary(t)
	for _, l := range opts.Config {
		if f := strings.Fields(l); len(f) > 0 && strings.EqualFold(f[0], "SetEnv") {
			// sshd takes the first SetEnv: this one would drop HOME, and the sessions would
			// read the real ~/.bashrc.
			t.Fatalf("sshdtest: Config holds %q: give the variables in Options.Env", l)
		}
	}
	dir := t.TempDir()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Home == "" {
		opts.Home = filepath.Join(dir, "home")
		if err := os.Mkdir(opts.Home, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getuid() == 0 {
		// sshd run by root wants its privilege separation folder, which its service would make.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1"
	}
	s := &Server{Home: opts.Home, User: u.Username, sshd: sshd, config: filepath.Join(dir, "sshd_config"), netns: opts.Netns, listen: opts.Listen}
	if len(opts.HostKeyTypes) == 0 {
		opts.HostKeyTypes = []string{"ed25519"}
	}
	var hostKeyLines []string
	for _, typ := range opts.HostKeyTypes {
		file := filepath.Join(dir, "host_"+typ)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", "", "-C", "sshdtest", "-f", file).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -t %s: %v\n%s", typ, err, out)
		}
		pub, err := os.ReadFile(file + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		s.HostKeys = append(s.HostKeys, key)
		hostKeyLines = append(hostKeyLines, "HostKey "+file)
		if opts.Certify != nil {
			hostKeyLines = append(hostKeyLines, "HostCertificate "+opts.Certify(file+".pub"))
		}
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if s.signer, err = ssh.NewSignerFromKey(priv); err != nil {
		t.Fatal(err)
	}
	ak := ssh.MarshalAuthorizedKey(s.signer.PublicKey())
	for _, f := range opts.AuthorizedKeys {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
			b = append(b, '\n')
		}
		ak = append(ak, b...)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ak, 0o600); err != nil {
		t.Fatal(err)
	}
	keyBlock, err := ssh.MarshalPrivateKey(priv, "sshdtest")
	if err != nil {
		t.Fatal(err)
	}
	s.KeyFile = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(s.KeyFile, pem.EncodeToMemory(keyBlock), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port that was free a moment ago may be taken by the time sshd binds it: try a few.
	for attempt := 0; ; attempt++ {
		s.Port = freePort(t)
		lines := append([]string{}, opts.Config...)
		lines = append(lines, "Port "+strconv.Itoa(s.Port), "ListenAddress "+s.listen)
		lines = append(lines, hostKeyLines...)
		lines = append(lines,
			"AuthorizedKeysFile "+authorized,
			"PidFile "+filepath.Join(dir, "sshd.pid"),
			"StrictModes no",
			"UsePAM no",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"PermitRootLogin prohibit-password",
			"AllowUsers "+u.Username,
			"SetEnv "+setEnv(append([]string{"HOME=" + opts.Home}, opts.Env...)),
			"LogLevel VERBOSE",
		)
		if err := os.WriteFile(s.config, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.log = &logBuffer{}
		p, err := s.start()
		if err == nil {
			s.listener = p
			break
		}
		if attempt == 4 || !strings.Contains(s.log.String(), "Address already in use") {
			t.Fatalf("start sshd: %v\n%s", err, s.log)
		}
	}
	t.Cleanup(func() {
		s.mu.Lock()
		p := s.listener
		s.mu.Unlock()
		p.stop()
		if t.Failed() {
			t.Logf("sshd's log:\n%s", s.log)
		}
	})
	s.Addr = net.JoinHostPort(s.listen, strconv.Itoa(s.Port))
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	var known strings.Builder
	for i := range s.HostKeys {
		known.WriteString(s.KnownHostsLine(i) + "\n")
	}
	if err := os.WriteFile(s.KnownHosts, []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// Binary is the path of sshd, or skips the test (fails it when CI is set) if there is none.
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return testbin.Need(t, "sshd", "openssh-server")
}

// process is one sshd listener that the server ran.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the listener has exited and been reaped
	// logged is closed at the end of the log's pipe: when no process of this sshd (the
	// listener, its sessions) holds it any more.
	logged chan struct{}
}

// start runs sshd with s's config and waits until it listens on s.Port.
func (s *Server) start() (*process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.sshd, "-D", "-e", "-f", s.config)
	if s.netns != "" {
		// ip netns exec enters the namespace and execs sshd: the process is sshd's.
		cmd = exec.Command("ip", "netns", "exec", s.netns, s.sshd, "-D", "-e", "-f", s.config)
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), logged: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	listening := make(chan struct{}, 1)
	want := fmt.Sprintf("Server listening on %s port %d.", s.listen, s.Port)
	go func() {
		defer close(p.logged)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.log.add(sc.Text())
			if sc.Text() == want {
				select {
				case listening <- struct{}{}:
				default:
				}
			}
		}
		io.Copy(io.Discard, r) // past a line too long to scan: sshd must not write into a closed pipe
	}()
	select {
	case <-listening:
		return p, nil
	case <-p.exited:
		<-p.logged // what it said before it went
		return nil, fmt.Errorf("sshd exited: %v", cmd.ProcessState)
	case <-time.After(10 * time.Second):
		p.stop()
		return nil, errors.New("sshd did not listen within 10s")
	}
}

// stop ends the listener with SIGTERM, and gives its sessions a moment to end and log.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.logged:
	case <-time.After(5 * time.Second): // a session's process still holds the log pipe
	}
	<-p.exited
}

// kill ends the listener and its sessions with SIGKILL.
func (p *process) kill() {
	sessions := Children(p.cmd.Process.Pid)
	p.cmd.Process.Kill()
	for _, pid := range sessions {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-p.exited
}

// Kill ends the listening sshd and every session with SIGKILL: nothing gets to say goodbye, as
// when the host crashes. Restart brings the server back.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listener.kill()
}

// Restart starts sshd again on the same port, with the same config and keys, once Kill has
// ended it; a listener still running is killed first.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listener.kill()
	p, err := s.start()
	if err != nil {
		return err
	}
	s.listener = p
	return nil
}

// PID is the listening sshd's process id.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listener.cmd.Process.Pid
}

// Sessions are the process ids of the sshd processes that serve connections: the listener's
// children.
func (s *Server) Sessions() []int { return Children(s.PID()) }

// SessionProcesses are every process of the connections' sshd sessions: each session's first
// process (sshd's monitor) and the ones under it (the session process that holds its listeners).
// Stopping or killing them all freezes or ends a connection whole.
func (s *Server) SessionProcesses() []int {
	var pids []int
	for _, p := range s.Sessions() {
		pids = append(append(pids, p), Children(p)...)
	}
	return pids
}

// KnownHostsLine is the known_hosts line that trusts HostKeys[i] at Addr.
func (s *Server) KnownHostsLine(i int) string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKeys[i])
}

// Config is a client config that logs in to s with the test's key and trusts only s's host keys.
func (s *Server) Config() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.signer)},
		HostKeyCallback: s.checkHostKey,
		Timeout:         10 * time.Second,
	}
}

// checkHostKey accepts one of s's host keys, or a certificate of one.
func (s *Server) checkHostKey(_ string, _ net.Addr, key ssh.PublicKey) error {
	if cert, ok := key.(*ssh.Certificate); ok {
		key = cert.Key
	}
	for _, k := range s.HostKeys {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return nil
		}
	}
	return fmt.Errorf("host key %s is not the test's sshd's", ssh.FingerprintSHA256(key))
}

// Dial logs in to s, and closes the client when the test ends.
func (s *Server) Dial(t testing.TB) *ssh.Client {
	t.Helper()
	c, err := ssh.Dial("tcp", s.Addr, s.Config())
	if err != nil {
		t.Fatalf("ssh to the test's sshd: %v\n%s", err, s.log)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// HostBlock is an ssh_config Host block for alias that reaches s as the test's client does: its
// address, user and KeyFile (IdentitiesOnly), its KnownHosts (StrictHostKeyChecking yes), then
// the extra lines.
func (s *Server) HostBlock(alias string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Host %s\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n", alias, s.listen, s.Port, s.User, s.KeyFile, s.KnownHosts)
	for _, l := range extra {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// WriteSSHConfig writes HostBlock(alias, extra...) to a new ssh_config file in a folder of the
// test's, and returns the file's path.
func (s *Server) WriteSSHConfig(t testing.TB, alias string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(path, []byte(s.HostBlock(alias, extra...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Log is what sshd has logged so far, over its restarts.
func (s *Server) Log() string { return s.log.String() }

// setEnv quotes each NAME=value for sshd_config.
func setEnv(vars []string) string {
	q := make([]string, len(vars))
	for i, v := range vars {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, " ")
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) < 2000 {
		b.lines = append(b.lines, line)
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// StartAgent starts an ssh-agent for the test, holding the identity files keys (none: empty),
// and returns its socket; the end of the test stops it. Without ssh-agent the test is skipped,
// except under CI, where it fails.
func StartAgent(t testing.TB, keys ...string) string {
	t.Helper()
	testbin.Need(t, "ssh-agent", "openssh-client")
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ssh-agent: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The socket file exists a moment before the agent listens on it.
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if i == 200 {
			t.Fatal("ssh-agent does not answer on its socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %s: %v: %s", k, err, out)
		}
	}
	return sock
}
