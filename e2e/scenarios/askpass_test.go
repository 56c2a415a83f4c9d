//go:build e2e

package scenarios_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/e2e"
)

// hostRepo is the `before` of a scenario whose host a has a repository at ~/app with one commit.
func hostRepo(t *testing.T) func(*e2e.Host) {
	return func(h *e2e.Host) {
		h.ExecAs(t, "krad", "sh", "-c", `set -e; mkdir ~/app; cd ~/app; git init -q -b main
git config user.name Pat; git config user.email pat@example.com
printf 'package retry\n' > retry.go; git add .; git commit -q -m first`)
	}
}

// gitHTTPServer serves a bare repository r.git over HTTP with basic auth (me, password) on addr,
// this machine's side of a test network, through git's own http-backend: a real git server the
// hosts reach.
func gitHTTPServer(t *testing.T, addr, password string) string {
	t.Helper()
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git-http-backend: %v", err)
	}
	root := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", filepath.Join(root, "r.git")}, {"-C", filepath.Join(root, "r.git"), "config", "http.receivepack", "true"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://me@" + ln.Addr().String() + "/r.git"
}

// TestGitPushOverHTTPFromAContainerHost: git push in a terminal on a container host, to a git
// server on this machine's side of the host's network with basic auth: git asks the host's
// krad-ade-askpass (GIT_ASKPASS, set by the app there), which reaches the app through the host's
// forward as the Git caller of environment a; the app runs headless, so the push fails at once
// with the hint on the host's screen, and the app's log says who asked.
func TestGitPushOverHTTPFromAContainerHost(t *testing.T) {
	s := oneHost(t, 51, singleOptions{dir: "~/app", before: hostRepo(t)})
	url := gitHTTPServer(t, s.lan.Addr(1).String(), "never-typed")
	s.lead.waitForShell(t, 30*time.Second)
	began := time.Now()
	out, rc := s.lead.run(t, "cd ~/app && GIT_TERMINAL_PROMPT=0 git push "+url+" main", time.Minute)
	took := time.Since(began)
	if rc == 0 || !strings.Contains(out, "no one can answer git's prompt: the app runs headless") || !strings.Contains(out, "credential.helper") {
		t.Errorf("git push on the host, the app headless: exit %d, want a failure with the hint:\n%s", rc, out)
	}
	t.Logf("measured: the headless push failed on the host in %v", took)
	s.app.logHas(10*time.Second, "git's prompt refused: the app runs headless", `from="Git a"`, "terminal=1", "kind=password")
}

// TestGitPushOverSSHFromAContainerHost: git push over SSH in a terminal on a container host, with
// a key encrypted there and no agent, to another host of the network: with [git] ssh_askpass, ssh
// asks the key's passphrase through the host's krad-ade-askpass (SSH_ASKPASS,
// SSH_ASKPASS_REQUIRE=force), which reaches the app as the Git caller of environment a; headless,
// at once with the hint, and the push fails.
func TestGitPushOverSSHFromAContainerHost(t *testing.T) {
	s := oneHost(t, 56, singleOptions{dir: "~/app", before: hostRepo(t), config: "[git]\nssh_askpass = true\n"})
	b := e2e.StartHost(t, "b", s.lan, s.lan.Addr(12), e2e.HostOptions{})
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "on-a", []byte("never-typed-passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteFile(t, "/etc/ssh/authorized_keys/krad", ssh.MarshalAuthorizedKey(sp), 0o644, "root")
	b.ExecAs(t, "krad", "git", "init", "-q", "--bare", "-b", "main", "/home/krad/r.git")
	baddr := s.lan.Addr(12).String()
	s.a.ExecAs(t, "krad", "mkdir", "-p", "-m", "700", "/home/krad/.ssh")
	s.a.WriteFile(t, "/home/krad/.ssh/id_encrypted", pem.EncodeToMemory(block), 0o600, "krad")
	s.a.WriteFile(t, "/home/krad/.ssh/known_hosts", []byte(b.KnownHosts(baddr)), 0o600, "krad")

	s.lead.waitForShell(t, 30*time.Second)
	vars := s.lead.mustRun(t, `echo "S=$SSH_ASKPASS R=$SSH_ASKPASS_REQUIRE"`)
	if !strings.Contains(vars, "/krad-ade-askpass R=force") {
		t.Errorf("the host's terminal: %q, want SSH_ASKPASS the installed krad-ade-askpass and SSH_ASKPASS_REQUIRE=force", vars)
	}
	began := time.Now()
	out, rc := s.lead.run(t, "unset SSH_AUTH_SOCK; cd ~/app && GIT_SSH_COMMAND='ssh -i ~/.ssh/id_encrypted -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes' git push krad@"+baddr+":r.git main", time.Minute)
	took := time.Since(began)
	if rc == 0 || !strings.Contains(out, "no one can answer git's prompt: the app runs headless") || strings.Contains(out, "Enter passphrase") {
		t.Errorf("git push over SSH on the host, the app headless: exit %d, want a failure with the hint, and no prompt on the screen:\n%s", rc, out)
	}
	t.Logf("measured: the headless push over SSH failed on the host in %v", took)
	s.app.logHas(10*time.Second, "git's prompt refused: the app runs headless", `from="Git a"`, "terminal=1", "kind=passphrase")
	if got := strings.TrimSpace(b.ExecAs(t, "krad", "sh", "-c", "git -C /home/krad/r.git rev-parse --verify -q main || echo none")); got != "none" {
		t.Errorf("the server has main %s: something pushed", got)
	}
}
