package app_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/gittest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/sshdtest"
	"golang.org/x/crypto/ssh"
)

const gitPassword = "s3cret-Pa55-for-askpass"

// gitServer serves a bare repository r.git over HTTP with basic auth (user me, password
// gitPassword): a real git server (gittest.Server).
func gitServer(t *testing.T) (url, bare string) { return gittest.Server(t, "me", gitPassword) }

// TestGitPushAskpass is the walk-through against real git over HTTP with basic auth: git
// push in an app terminal raises the prompt, which reaches the Prompter (the UI's stand-in), not
// the screen; the right answer pushes, a wrong one fails the push; the password is in no log,
// event, screen, argv or environment; headless, the push fails at once with the hint.
func TestGitPushAskpass(t *testing.T) {
	t.Parallel()
	url, bare := gitServer(t)
	repo, _, withRepo := withRepo(t)
	var logs syncBuffer
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) {
		c.Askpass = true
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var mu sync.Mutex
	answer := gitPassword
	p := newTestPrompter(func(app.Prompt) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return answer, nil
	})
	h.app.SetPrompter(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.events(ctx)
	var seen bytes.Buffer
	var evMu sync.Mutex
	go func() {
		for a := range events {
			b, _ := json.Marshal(a)
			evMu.Lock()
			seen.Write(b)
			evMu.Unlock()
		}
	}()

	c := h.as(1)
	remote := strings.Replace(url, "http://", "http://me@", 1) + "/r.git"
	run := func(marker, vars string) string {
		return h.typeAndWait(1, "cd "+repo+" && "+vars+"git push "+remote+" main", marker)
	}

	screen := run("FIRST", "")
	if !strings.Contains(screen, "FIRST=0") {
		t.Fatalf("git push with the right answer failed:\n%s", screen)
	}
	if got := gitIn(t, bare, "rev-parse", "main"); got != gitIn(t, repo, "rev-parse", "HEAD") {
		t.Errorf("the server's main is %s, not the pushed commit", got)
	}
	select {
	case pr := <-p.started:
		if !strings.HasPrefix(pr.Text, "Password for 'http://me@127.0.0.1:") || pr.Kind != api.AskPassword || pr.Terminal != 1 {
			t.Errorf("the Prompter was shown %+v", pr)
		}
	default:
		t.Error("the push did not raise a prompt")
	}

	// A wrong answer fails the push.
	mu.Lock()
	answer = "wrong"
	mu.Unlock()
	if err := os.WriteFile(filepath.Join(repo, "more.txt"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "more")
	if screen := run("SECOND", ""); strings.Contains(screen, "SECOND=0") {
		t.Errorf("git push with a wrong answer succeeded:\n%s", screen)
	}

	// Headless: krad-ade-askpass fails at once, with the hint on the person's screen. (git then
	// asks in the terminal itself, unless GIT_TERMINAL_PROMPT=0: the person may answer there.)
	h.app.SetPrompter(nil)
	start := time.Now()
	screen = run("THIRD", "GIT_TERMINAL_PROMPT=0 ")
	if strings.Contains(screen, "THIRD=0") || !strings.Contains(screen, "credential.helper") {
		t.Errorf("git push headless: want a failure with the hint:\n%s", screen)
	}
	t.Logf("headless push failed in %v", time.Since(start))

	// The password is nowhere: screens, events, logs, argv and environments.
	for _, a := range h.agents(c) {
		if s := h.read(c, a.Terminal); strings.Contains(s, gitPassword) {
			t.Errorf("Read of terminal %d shows the password", a.Terminal)
		}
	}
	evMu.Lock()
	if strings.Contains(seen.String(), gitPassword) {
		t.Error("an event holds the password")
	}
	evMu.Unlock()
	if strings.Contains(logs.String(), gitPassword) {
		t.Error("the app's log holds the password")
	}
	// The log says who asked, and why a headless prompt failed.
	for _, want := range []string{`msg="git's prompt put to the person" from="Git main" terminal=1 host="this computer" kind=password`,
		`msg="git's prompt refused: the app runs headless, with no UI to ask in" from="Git main" terminal=1 kind=password`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the app's log lacks %s:\n%s", want, logs.String())
		}
	}
	if where := sweepProc(gitPassword); where != "" {
		t.Errorf("the password is in %s", where)
	}
}

// typeIn types text into terminal n of main, as a person would, and Enter.
func (h *harness) typeIn(n int, text string) {
	h.t.Helper()
	window := "main:" + h.window(n)
	if out, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", window, "-l", text).CombinedOutput(); err != nil {
		h.t.Fatalf("tmux send-keys: %v %s", err, out)
	}
	if out, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", window, "Enter").CombinedOutput(); err != nil {
		h.t.Fatalf("tmux send-keys: %v %s", err, out)
	}
}

// typeAndWait types command into terminal n, then an echo of marker=its exit status, and waits
// up to 60 s for the status: the screen once it shows. The marker is split where it is typed, so
// that only the echo's output matches it.
func (h *harness) typeAndWait(n int, command, marker string) string {
	h.t.Helper()
	h.typeIn(n, command+"; echo "+marker[:2]+`""`+marker[2:]+"=$?")
	return h.waitScreenWithin(h.as(n), n, marker+"=", 60*time.Second)
}

// exitIn is the exit status that typeAndWait's marker shows on screen.
func exitIn(screen, marker string) string {
	i := strings.LastIndex(screen, marker+"=")
	if i < 0 {
		return ""
	}
	rest := screen[i+len(marker)+1:]
	if j := strings.IndexAny(rest, " \n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// sweepProc looks for s in every readable /proc/*/cmdline and environ.
func sweepProc(s string) string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err == nil && bytes.Contains(b, []byte(s)) {
				return filepath.Join(d, f)
			}
		}
	}
	return ""
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const sshPassphrase = "key-Passphrase-for-ssh-askpass"

// sshGitServer is the test's sshd serving a bare repository over SSH to an ed25519 key encrypted
// with sshPassphrase, which no agent holds: the key's file, the URL to push to, the repository, and
// GIT_SSH_COMMAND for it (the test's known_hosts, that key only, no ssh_config).
func sshGitServer(t *testing.T) (key, url, bare, sshCommand string) {
	testbin.Need(t, "git", "git")
	testbin.Need(t, "ssh", "openssh-client")
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "askpass-test", []byte(sshPassphrase))
	if err != nil {
		t.Fatal(err)
	}
	key = filepath.Join(dir, "id_encrypted")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{key + ".pub"}})
	bare = filepath.Join(dir, "r.git")
	gitIn(t, dir, "init", "-q", "--bare", "-b", "main", bare)
	url = "ssh://" + srv.User + "@127.0.0.1:" + strconv.Itoa(srv.Port) + bare
	sshCommand = "ssh -F /dev/null -i " + key + " -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile=" + srv.KnownHosts + " -o StrictHostKeyChecking=yes"
	return key, url, bare, sshCommand
}

// TestGitPushAskpassSSH is the walk-through over SSH: git push in an app terminal to the test's
// sshd with a key encrypted and no agent; with [git] ssh_askpass the key's passphrase is asked
// through krad-ade-askpass (SSH_ASKPASS, SSH_ASKPASS_REQUIRE=force: the terminal has a TTY and no
// display), reaches the Prompter as a passphrase, not the screen; the right one pushes, a wrong one
// fails the push; the passphrase is in no Read, event, log, argv or environment. Without
// ssh_askpass the terminals get no SSH_ASKPASS.
func TestGitPushAskpassSSH(t *testing.T) {
	t.Parallel()
	key, url, bare, sshCommand := sshGitServer(t)
	repo, _, withRepo := withRepo(t)
	var logs syncBuffer
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) {
		c.Askpass, c.SSHAskpass = true, true
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var mu sync.Mutex
	answer := sshPassphrase
	p := newTestPrompter(func(app.Prompt) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return answer, nil
	})
	h.app.SetPrompter(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen syncBuffer
	go func() {
		for a := range h.events(ctx) {
			b, _ := json.Marshal(a)
			seen.Write(b)
		}
	}()

	// Neither an agent nor a display: only the askpass can answer.
	push := func(marker string) string {
		return h.typeAndWait(1, "cd "+repo+" && unset SSH_AUTH_SOCK DISPLAY; GIT_SSH_COMMAND='"+sshCommand+"' git push -q "+url+" main", marker)
	}
	screen := push("FIRST")
	if exitIn(screen, "FIRST") != "0" {
		t.Fatalf("git push over SSH with the right passphrase failed:\n%s", screen)
	}
	if got := gitIn(t, bare, "rev-parse", "main"); got != gitIn(t, repo, "rev-parse", "HEAD") {
		t.Errorf("the server's main is %s, not the pushed commit", got)
	}
	select {
	case pr := <-p.started:
		if pr.Text != "Enter passphrase for key '"+key+"': " || pr.Kind != api.AskPassphrase || pr.Terminal != 1 || pr.Environment != "main" {
			t.Errorf("the Prompter was shown %+v", pr)
		}
	default:
		t.Error("the push did not raise a prompt")
	}
	if strings.Contains(screen, "Enter passphrase") {
		t.Errorf("ssh asked on the terminal's screen:\n%s", screen)
	}

	// A wrong passphrase: ssh asks again, then gives the key up, and the push fails.
	mu.Lock()
	answer = "not-the-passphrase"
	mu.Unlock()
	if err := os.WriteFile(filepath.Join(repo, "more.txt"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "more")
	if screen := push("SECOND"); exitIn(screen, "SECOND") == "0" {
		t.Errorf("git push over SSH with a wrong passphrase succeeded:\n%s", screen)
	}
	if got := gitIn(t, bare, "rev-parse", "main"); got == gitIn(t, repo, "rev-parse", "HEAD") {
		t.Error("the wrong passphrase pushed")
	}

	for _, a := range h.agents(h.as(1)) {
		if s := h.read(h.as(1), a.Terminal); strings.Contains(s, sshPassphrase) {
			t.Errorf("Read of terminal %d shows the passphrase", a.Terminal)
		}
	}
	if strings.Contains(seen.String(), sshPassphrase) {
		t.Error("an event holds the passphrase")
	}
	if strings.Contains(logs.String(), sshPassphrase) {
		t.Error("the app's log holds the passphrase")
	}
	if where := sweepProc(sshPassphrase); where != "" {
		t.Errorf("the passphrase is in %s", where)
	}

	// Without [git] ssh_askpass: no SSH_ASKPASS in the terminals; GIT_ASKPASS still.
	h2 := start(t, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) { c.Askpass = true })
	env := h2.typeAndWait(1, `echo "ssh=[${SSH_ASKPASS-unset}] req=[${SSH_ASKPASS_REQUIRE-unset}] git=[$GIT_ASKPASS]"`, "ENV")
	if !strings.Contains(env, "ssh=[unset] req=[unset] git=["+testbin.Dir(t)+"/krad-ade-askpass]") {
		t.Errorf("a terminal without ssh_askpass:\n%s", env)
	}
}

// TestCredentialHelperFirst: git asks its credential helpers before its askpass: with a helper
// that has the password (git's own store), the push succeeds and the Prompter is never asked.
func TestCredentialHelperFirst(t *testing.T) {
	t.Parallel()
	url, bare := gitServer(t)
	repo, _, withRepo := withRepo(t)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) { c.Askpass = true })
	p := newTestPrompter(func(app.Prompt) (string, error) { return gitPassword, nil })
	h.app.SetPrompter(p)
	store := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(store, []byte(strings.Replace(url, "http://", "http://me:"+gitPassword+"@", 1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "config", "credential.helper", "store --file="+store)
	screen := h.typeAndWait(1, "cd "+repo+" && git push "+strings.Replace(url, "http://", "http://me@", 1)+"/r.git main", "PUSH")
	if exitIn(screen, "PUSH") != "0" {
		t.Fatalf("git push with a credential helper that has the password failed:\n%s", screen)
	}
	if got := gitIn(t, bare, "rev-parse", "main"); got != gitIn(t, repo, "rev-parse", "HEAD") {
		t.Errorf("the server's main is %s, not the pushed commit", got)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.shown) != 0 {
		t.Errorf("the Prompter was asked %+v though the credential helper answered", p.shown)
	}
}

// credentialFilter makes repo's files *.dat pass through a smudge filter that needs a credential,
// as Git LFS's does during a checkout: it asks git (git credential fill, git's own prompting: the
// helpers, then GIT_ASKPASS) for https://lfs.example.com and writes the password it got to the
// file it returns. The filter is required: without the credential the checkout fails.
func credentialFilter(t *testing.T, repo string) (got string) {
	dir := t.TempDir()
	got = filepath.Join(dir, "got")
	filter := filepath.Join(dir, "smudge")
	script := "#!/bin/sh\nprintf 'protocol=https\\nhost=lfs.example.com\\n\\n' | git credential fill > " + got + ".tmp || exit 1\nmv " + got + ".tmp " + got + "\nexec cat\n"
	if err := os.WriteFile(filter, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "config", "filter.creds.smudge", filter)
	gitIn(t, repo, "config", "filter.creds.clean", "cat")
	gitIn(t, repo, "config", "filter.creds.required", "true")
	if err := os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.dat filter=creds\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "big.dat"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "data behind a filter")
	return got
}

// TestAppsOwnGitAsks: a git the app runs itself (git worktree add, for CreateWorktree) whose
// filter needs a credential asks the person through krad-ade-askpass as the Git caller of main,
// terminal 0: the Prompter is shown git's questions (username, then password) as the app's own;
// the answers reach the filter and the group is made. Headless, the group fails at once with the
// hint in git's words; with the user's own askpass (Askpass off) the app's git gets none of its
// own: nothing reaches the Prompter.
func TestAppsOwnGitAsks(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null") // no helper of this machine's user answers
	repo, _, withRepo := withRepo(t)
	got := credentialFilter(t, repo)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) { c.Askpass = true })
	p := newTestPrompter(func(pr app.Prompt) (string, error) {
		if pr.Kind == api.AskUsername {
			return "me", nil
		}
		return gitPassword, nil
	})
	h.app.SetPrompter(p)
	c := h.as(1)

	var g struct{ Dir string }
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "asks"}, api.AnswerWorktree, &g); err != nil {
		t.Fatalf("CreateWorktree whose checkout needs a credential: %v", err)
	}
	if b, _ := os.ReadFile(got); !strings.Contains(string(b), "\nusername=me\npassword="+gitPassword+"\n") {
		t.Errorf("the filter got %q, want the password the person gave", b)
	}
	if b, err := os.ReadFile(filepath.Join(g.Dir, "big.dat")); err != nil || string(b) != "data\n" {
		t.Errorf("the group's big.dat: %q, %v", b, err)
	}
	p.mu.Lock()
	shown := append([]app.Prompt(nil), p.shown...)
	p.mu.Unlock()
	if len(shown) != 2 || shown[0].Kind != api.AskUsername || shown[1].Kind != api.AskPassword {
		t.Fatalf("the Prompter was shown %+v, want git's username and password questions", shown)
	}
	for _, pr := range shown {
		if pr.Environment != "main" || pr.Terminal != 0 || pr.Host != "this computer" || !strings.Contains(pr.Text, "https://") {
			t.Errorf("the Prompter was shown %+v, want the app's own git (main, terminal 0) on this computer", pr)
		}
	}
	if where := sweepProc(gitPassword); where != "" {
		t.Errorf("the password is in %s", where)
	}

	// Headless: at once. (The hint krad-ade-askpass prints comes before git's own lines, and the
	// end of git's stderr that the error keeps is theirs.)
	h.app.SetPrompter(nil)
	os.Remove(got)
	began := time.Now()
	err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "headless"}, api.AnswerWorktree, &g)
	if err == nil || !strings.Contains(err.Error(), "unable to read askpass response from '"+testbin.Dir(t)+"/krad-ade-askpass'") {
		t.Errorf("CreateWorktree headless: %v, want a failure of the app's askpass", err)
	}
	t.Logf("measured: headless, the group failed in %v", time.Since(began))

	// The user's own askpass: the app's git gets no GIT_ASKPASS, and nothing reaches the Prompter.
	h2 := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}))
	p2 := newTestPrompter(func(app.Prompt) (string, error) { return "x", nil })
	h2.app.SetPrompter(p2)
	err = h2.decode(h2.as(1), api.CreateWorktree, &api.CreateWorktreeBody{Name: "own"}, api.AnswerWorktree, &g)
	if err == nil || !strings.Contains(err.Error(), "terminal prompts disabled") {
		t.Errorf("CreateWorktree without the app's askpass: %v, want git's own failure", err)
	}
	p2.mu.Lock()
	defer p2.mu.Unlock()
	if len(p2.shown) != 0 {
		t.Errorf("the Prompter was asked %+v", p2.shown)
	}
}
