// Package sshdtest runs OpenSSH's sshd for tests: a real server on a loopback port, with its own
// config and host key in a temporary folder, for the current user, and clients that log in to it
// with a key the test made.
//
// The sessions' HOME is a folder of the test's own (sshd_config's SetEnv), so that what a test
// writes under ~ stays in the test's temporary folder, and the user's shell reads that folder's
// start-up files (~/.bashrc), which a test may fill with noise.
//
// Start skips the test when sshd is not installed, except when the CI variable is set: there the
// scripts install it, and a missing sshd fails the test.
package sshdtest

import (
	"bufio"
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
)

// Options change the server a test starts.
type Options struct {
	// Home is the sessions' HOME; "" is a new temporary folder.
	Home string
	// Env holds more NAME=value variables for the sessions, beside HOME (sshd takes one SetEnv).
	Env []string
	// Config holds more sshd_config lines, added after the usual ones.
	Config []string
}

// Server is a running sshd.
type Server struct {
	Addr string // 127.0.0.1:port
	Home string // the sessions' HOME
	User string // the user to log in as: the current one
	// KeyFile is the private key that logs in, in OpenSSH's format, for clients that read
	// files (ssh -i, an IdentityFile of ssh_config).
	KeyFile string
	// KnownHosts is a known_hosts file that trusts the server's host key at Addr.
	KnownHosts string

	signer  ssh.Signer
	hostKey ssh.PublicKey
	log     *logBuffer
}

// Start starts sshd and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	sshd := Binary(t)
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
	hostKeyFile := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sshdtest", "-f", hostKeyFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	hostPub, err := os.ReadFile(hostKeyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey(hostPub)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	keyBlock, err := ssh.MarshalPrivateKey(priv, "sshdtest")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(keyBlock), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{Home: opts.Home, User: u.Username, KeyFile: keyFile, signer: signer, hostKey: hostKey}
	// A port that was free a moment ago may be taken by the time sshd binds it: try a few.
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		config := filepath.Join(dir, "sshd_config")
		lines := []string{
			"Port " + strconv.Itoa(port),
			"ListenAddress 127.0.0.1",
			"HostKey " + hostKeyFile,
			"AuthorizedKeysFile " + authorized,
			"PidFile " + filepath.Join(dir, "sshd.pid"),
			"StrictModes no",
			"UsePAM no",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"PermitRootLogin prohibit-password",
			"AllowUsers " + u.Username,
			"SetEnv " + setEnv(append([]string{"HOME=" + opts.Home}, opts.Env...)),
			"LogLevel VERBOSE",
		}
		lines = append(lines, opts.Config...)
		if err := os.WriteFile(config, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		addr, log, err := run(t, sshd, config)
		if err == nil {
			s.Addr, s.log = addr, log
			s.KnownHosts = filepath.Join(dir, "known_hosts")
			line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostKey)
			if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return s
		}
		if attempt == 4 || !strings.Contains(log.String(), "Address already in use") {
			t.Fatalf("start sshd: %v\n%s", err, log)
		}
	}
}

// Binary is the path of sshd, or skips the test (fails it when CI is set) if there is none.
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("OpenSSH's sshd is not installed (apt-get install openssh-server)")
	}
	t.Skip("OpenSSH's sshd is not installed (apt-get install openssh-server)")
	return ""
}

// run starts sshd with config, waits until it listens, and has it stopped when the test ends.
func run(t testing.TB, sshd, config string) (string, *logBuffer, error) {
	log := &logBuffer{}
	cmd := exec.Command(sshd, "-D", "-e", "-f", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", log, err
	}
	if err := cmd.Start(); err != nil {
		return "", log, err
	}
	listening := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.add(line)
			var port int
			if _, err := fmt.Sscanf(line, "Server listening on 127.0.0.1 port %d.", &port); err == nil {
				listening <- net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second): // a session's process still holds the log pipe
		}
		cmd.Wait()
	}
	select {
	case addr := <-listening:
		t.Cleanup(func() {
			stop()
			if t.Failed() {
				t.Logf("sshd's log:\n%s", log)
			}
		})
		return addr, log, nil
	case <-done:
		cmd.Wait()
		return "", log, fmt.Errorf("sshd exited: %v", cmd.ProcessState)
	case <-time.After(10 * time.Second):
		stop()
		return "", log, errors.New("sshd did not listen within 10s")
	}
}

// Config is a client config that logs in to s with the test's key and trusts only s's host key.
func (s *Server) Config() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.signer)},
		HostKeyCallback: ssh.FixedHostKey(s.hostKey),
		Timeout:         10 * time.Second,
	}
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

// Log is what sshd has logged so far.
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
