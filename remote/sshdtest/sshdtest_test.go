package sshdtest_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/remote/sshdtest"
)

// output runs cmd in a session of c.
func output(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := sess.Output(cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSpace(string(out))
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t, sshdtest.Options{HostKeyTypes: []string{"ed25519", "ecdsa"}})
	b, err := os.ReadFile(s.KnownHosts)
	if want := s.KnownHostsLine(0) + "\n" + s.KnownHostsLine(1) + "\n"; err != nil || string(b) != want {
		t.Errorf("known_hosts = %q, want %q", b, want)
	}
	if len(s.HostKeys) != 2 || s.HostKeys[0].Type() != ssh.KeyAlgoED25519 || s.HostKeys[1].Type() != ssh.KeyAlgoECDSA256 {
		t.Errorf("host keys %v, want ed25519 then ecdsa", s.HostKeys)
	}
	c := s.Dial(t)
	if got := output(t, c, "echo $HOME"); got != s.Home {
		t.Errorf("HOME = %q, want %q", got, s.Home)
	}
	if len(s.Sessions()) != 1 {
		t.Errorf("sessions %v, want one", s.Sessions())
	}

	pid := s.PID()
	s.Kill()
	if _, err := c.NewSession(); err == nil {
		t.Error("a session opened after Kill")
	}
	if _, err := ssh.Dial("tcp", s.Addr, s.Config()); err == nil {
		t.Error("logged in after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == pid {
		t.Errorf("PID %d after Restart, want a new one", pid)
	}
	if got := output(t, s.Dial(t), "echo hello"); got != "hello" {
		t.Errorf("after Restart: %q, want hello", got)
	}
}

// Config lines override the usual ones; Env goes beside HOME; AuthorizedKeys keep their options.
func TestOptions(t *testing.T) {
	t.Parallel()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ak := filepath.Join(t.TempDir(), "authorized_keys")
	line := `command="echo forced" ` + string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	if err := os.WriteFile(ak, []byte(strings.TrimSuffix(line, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sshdtest.Start(t, sshdtest.Options{Config: []string{"LogLevel DEBUG1"}, Env: []string{"KRAD_TEST=first"}, AuthorizedKeys: []string{ak}})
	if got := output(t, s.Dial(t), "echo $KRAD_TEST $HOME"); got != "first "+s.Home {
		t.Errorf("KRAD_TEST and HOME = %q, want first and %s", got, s.Home)
	}
	if !strings.Contains(s.Log(), "debug1: ") {
		t.Errorf("sshd's log has no debug1 line: the test's LogLevel did not override VERBOSE\n%s", s.Log())
	}
	cfg := s.Config()
	cfg.Auth = []ssh.AuthMethod{ssh.PublicKeys(signer)}
	c, err := ssh.Dial("tcp", s.Addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := output(t, c, "echo free"); got != "forced" {
		t.Errorf("the authorized key's command: got %q, want forced", got)
	}
}
