package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/sshdtest"
)

func TestConnectKeyFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startBuild("IdentityFile ~/.ssh/id_ed25519")

	var onConnect []Forward
	cfg := e.cfg("build")
	cfg.OnConnect = func(ctx context.Context, client *ssh.Client, fwd Forward, _ *Shell) error {
		// The caller's steps run on the new client, before the state says connected.
		sess, err := client.NewSession()
		if err != nil {
			return err
		}
		defer sess.Close()
		out, err := sess.Output("echo hello")
		if err != nil || strings.TrimSpace(string(out)) != "hello" {
			return errors.New("echo hello did not say hello")
		}
		onConnect = append(onConnect, fwd)
		return nil
	}
	r := run(t, cfg)
	st, _ := r.connected(0)

	if !strings.HasPrefix(st.Addr, "127.0.0.1:") || st.Addr != r.c.Addr() || r.c.Client() == nil {
		t.Fatalf("status %v, Addr() %q, Client() %v", st, r.c.Addr(), r.c.Client())
	}
	if len(onConnect) != 1 || onConnect[0].Addr != st.Addr || onConnect[0].Changed != nil {
		t.Errorf("OnConnect saw %+v, want the forward %s", onConnect, st.Addr)
	}
	if got, want := st.String(), "connected: "+st.Addr+" on the host"; got != want {
		t.Errorf("Status.String() = %q, want %q", got, want)
	}
	carries(t, st.Addr)
	// Half-close with nothing sent: the target sees the end of input and closes.
	if got, err := roundTrip(st.Addr, nil); err != nil || len(got) != 0 {
		t.Errorf("empty round trip: %q, %v", got, err)
	}
}

func TestConnectAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}})
	sock := sshdtest.StartAgent(t, e.key)
	os.Remove(e.key) // only the agent has it now
	e.writeConfig(hostBlock("build", s))
	e.trust(s.KnownHostsLine(0))

	cfg := e.cfg("build")
	cfg.AgentSocket = sock
	r := run(t, cfg)
	st, _ := r.connected(0)
	carries(t, st.Addr)
}

// With IdentitiesOnly, the agent offers only the keys of the identity files: here the one key
// it holds is the encrypted identity file's, which is never prompted for.
func TestAgentIdentitiesOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := filepath.Join(e.home, "other")
	keygen(t, other, "ed25519", "")
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub", other + ".pub"}})
	sock := sshdtest.StartAgent(t, e.key)
	// Encrypt the file now that the agent holds the key.
	if out, err := exec.Command("ssh-keygen", "-q", "-p", "-P", "", "-N", "secret", "-f", e.key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -p: %v: %s", err, out)
	}
	e.trust(s.KnownHostsLine(0))

	t.Run("the agent's copy of the encrypted identity", func(t *testing.T) {
		e.writeConfig(hostBlock("build", s, "IdentityFile ~/.ssh/id_ed25519", "IdentitiesOnly yes"))
		cfg := e.cfg("build")
		cfg.AgentSocket = sock
		r := run(t, cfg)
		r.connected(0)
	})
	t.Run("agent keys of other files are not offered", func(t *testing.T) {
		sock := sshdtest.StartAgent(t, other)
		e.writeConfig(hostBlock("build", s, "IdentityFile ~/.ssh/id_ed25519", "IdentitiesOnly yes"))
		cfg := e.cfg("build")
		cfg.AgentSocket = sock
		err := run(t, cfg).failed()
		var ae *AuthError
		if !errors.As(err, &ae) || len(ae.Tried) != 0 || !strings.Contains(err.Error(), "ssh-add "+e.key) {
			t.Errorf("err = %v, want an *AuthError offering nothing and naming ssh-add %s", err, e.key)
		}
	})
}

func TestEncryptedKeyWithoutAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.Remove(e.key)
	os.Remove(e.key + ".pub")
	keygen(t, e.key, "ed25519", "secret")
	e.startBuild()

	start := time.Now()
	err := run(t, e.cfg("build")).failed()
	var ae *AuthError
	if !errors.As(err, &ae) || len(ae.Encrypted) != 1 || ae.Encrypted[0] != e.key {
		t.Fatalf("err = %v, want an *AuthError naming %s", err, e.key)
	}
	for _, want := range []string{e.key + " needs a passphrase", "ssh-add " + e.key, "SSH_AUTH_SOCK"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing took %s", d)
	}
}

func TestUnknownHostKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}})
	fp := ssh.FingerprintSHA256(s.HostKeys[0])

	for _, strict := range []string{"", "ask", "yes"} {
		t.Run("StrictHostKeyChecking "+strict, func(t *testing.T) {
			var extra []string
			if strict != "" {
				extra = append(extra, "StrictHostKeyChecking "+strict)
			}
			e.writeConfig(hostBlock("build", s, extra...))
			err := run(t, e.cfg("build")).failed()
			var hk *knownhosts.HostKeyError
			if !errors.As(err, &hk) || !hk.Unknown() || hk.Got != fp || hk.Host != "[127.0.0.1]:"+strconv.Itoa(s.Port) {
				t.Fatalf("err = %#v, want an unknown *knownhosts.HostKeyError for %s", err, fp)
			}
			cmd := "ssh-keyscan -p " + strconv.Itoa(s.Port) + " -t ed25519 127.0.0.1 >> " + e.knownHosts
			for _, want := range []string{fp, cmd, "ssh build once"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to say %q", err, want)
				}
			}
			if _, err := os.Stat(e.knownHosts); err == nil {
				t.Errorf("known_hosts was written")
			}
		})
	}
	t.Run("the command it gives works", func(t *testing.T) {
		testbin.Need(t, "ssh-keyscan", "openssh-client")
		e.writeConfig(hostBlock("build", s))
		err := run(t, e.cfg("build")).failed()
		var hk *knownhosts.HostKeyError
		errors.As(err, &hk)
		_, cmd, _ := strings.Cut(hk.Hint, "trust it with: ")
		cmd, _, _ = strings.Cut(cmd, ", or")
		if out, err := exec.Command("sh", "-c", cmd+" 2>/dev/null").CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", cmd, err, out)
		}
		r := run(t, e.cfg("build"))
		r.connected(0)
		os.Remove(e.knownHosts)
	})
	for _, strict := range []string{"accept-new", "no"} {
		t.Run("StrictHostKeyChecking "+strict, func(t *testing.T) {
			e.writeConfig(hostBlock("build", s, "StrictHostKeyChecking "+strict))
			// An existing file without a final newline keeps its mode and gets a line of its own.
			if err := os.WriteFile(e.knownHosts, []byte("other.example.com "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKeys[0])))), 0o640); err != nil {
				t.Fatal(err)
			}
			os.Chmod(e.knownHosts, 0o640)
			defer os.Remove(e.knownHosts)
			r := run(t, e.cfg("build"))
			st, _ := r.connected(0)
			carries(t, st.Addr)
			b, _ := os.ReadFile(e.knownHosts)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != 2 || lines[1] != s.KnownHostsLine(0) {
				t.Errorf("known_hosts = %q, want the host's line added as line 2", b)
			}
			if fi, _ := os.Stat(e.knownHosts); fi.Mode().Perm() != 0o640 {
				t.Errorf("known_hosts mode = %v, want 0640 kept", fi.Mode())
			}
		})
	}
	t.Run("hashed", func(t *testing.T) {
		e.writeConfig(hostBlock("build", s, "StrictHostKeyChecking accept-new", "HashKnownHosts yes"))
		os.Remove(e.knownHosts)
		defer os.Remove(e.knownHosts)
		r := run(t, e.cfg("build"))
		r.connected(0)
		b, _ := os.ReadFile(e.knownHosts)
		if !strings.HasPrefix(string(b), "|1|") || strings.Contains(string(b), "127.0.0.1") {
			t.Errorf("known_hosts = %q, want a hashed name", b)
		}
		if fi, _ := os.Stat(e.knownHosts); fi.Mode().Perm() != 0o600 {
			t.Errorf("new known_hosts mode = %v, want 0600", fi.Mode())
		}
		// And the hashed entry is found again, under ask.
		e.writeConfig(hostBlock("build", s))
		r2 := run(t, e.cfg("build"))
		r2.connected(0)
	})
}

func TestChangedHostKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}})
	old := keygen(t, filepath.Join(e.home, "old_host_key"), "ed25519", "")
	name := "[127.0.0.1]:" + strconv.Itoa(s.Port)
	e.trust("# line 1", name+" "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(old))))

	// Even accept-new refuses a changed key.
	for _, strict := range []string{"ask", "accept-new", "no"} {
		t.Run(strict, func(t *testing.T) {
			e.writeConfig(hostBlock("build", s, "StrictHostKeyChecking "+strict))
			err := run(t, e.cfg("build")).failed()
			var hk *knownhosts.HostKeyError
			if !errors.As(err, &hk) || hk.Unknown() {
				t.Fatalf("err = %v, want a changed *knownhosts.HostKeyError", err)
			}
			got, was := ssh.FingerprintSHA256(s.HostKeys[0]), ssh.FingerprintSHA256(old)
			line := e.knownHosts + ":2"
			if hk.Got != got || len(hk.Known) != 1 || hk.Known[0] != was || hk.Line != line || hk.Host != name {
				t.Errorf("HostKeyError = %+v, want got %s, known %s at %s", hk, got, was, line)
			}
			for _, want := range []string{got, was, line, "ssh-keygen -R '" + name + "' -f " + e.knownHosts} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// A host with several keys, of which known_hosts holds only one (RSA here, the type x/crypto
// would otherwise ask for after ECDSA's): the key asked for is the known one, not a "change".
func TestMultiKeyHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}, HostKeyTypes: []string{"ed25519", "ecdsa", "rsa"}})
	e.trust(s.KnownHostsLine(2))
	e.writeConfig(hostBlock("build", s))
	r := run(t, e.cfg("build"))
	r.connected(0)

	// HostKeyAlias: the key is looked up under the alias.
	e.trust("buildalias " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKeys[1]))))
	e.writeConfig(hostBlock("build", s, "HostKeyAlias buildalias"))
	r2 := run(t, e.cfg("build"))
	r2.connected(0)
}

func TestProxyJump(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	auth := sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}}
	jump1, jump2, target := sshdtest.Start(t, auth), sshdtest.Start(t, auth), sshdtest.Start(t, auth)
	e.trust(jump1.KnownHostsLine(0), jump2.KnownHostsLine(0), target.KnownHostsLine(0))
	e.writeConfig(hostBlock("jump1", jump1), hostBlock("jump2", jump2),
		hostBlock("target", target, "ProxyJump jump1,"+localUser()+"@jump2:"+strconv.Itoa(jump2.Port)))

	cfg := e.cfg("target")
	var dialed []string
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	r := run(t, cfg)
	st, _ := r.connected(0)
	carries(t, st.Addr)
	if len(dialed) != 1 || dialed[0] != jump1.Addr {
		t.Errorf("dialed %q directly, want only the first hop %s", dialed, jump1.Addr)
	}
	// Each hop's sshd has a session: the connection went through all three.
	for _, s := range []*sshdtest.Server{jump1, jump2, target} {
		if len(s.Sessions()) == 0 {
			t.Errorf("sshd %s has no session", s.Addr)
		}
	}
}

func TestJumpHostKeyUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	auth := sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}}
	jump, target := sshdtest.Start(t, auth), sshdtest.Start(t, auth)
	e.trust(target.KnownHostsLine(0))
	e.writeConfig(hostBlock("jump", jump), hostBlock("target", target, "ProxyJump jump"))
	err := run(t, e.cfg("target")).failed()
	var hk *knownhosts.HostKeyError
	if !errors.As(err, &hk) || !strings.HasPrefix(err.Error(), "jump host jump") {
		t.Errorf("err = %v, want the jump host's unknown key", err)
	}
}

func TestForwardingForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		sshd  []string
		key   string
		wants []string
	}{
		{name: "AllowTcpForwarding no", sshd: []string{"AllowTcpForwarding no"}},
		{name: "AllowTcpForwarding local", sshd: []string{"AllowTcpForwarding local"}},
		{name: "restrict in authorized_keys", key: "restrict "},
		{name: "permitlisten in authorized_keys", key: `permitlisten="127.0.0.1:1" `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ak := filepath.Join(t.TempDir(), "ak")
			pub, _ := os.ReadFile(e.key + ".pub")
			os.WriteFile(ak, append([]byte(tc.key), pub...), 0o600)
			s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{ak}, Config: tc.sshd})
			e.writeConfig(hostBlock("build", s))
			e.trust(s.KnownHostsLine(0))
			err := run(t, e.cfg("build")).failed()
			if !errors.Is(err, ErrForwardingForbidden) {
				t.Fatalf("err = %v, want ErrForwardingForbidden", err)
			}
			for _, want := range []string{"does not allow remote port forwarding", "AllowTcpForwarding", "authorized_keys"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "denied by peer") {
				t.Errorf("err = %q: the library's words, not ours", err)
			}
		})
	}
}

func TestGatewayPorts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{e.key + ".pub"}, Config: []string{"GatewayPorts yes"}})
	e.writeConfig(hostBlock("build", s))
	e.trust(s.KnownHostsLine(0))
	cfg := e.cfg("build")
	var hook bool
	cfg.OnConnect = func(context.Context, *ssh.Client, Forward, *Shell) error { hook = true; return nil }
	err := run(t, cfg).failed()
	if !errors.Is(err, ErrNotLoopback) || !strings.Contains(err.Error(), "GatewayPorts no") {
		t.Fatalf("err = %v, want ErrNotLoopback saying to set GatewayPorts no", err)
	}
	if hook {
		t.Error("OnConnect ran on a forward that listens on every interface")
	}
	// The forward is gone: nothing listens on the port any more (the session is closed).
	var port int
	if i := strings.LastIndex(err.Error(), "0.0.0.0:"); i >= 0 {
		port, _ = strconv.Atoi(strings.FieldsFunc(err.Error()[i+8:], func(r rune) bool { return r < '0' || r > '9' })[0])
	}
	if port == 0 {
		t.Fatalf("err = %q names no port on 0.0.0.0", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("port %d still listens after the failure", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHandshakeTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A server that accepts and never speaks.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e.writeConfig("Host silent\n  HostName 127.0.0.1\n  Port " + strconv.Itoa(port) + "\n")
	cfg := e.cfg("silent")
	cfg.ConnectTimeout = 300 * time.Millisecond
	r := run(t, cfg)
	st, i := r.wait(5*time.Second, 0, func(s Status) bool { return s.State == Retrying })
	if d := r.at(i).Sub(r.at(0)); d > 2*time.Second {
		t.Errorf("the handshake timed out after %s, want about 300ms", d)
	}
	if !strings.Contains(st.String(), "no answer in 300ms (ConnectTimeout)") || !strings.HasPrefix(st.String(), "retrying in ") {
		t.Errorf("status = %q", st)
	}
}

func TestOnConnectError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startBuild()

	t.Run("retried, on the same port", func(t *testing.T) {
		var calls []Forward
		cfg := e.cfg("build")
		cfg.OnConnect = func(_ context.Context, _ *ssh.Client, fwd Forward, _ *Shell) error {
			calls = append(calls, fwd)
			if len(calls) == 1 {
				return errors.New("tmux is not installed")
			}
			return nil
		}
		r := run(t, cfg)
		st, _ := r.connected(0)
		retry, _ := r.wait(time.Second, 0, func(s Status) bool { return s.State == Retrying })
		// The status shows OnConnect's error as it is: the step is its to name.
		if wait, why, _ := strings.Cut(retry.String(), ": "); !strings.HasPrefix(wait, "retrying in ") || why != "tmux is not installed" {
			t.Errorf("status %q, want \"retrying in …: tmux is not installed\"", retry)
		}
		if len(calls) != 2 || calls[0].Addr != calls[1].Addr || st.Addr != calls[1].Addr {
			t.Errorf("OnConnect saw %+v, then connected on %s; want the same address twice", calls, st.Addr)
		}
	})
	t.Run("Permanent fails", func(t *testing.T) {
		cfg := e.cfg("build")
		cfg.OnConnect = func(context.Context, *ssh.Client, Forward, *Shell) error {
			return Permanent(errors.New("the host's home is mounted noexec"))
		}
		err := run(t, cfg).failed()
		if got := err.Error(); got != "the host's home is mounted noexec" {
			t.Errorf("err = %q", got)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	// A Config that cannot work: Run returns at once.
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no host", Config{Target: echoServer(t)}, "Config.Host is empty"},
		{"no target", Config{Host: "build"}, "Config.Target is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.cfg)
			err := c.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error saying %q", err, tc.want)
			}
			if s := c.Status(); s.State != Failed || s.String() != "failed: "+err.Error() {
				t.Errorf("Status = %q", s)
			}
		})
	}
	// A host ssh could not take either: failed, until a file changes or Retry.
	t.Run("an option for a host", func(t *testing.T) {
		r := run(t, Config{Host: "-oProxyCommand=x", Target: echoServer(t), UserConfig: None, SystemConfig: None})
		err := r.failed()
		if !strings.Contains(err.Error(), "not a host name") {
			t.Fatalf("failed with %v, want it to say %q", err, "not a host name")
		}
		if s := r.c.Status(); s.String() != "failed: "+err.Error() {
			t.Errorf("Status = %q", s)
		}
	})
}

// TestOnConnectShell: OnConnect is lent the connect's sh on the host, which runs a command with
// the environment the user's start-up files made, its stdin /dev/null (a command that reads
// stdin does not eat what the shell is sent next), one line at a time; once OnConnect has
// returned the loan is over and that sh is gone from the host.
func TestOnConnectShell(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := e.startBuild()
	if err := os.WriteFile(filepath.Join(srv.Home, ".bashrc"), []byte("echo 'Welcome'\nexport KRAD_FROM_BASHRC=yes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		out, stdin []byte
		errs       []error
		lent       *Shell
	}
	got := make(chan seen, 1)
	cfg := e.cfg("build")
	cfg.OnConnect = func(ctx context.Context, _ *ssh.Client, _ Forward, sh *Shell) error {
		var s seen
		var err error
		s.lent = sh
		s.out, err = sh.Run(ctx, `echo "pid $$ var ${KRAD_FROM_BASHRC:-}"`)
		s.errs = append(s.errs, err)
		s.stdin, err = sh.Run(ctx, "cat; echo read")
		s.errs = append(s.errs, err)
		_, err = sh.Run(ctx, "echo a\necho b")
		s.errs = append(s.errs, err)
		got <- s
		return nil
	}
	r := run(t, cfg)
	r.connected(0)
	s := <-got
	if s.errs[0] != nil || s.errs[1] != nil {
		t.Fatalf("Run: %v", s.errs)
	}
	var pid int
	var v string
	if _, err := fmt.Sscanf(string(s.out), "pid %d var %s", &pid, &v); err != nil || v != "yes" {
		t.Fatalf("the shell printed %q, want its pid and the variable ~/.bashrc exported", s.out)
	}
	if string(s.stdin) != "read\n" {
		t.Errorf("cat in the shell read %q before its end, want nothing (stdin /dev/null)", s.stdin)
	}
	if s.errs[2] == nil || !strings.Contains(s.errs[2].Error(), "not one line") {
		t.Errorf("a command of two lines: got %v, want it refused", s.errs[2])
	}
	if _, err := s.lent.Run(context.Background(), "echo late"); err == nil || !strings.Contains(err.Error(), "no longer lent") {
		t.Errorf("Run after OnConnect returned: got %v, want an error", err)
	}
	// The host's sshd runs here: the sh that was lent is gone from it once connected.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connect's sh (pid %d) still runs on the host after OnConnect returned", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOnConnectShellKept: OnConnect keeps the connect's sh, and a command exec'd in it later
// takes its place: the same process on the host (no session of its own), whose stdin and stdout
// the caller then has. A line written once the command has printed is the command's to read,
// not sh's to run; its stderr holds what it printed there, not what the shell printed before.
// The shell runs nothing after OnConnect returned, and a second Exec is refused.
func TestOnConnectShellKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := e.startBuild()
	kept := make(chan *Shell, 1)
	pids := make(chan int, 1)
	cfg := e.cfg("build")
	cfg.OnConnect = func(ctx context.Context, _ *ssh.Client, _ Forward, sh *Shell) error {
		out, err := sh.Run(ctx, `echo "$$"; echo 'the shell speaks' >&2`)
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return err
		}
		pids <- pid
		sh.Keep()
		kept <- sh
		return nil
	}
	r := run(t, cfg)
	r.connected(0)
	sh, pid := <-kept, <-pids
	if _, err := sh.Run(context.Background(), "echo late"); err == nil {
		t.Error("Run on the kept shell after OnConnect returned: got no error")
	}
	stdin, stdout, sess, stderr, err := sh.Exec(`sh -c 'echo "pid $$"; echo "the command speaks" >&2; while read -r l; do echo "got $l"; done'`)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	lines := bufio.NewReader(stdout)
	line := func() string {
		t.Helper()
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("read the command's stdout: %v (stderr %q)", err, stderr.String())
		}
		return strings.TrimSuffix(l, "\n")
	}
	if got, want := line(), fmt.Sprintf("pid %d", pid); got != want {
		t.Fatalf("the command printed %q first, want %q: the kept shell's own process", got, want)
	}
	if _, err := io.WriteString(stdin, "$(touch pwned); exit\n"); err != nil {
		t.Fatal(err)
	}
	if got := line(); got != "got $(touch pwned); exit" {
		t.Errorf("the command read %q, want the line as it was written", got)
	}
	if _, _, _, _, err := sh.Exec("echo again"); err == nil {
		t.Error("a second Exec: got no error")
	}
	stdin.Close()
	if _, err := lines.ReadString('\n'); err != io.EOF {
		t.Errorf("after its stdin closed, the command's stdout gave %v, want its end", err)
	}
	// The stderr stream is copied on its own: whole once the session has ended, not when stdout did.
	if err := sess.Wait(); err != nil {
		t.Errorf("the command's session ended with %v, want its exit 0", err)
	}
	if got := stderr.String(); !strings.Contains(got, "the command speaks") || strings.Contains(got, "the shell speaks") {
		t.Errorf("the command's stderr is %q, want its own words and not the shell's", got)
	}
	if _, err := os.Stat(filepath.Join(srv.Home, "pwned")); err == nil {
		t.Error("the line written to the command ran as shell code")
	}
}
