//go:build e2e

package scenarios_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/krad-ade/krad/e2e"
	"github.com/krad-ade/krad/kradtest/screentest"
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
// hosts reach. It returns the URL to push to, and the repository's folder.
func gitHTTPServer(t *testing.T, addr, password string) (url, bare string) {
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
	return "http://me@" + ln.Addr().String() + "/r.git", filepath.Join(root, "r.git")
}

// gitOut runs git on this machine and returns its output, trimmed.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

const httpPassword = "e2e-Http-Pa55word-in-the-ui"

// TestGitPushOverHTTPFromAContainerHost: git push in a terminal on a container host, to a git
// server on this machine's side of the host's network with basic auth: git asks the host's
// krad-ade-askpass (GIT_ASKPASS, set by the app there), which reaches the app through the host's
// forward as the Git caller of environment a; the app runs headless, so the push fails at once
// with the hint on the host's screen, and the app's log says who asked. Then the app runs with its
// UI: the person answers in the modal (tmux send-keys), which says a:1 on a asks, and the push
// goes through; a wrong answer fails it; the password is on no screen, in no log, and in no
// process's argv or environment on the host.
func TestGitPushOverHTTPFromAContainerHost(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 51, singleOptions{dir: "~/app", before: hostRepo(t)})
	url, bare := gitHTTPServer(t, s.lan.Addr(1).String(), httpPassword)
	s.lead.waitForShell(t, 30*time.Second)
	began := time.Now()
	out, rc := s.lead.run(t, "cd ~/app && GIT_TERMINAL_PROMPT=0 git push "+url+" main", time.Minute)
	took := time.Since(began)
	if rc == 0 || !strings.Contains(out, "no one can answer git's prompt: the app runs headless") || !strings.Contains(out, "credential.helper") {
		t.Errorf("git push on the host, the app headless: exit %d, want a failure with the hint:\n%s", rc, out)
	}
	t.Logf("measured: the headless push failed on the host in %v", took)
	s.app.logHas(10*time.Second, "git's prompt refused: the app runs headless", `from="Git a"`, "terminal=1", "kind=password")

	// In the UI: the person answers in the modal, and the push goes through.
	sc := s.inTheUI(t)
	push := "cd ~/app && GIT_TERMINAL_PROMPT=0 git push " + url + " main"
	typeMarked(t, s.lead, push, "PUSH1")
	answer(t, sc, "git", "Password for '"+strings.TrimSuffix(url, "/r.git")+"':", httpPassword)
	if code := waitMarked(t, s.lead, "PUSH1", time.Minute); code != 0 {
		t.Fatalf("git push on the host, answered in the UI, exited %d:\n%s", code, s.lead.screen(t))
	}
	if got, want := gitOut(t, bare, "rev-parse", "main"), strings.TrimSpace(s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "rev-parse", "HEAD")); got != want {
		t.Errorf("the server's main is %s, not the host's commit %s", got, want)
	}
	// A wrong answer fails the push.
	s.a.ExecAs(t, "krad", "sh", "-c", "cd ~/app && echo more > more.txt && git add . && git commit -q -m more")
	typeMarked(t, s.lead, push, "PUSH2")
	answer(t, sc, "git", "Password for", "not-the-password")
	if code := waitMarked(t, s.lead, "PUSH2", time.Minute); code == 0 {
		t.Error("git push with a wrong answer in the UI succeeded")
	}
	nowhere(t, s, sc, httpPassword)
}

const pushPassword = "e2e-Push-Pa55word-for-krad-push"

// TestPushAndPullRequestFromAContainerHost: krad push and krad pr, typed by the lead in its
// terminal on a container host, for a group there whose worker committed: the app's own git on
// the host pushes krad/ship to the repository's origin, a git server with basic auth on this
// machine's side of the network, and asks its password through the app: the person answers in
// the modal, which says it is the app's own git on a that asks. Then a pull request, with the
// host's gh (a script the test writes there that records its arguments and where it ran), run in
// the group's checkout on the host; then with no gh on the host, unavailable with the install
// hint and nothing pushed. The password is on no screen, in no log, in no process on the host.
func TestPushAndPullRequestFromAContainerHost(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 57, singleOptions{dir: "~/app", before: hostRepo(t)})
	url, bare := gitHTTPServer(t, s.lan.Addr(1).String(), pushPassword)
	s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "remote", "add", "origin", url)
	const prURL = "https://github.com/me/app/pull/57"
	s.a.WriteFile(t, "/usr/local/bin/gh", []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > /tmp/gh.args\npwd > /tmp/gh.pwd\n"+
		"echo 'Creating pull request'\necho "+prURL+"\n"), 0o755, "root")
	sc := s.inTheUI(t)
	lead := s.lead
	lead.waitForShell(t, 30*time.Second)

	lead.mustRun(t, `krad spawn --group ship --title w -- sh -c 'echo shipped > s.txt && git add s.txt && git -c user.name=w -c user.email=w@x commit -qm ship; sleep 600'`)
	tip := func() string {
		return strings.TrimSpace(s.a.ExecAs(t, "krad", "sh", "-c", "git -C ~/app log -1 --format=%s krad/ship 2>/dev/null; git -C ~/app rev-parse krad/ship"))
	}
	var head string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if subject, h, ok := strings.Cut(tip(), "\n"); ok && subject == "ship" {
			head = h
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's commit is not on krad/ship a minute on: %q", tip())
		}
	}

	typeMarked(t, lead, "krad push ship", "PUSH1")
	answerAs(t, sc, "git in the app's own git, on a, asks:", "Password for '"+strings.TrimSuffix(url, "/r.git")+"':", pushPassword)
	if code := waitMarked(t, lead, "PUSH1", time.Minute); code != 0 {
		t.Fatalf("krad push ship on the host, answered in the UI, exited %d:\n%s", code, lead.screen(t))
	}
	if got := gitOut(t, bare, "rev-parse", "refs/heads/krad/ship"); got != head {
		t.Errorf("the server's krad/ship is %s, not the host's %s", got, head)
	}

	typeMarked(t, lead, "krad pr ship --title 'Ship it' --draft", "PR1")
	answerAs(t, sc, "git in the app's own git, on a, asks:", "Password for", pushPassword)
	if code := waitMarked(t, lead, "PR1", time.Minute); code != 0 || !strings.Contains(lead.screen(t), prURL) {
		t.Fatalf("krad pr ship exited %d, want 0 and the pull request's address:\n%s", code, lead.screen(t))
	}
	args := s.a.ExecAs(t, "krad", "cat", "/tmp/gh.args")
	for _, want := range []string{"pr\ncreate\n", "--head=krad/ship\n", "--base=main\n", "--title=Ship it\n", "--draft\n"} {
		if !strings.Contains(args, want) {
			t.Errorf("gh ran with %q, want %q among its arguments", args, want)
		}
	}
	dir := strings.TrimSpace(s.a.ExecAs(t, "krad", "sh", "-c", "ls -d ~/.krad-ade/worktrees/app-*/ship"))
	if where := strings.TrimSpace(s.a.ExecAs(t, "krad", "cat", "/tmp/gh.pwd")); where != dir {
		t.Errorf("gh ran in %s, want the group's checkout on the host, %s", where, dir)
	}

	// No gh on the host: unavailable, with the install hint, and no push (no prompt).
	s.a.ExecAs(t, "root", "rm", "/usr/local/bin/gh")
	s.a.ExecAs(t, "krad", "sh", "-c", `cd "$1" && echo again > s.txt && git -c user.name=w -c user.email=w@x commit -qam again`, "sh", dir)
	out, rc := lead.run(t, "krad pr ship", time.Minute)
	if rc == 0 || !strings.Contains(out, "unavailable") || !strings.Contains(out, "cli.github.com") {
		t.Errorf("krad pr ship with no gh on the host exited %d, want unavailable with the install hint:\n%s", rc, out)
	}
	if got := gitOut(t, bare, "rev-parse", "refs/heads/krad/ship"); got != head {
		t.Errorf("krad pr without gh pushed: the server's krad/ship is %s, want %s still", got, head)
	}
	nowhere(t, s, sc, pushPassword)
}

const keyPassphrase = "e2e-Key-Passphrase-in-the-ui"

// TestGitPushOverSSHFromAContainerHost: git push over SSH in a terminal on a container host, with
// a key encrypted there and no agent, to another host of the network: with [git] ssh_askpass, ssh
// asks the key's passphrase through the host's krad-ade-askpass (SSH_ASKPASS,
// SSH_ASKPASS_REQUIRE=force), which reaches the app as the Git caller of environment a; headless,
// at once with the hint, and the push fails. With the UI, the person gives the passphrase in the
// modal and the push reaches b; the passphrase is nowhere else.
func TestGitPushOverSSHFromAContainerHost(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 56, singleOptions{dir: "~/app", before: hostRepo(t), config: "[git]\nssh_askpass = true\n"})
	b := e2e.StartHost(t, "b", s.lan, s.lan.Addr(12), e2e.HostOptions{})
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "on-a", []byte(keyPassphrase))
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
	push := "unset SSH_AUTH_SOCK; cd ~/app && GIT_SSH_COMMAND='ssh -i ~/.ssh/id_encrypted -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes' git push krad@" + baddr + ":r.git main"
	out, rc := s.lead.run(t, push, time.Minute)
	took := time.Since(began)
	if rc == 0 || !strings.Contains(out, "no one can answer git's prompt: the app runs headless") || strings.Contains(out, "Enter passphrase") {
		t.Errorf("git push over SSH on the host, the app headless: exit %d, want a failure with the hint, and no prompt on the screen:\n%s", rc, out)
	}
	t.Logf("measured: the headless push over SSH failed on the host in %v", took)
	s.app.logHas(10*time.Second, "git's prompt refused: the app runs headless", `from="Git a"`, "terminal=1", "kind=passphrase")
	serverMain := func() string {
		return strings.TrimSpace(b.ExecAs(t, "krad", "sh", "-c", "git -C /home/krad/r.git rev-parse --verify -q main || echo none"))
	}
	if got := serverMain(); got != "none" {
		t.Errorf("the server has main %s: something pushed", got)
	}

	// In the UI: the person gives the passphrase in the modal, and the push goes through.
	sc := s.inTheUI(t)
	typeMarked(t, s.lead, push, "PUSH1")
	answer(t, sc, "ssh", "Enter passphrase for key '/home/krad/.ssh/id_encrypted':", keyPassphrase)
	if code := waitMarked(t, s.lead, "PUSH1", time.Minute); code != 0 {
		t.Fatalf("git push over SSH on the host, the passphrase given in the UI, exited %d:\n%s", code, s.lead.screen(t))
	}
	if got, want := serverMain(), strings.TrimSpace(s.a.ExecAs(t, "krad", "git", "-C", "/home/krad/app", "rev-parse", "HEAD")); got != want {
		t.Errorf("host b's main is %s, not a's commit %s", got, want)
	}
	if strings.Contains(s.lead.screen(t), "Enter passphrase") {
		t.Error("ssh asked on the host's screen")
	}
	nowhere(t, s, sc, keyPassphrase)
}

// inTheUI stops s's headless app and starts krad-ade again as a person does, on a terminal (a pane
// of a tmux server of the test's own, screentest), for the same user: it returns the screen once
// the UI shows environment a up, with a:1 found again (the host's session outlived the first run).
// The test's end stops it.
func (s *single) inTheUI(t *testing.T) *screentest.Screen {
	t.Helper()
	s.app.stop(syscall.SIGTERM)
	env := append(s.u.env(), "TERM=xterm-256color", "XDG_STATE_HOME="+filepath.Join(s.u.home, "state"))
	// Stopped at the test's end as a person's kill would, or it would outlive the test (its
	// pane's tmux server is the test's, but krad-ade is a session leader of its own) and go on
	// trying to reach the test's containers, gone by then.
	sc := screentest.Start(t, filepath.Join(s.u.tmuxDir, "screen.sock"), 140, 40, env, []string{filepath.Join(s.u.bin, "krad-ade")}, screentest.StopAtCleanup())
	sc.WaitFor(`(?m)^a +ssh a +connected: .* · tmux up`)
	s.lead = findTerminal(t, s.a, "a", "a:1", 30*time.Second)
	return sc
}

// answer waits for the UI's modal, checks who it says asked (program, in terminal a:1) and what,
// types answer (masked) and Enter.
func answer(t *testing.T, sc *screentest.Screen, program, asks, answer string) {
	t.Helper()
	answerAs(t, sc, program+" in terminal a:1, on a, asks:", asks, answer)
}

// answerAs is answer for the asker who, as the modal words it.
func answerAs(t *testing.T, sc *screentest.Screen, who, asks, answer string) {
	t.Helper()
	text, took := sc.WaitFor(`Git asks`)
	flat := strings.Join(strings.Fields(text), " ")
	if !strings.Contains(flat, who) || !strings.Contains(flat, asks) {
		t.Errorf("the modal does not say that %s, asking %q:\n%s", who, asks, text)
	}
	t.Logf("measured: the modal showed %v after the UI was first looked at", took)
	sc.Keys("-l", answer)
	sc.WaitFor(`\*{` + strconv.Itoa(len(answer)) + `}`)
	sc.Keys("Enter")
	sc.WaitGone("Git asks")
}

// typeMarked types cmd into terminal tm and an echo of marker=its exit status; waitMarked returns
// the status once the screen shows it. The marker is typed split, so that only the echo matches.
func typeMarked(t *testing.T, tm *term, cmd, marker string) {
	t.Helper()
	tm.typeLine(t, cmd+"; echo "+marker[:2]+`""`+marker[2:]+"=$?")
}

func waitMarked(t *testing.T, tm *term, marker string, d time.Duration) int {
	t.Helper()
	rx := regexp.MustCompile(regexp.QuoteMeta(marker) + `=(\d+)`)
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		screen := tm.screen(t)
		if m := rx.FindStringSubmatch(screen); m != nil {
			code, _ := strconv.Atoi(m[1])
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s, terminal %s: %s did not finish within %v:\n%s", tm.h.Name, tm.id, marker, d, screen)
		}
	}
}

// nowhere checks that secret is on no screen the person or Read saw, in no log of the app, and in
// no process's argv or environment on host.
func nowhere(t *testing.T, s *single, sc *screentest.Screen, secret string) {
	t.Helper()
	if strings.Contains(s.lead.screen(t), secret) || strings.Contains(sc.Seen(), secret) {
		t.Error("the secret is on a screen")
	}
	logged, _ := os.ReadFile(filepath.Join(s.u.home, "state", "krad-ade", "krad-ade.log"))
	if len(logged) == 0 || strings.Contains(string(logged), secret) || strings.Contains(s.app.Log.String(), secret) {
		t.Errorf("the app's log (%d bytes) holds the secret, or is not where it should be", len(logged))
	}
	// The secret goes to grep on its stdin, so that grep's own argv does not hold it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	grep := s.a.Command(ctx, "root", "sh", "-c", "grep -l -F -f /dev/stdin /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null || true")
	grep.Stdin = strings.NewReader(secret + "\n")
	out, err := grep.Output()
	if err != nil {
		t.Fatalf("grep the host's processes: %v", err)
	}
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("the secret is in %s on the host", out)
	}
}
