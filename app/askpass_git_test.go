package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/internal/testbin"
)

const gitPassword = "s3cret-Pa55-for-askpass"

// gitServer serves bare repositories of a folder over HTTP with basic auth (user me, password
// gitPassword), through git's own http-backend behind net/http/cgi: a real git server.
func gitServer(t *testing.T) (url, bare string) {
	testbin.Need(t, "git", "git")
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	cgiPath := filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend")
	if _, err := os.Stat(cgiPath); err != nil {
		t.Skipf("git-http-backend is not installed: %v", err)
	}
	root := t.TempDir()
	bare = filepath.Join(root, "r.git")
	gitIn(t, root, "init", "-q", "--bare", "-b", "main", bare)
	gitIn(t, bare, "config", "http.receivepack", "true")
	h := &cgi.Handler{Path: cgiPath, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != gitPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, bare
}

// TestGitPushAskpass is the walk-through against real git over HTTP with basic auth: git
// push in an app terminal raises the prompt, which reaches the Prompter (the UI's stand-in), not
// the screen; the right answer pushes, a wrong one fails the push; the password is in no log,
// event, screen, argv or environment; headless, the push fails at once with the hint.
func TestGitPushAskpass(t *testing.T) {
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
	typeIn := func(text string) {
		out, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", "main:"+h.window(1), "-l", text).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux send-keys: %v %s", err, out)
		}
		if out, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", "main:"+h.window(1), "Enter").CombinedOutput(); err != nil {
			t.Fatalf("tmux send-keys: %v %s", err, out)
		}
	}
	run := func(marker, vars string) string {
		// The marker is split where it is typed, so that only git's exit status matches it.
		typeIn("cd " + repo + " && " + vars + "git push " + remote + " main; echo " + marker[:2] + `""` + marker[2:] + "=$?")
		return h.waitScreen(c, 1, marker+"=")
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
	if where := sweepProc(gitPassword); where != "" {
		t.Errorf("the password is in %s", where)
	}
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
