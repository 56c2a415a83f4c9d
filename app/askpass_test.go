package app_test

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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// testPrompter stands in for the UI's modal: it records the prompts it is shown and answers each
// with what answer returns, or refuses when it returns an error. block holds every prompt until
// ctx ends, as a person who never answers.
type testPrompter struct {
	mu      sync.Mutex
	shown   []app.Prompt
	answer  func(app.Prompt) (string, error)
	block   bool
	gone    chan app.Prompt // prompts whose ctx ended
	started chan app.Prompt
}

func newTestPrompter(answer func(app.Prompt) (string, error)) *testPrompter {
	return &testPrompter{answer: answer, gone: make(chan app.Prompt, 16), started: make(chan app.Prompt, 16)}
}

func (p *testPrompter) Ask(ctx context.Context, pr app.Prompt) (api.Secret, error) {
	p.mu.Lock()
	p.shown = append(p.shown, pr)
	p.mu.Unlock()
	select {
	case p.started <- pr:
	default: // a benchmark, which reads none
	}
	if p.block {
		<-ctx.Done()
		p.gone <- pr
		return api.Secret{}, ctx.Err()
	}
	s, err := p.answer(pr)
	if err != nil {
		return api.Secret{}, err
	}
	return api.NewSecret(s), nil
}

func (h *harness) asGit(env string) *api.Client {
	return &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: api.Caller{Kind: api.CallerGit, Environment: env}}
}

// askpass asks as krad-ade-askpass does: polls until an answer.
func (h *harness) askpass(ctx context.Context, env string, b api.AskpassBody) (api.Secret, error) {
	c := h.asGit(env)
	for {
		a, err := c.Call(ctx, api.NewRequest(api.Askpass, &b))
		if err != nil {
			return api.Secret{}, err
		}
		var ans api.AskpassAnswer
		if err := a.Decode(api.AnswerAskpass, &ans); err != nil {
			return api.Secret{}, err
		}
		if !ans.Secret.IsZero() {
			return ans.Secret, nil
		}
		b.Pending = ans.Pending
	}
}

// askKey is terminal n of main's askpass key, as the processes of the terminal have it: in the
// environment of its pane's process.
func (h *harness) askKey(n int) string {
	h.t.Helper()
	return paneAskKey(h.t, h.socket, "main", n)
}

// paneAskKey reads KRAD_ADE_ASKPASS_KEY from the environment of the process of window n of
// session on the tmux server at socket: once the process has started (until its exec, a forked
// child shows the tmux server's environment).
func paneAskKey(t testing.TB, socket, session string, n int) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := exec.Command("tmux", "-S", socket, "display-message", "-p", "-t", fmt.Sprintf("=%s:%d", session, n), "#{pane_pid}").Output()
		if err != nil {
			t.Fatalf("the pane of %s:%d: %v", session, n, err)
		}
		environ, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(out)) + "/environ")
		for _, kv := range strings.Split(string(environ), "\x00") {
			if key, ok := strings.CutPrefix(kv, api.VarAskpassKey+"="); ok {
				if len(key) != 32 {
					t.Fatalf("%s:%d's askpass key is %q, want 32 hex digits", session, n, key)
				}
				return key
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process of %s:%d has no %s after 20 s", session, n, api.VarAskpassKey)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAskpassRights: only the Git caller makes Askpass; a Git caller naming an environment the app
// does not have gets a clear not_found; headless, Askpass fails at once with the hint.
func TestAskpassRights(t *testing.T) {
	t.Parallel()
	h := start(t, withTerminals(app.TerminalSpec{Title: "sh"}))
	b := &api.AskpassBody{Prompt: "Password: ", Kind: api.AskPassword, Terminal: 1, Key: h.askKey(1)}
	for _, c := range []*api.Client{h.as(1), h.as(0)} {
		if _, err := h.call(c, api.Askpass, b); code(err) != api.CodeForbidden {
			t.Errorf("Askpass as %v: %v, want forbidden", c.From, err)
		}
	}
	if _, err := h.call(h.asGit("nosuch"), api.Askpass, b); code(err) != api.CodeNotFound || !strings.Contains(err.Error(), "environments are main") {
		t.Errorf("Askpass naming no environment: %v, want not_found naming the environments", err)
	}
	_, err := h.call(h.asGit("main"), api.Askpass, b)
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "credential.helper") || !strings.Contains(err.Error(), "unset GIT_ASKPASS") {
		t.Errorf("Askpass headless: %v, want unavailable with the hint", err)
	}
}

// TestAskpassAnswered: the prompt reaches the Prompter escaped, with who raised it; the answer
// comes back once, to the poll holding the id; a refusal fails; too many prompts from one terminal
// are refused; a git that leaves cancels its prompt.
func TestAskpassAnswered(t *testing.T) {
	t.Parallel()
	h := start(t, withTerminals(app.TerminalSpec{Title: "sh"}, app.TerminalSpec{Title: "sh2"}, app.TerminalSpec{Title: "sh3"}))
	key := map[int]string{1: h.askKey(1), 2: h.askKey(2), 3: h.askKey(3)}
	release := make(chan struct{})
	p := newTestPrompter(func(pr app.Prompt) (string, error) {
		<-release
		if strings.Contains(pr.Text, "refuse") {
			return "", errors.New("refused")
		}
		return "hunter2", nil
	})
	h.app.SetPrompter(p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	got := make(chan error, 1)
	var secret api.Secret
	go func() {
		var err error
		secret, err = h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password for 'http://me@x': \x1b[2J", Kind: api.AskPassword, Terminal: 1, Key: key[1]})
		got <- err
	}()
	pr := <-p.started
	if pr.Environment != "main" || pr.Terminal != 1 || pr.Host != "this computer" || pr.Kind != api.AskPassword || strings.ContainsRune(pr.Text, 0x1b) {
		t.Errorf("the prompter was shown %+v", pr)
	}
	// Longer than one poll: the verb asks again with the id.
	time.Sleep(app.AskpassPoll + time.Second)
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("askpass: %v", err)
	}
	if secret.Reveal() != "hunter2" || fmt.Sprint(secret) != api.Redacted || fmt.Sprintf("%v %+v %#v %s", secret, secret, secret, secret) != strings.Repeat(api.Redacted+" ", 3)+api.Redacted {
		t.Errorf("the answer is %s, or prints its value", secret)
	}
	// Released once: the id answers nothing more.
	if _, err := h.call(h.asGit("main"), api.Askpass, &api.AskpassBody{Prompt: "x", Pending: pr.ID, Terminal: 1, Key: key[1]}); code(err) != api.CodeNotFound {
		t.Errorf("a second poll with the answered id: %v, want not_found", err)
	}
	// Refused: the verb fails.
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "refuse me", Terminal: 1, Key: key[1]}); code(err) != api.CodeForbidden {
		t.Errorf("a refused prompt: %v, want forbidden", err)
	}
	<-p.started

	// Too many at once from one terminal: the third is refused, the UI is not flooded.
	p.block = true
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, _ = h.askpass(cctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2, Key: key[2]})
		})
		<-p.started
	}
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2, Key: key[2]}); code(err) != api.CodeConflict {
		t.Errorf("a third open prompt of one terminal: %v, want conflict", err)
	}
	// Another terminal is not held up by it.
	wg.Go(func() {
		_, _ = h.askpass(cctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 3, Key: key[3]})
	})
	<-p.started
	// The gits leave: their prompts are given up.
	ccancel()
	wg.Wait()
	for range 3 {
		select {
		case <-p.gone:
		case <-time.After(40 * time.Second):
			t.Fatal("a prompt whose git left was not given up in 40 s")
		}
	}
}

// askpassProgram runs krad-ade-askpass with prompt as git does, in the environment of terminal n
// of main, and returns its exit code, stdout and stderr.
func (h *harness) askpassProgram(n int, prompt string) (int, string, string) {
	h.t.Helper()
	cmd := exec.Command(filepath.Join(testbin.Dir(h.t), api.AskpassName), prompt)
	cmd.Env = append(api.TerminalVars{Endpoint: h.bus.Addr(), Token: h.token}.Env(api.TerminalID{Environment: "main", Terminal: n}), "PATH=/usr/bin:/bin")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// TestAskpassLimits: a prompt of 1 MiB is refused by the bus (the line is too long) and one of
// 1,025 bytes by the request's check, before either reaches the Prompter; krad-ade-askpass then
// exits non-zero with nothing on stdout for git to take. Of 100 prompts at once from one
// terminal, exactly 2 reach the Prompter and the rest are refused with conflict at once; the 11th
// prompt a terminal starts in a minute is refused.
func TestAskpassLimits(t *testing.T) {
	t.Parallel()
	h := start(t, withTerminals(app.TerminalSpec{Title: "sh"}, app.TerminalSpec{Title: "sh2"}))
	key1, key2 := h.askKey(1), h.askKey(2)
	release := make(chan struct{})
	defer close(release)
	p := newTestPrompter(func(pr app.Prompt) (string, error) {
		if pr.Terminal == 1 {
			<-release // the person does not answer these
		}
		return "answer", nil
	})
	h.app.SetPrompter(p)

	// 1 MiB, as a line on the bus.
	line := fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Git":"main"},"request":{"Askpass":{"prompt":%q,"terminal":1}}}`+"\n",
		h.token.Reveal(), strings.Repeat("P", 1<<20))
	conn, err := net.Dial("tcp", h.bus.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { _, _ = io.WriteString(conn, line) }()
	got, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if !strings.Contains(got, `"bad_request"`) || !strings.Contains(got, "the line is longer than") {
		t.Errorf("a prompt of 1 MiB: the bus answered %.300s, want bad_request, the line too long", got)
	}
	// 1,025 bytes, and the most an argument may be, through krad-ade-askpass.
	for _, n := range []int{api.MaxPrompt + 1, 128<<10 - 1} {
		code, stdout, stderr := h.askpassProgram(1, strings.Repeat("P", n))
		if code == 0 || stdout != "" || !strings.Contains(stderr, "krad-ade-askpass: error: ") {
			t.Errorf("krad-ade-askpass with a prompt of %d bytes: exit %d, stdout %q, stderr %.300q; want a failure and nothing on stdout", n, code, stdout, stderr)
		}
		if n == api.MaxPrompt+1 && !strings.Contains(stderr, "longer than 1024") {
			t.Errorf("a prompt of 1,025 bytes: %q, want it said to be longer than 1024", stderr)
		}
	}
	if len(p.shown) != 0 {
		t.Fatalf("the Prompter was shown %d prompts that were too long", len(p.shown))
	}

	// 100 at once from terminal 1.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[api.ErrorCode]int{}
	var slowest time.Duration
	began := time.Now()
	for range 100 {
		wg.Go(func() {
			_, err := h.asGit("main").Call(ctx, api.NewRequest(api.Askpass, &api.AskpassBody{Prompt: "Password: ", Kind: api.AskPassword, Terminal: 1, Key: key1}))
			mu.Lock()
			defer mu.Unlock()
			codes[code(err)]++
			if code(err) == api.CodeConflict {
				slowest = max(slowest, time.Since(began))
			}
		})
	}
	wg.Wait()
	p.mu.Lock()
	shown := len(p.shown)
	p.mu.Unlock()
	if shown != 2 || codes[api.CodeConflict] != 98 || codes[""] != 2 {
		t.Errorf("100 prompts at once: the Prompter was shown %d, and the answers were %v; want 2 shown (pending), 98 conflict", shown, codes)
	}
	t.Logf("measured: the 98 refused prompts were all answered within %v of the first ask (the 2 open ones after the %v poll)", slowest, app.AskpassPoll)

	// The 11th in a minute, from terminal 2, whose prompts are answered at once.
	for i := 1; i <= 10; i++ {
		if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2, Key: key2}); err != nil {
			t.Fatalf("prompt %d of terminal 2: %v", i, err)
		}
	}
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 2, Key: key2}); code(err) != api.CodeConflict || !strings.Contains(err.Error(), "10 a minute") {
		t.Errorf("the 11th prompt of a minute: %v, want conflict", err)
	}
	p.mu.Lock()
	shown = len(p.shown)
	p.mu.Unlock()
	if shown != 12 {
		t.Errorf("the Prompter was shown %d prompts, want 12 (2 of terminal 1, 10 of terminal 2)", shown)
	}
}

// TestAskpassNeverAnswered: a prompt no one answers fails after Config.AskpassLimit (here 2 s)
// with unavailable, "no one answered", and the modal's ctx ends; a real git whose prompt no one
// answers fails cleanly, saying so.
func TestAskpassNeverAnswered(t *testing.T) {
	t.Parallel()
	url, _ := gitServer(t)
	repo, _, withRepo := withRepo(t)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}), func(c *app.Config) {
		c.Askpass, c.AskpassLimit = true, 2*time.Second
	})
	p := newTestPrompter(nil)
	p.block = true
	h.app.SetPrompter(p)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	_, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 1, Key: h.askKey(1)})
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "no one answered git's prompt in 2s") {
		t.Errorf("a prompt never answered: %v, want unavailable, no one answered", err)
	}
	t.Logf("measured: given up after %v", time.Since(began))
	select {
	case <-p.gone:
	case <-time.After(20 * time.Second):
		t.Error("the prompt's modal was not closed")
	}

	remote := strings.Replace(url, "http://", "http://me@", 1) + "/r.git"
	screen := h.typeAndWait(1, "cd "+repo+" && GIT_TERMINAL_PROMPT=0 git push "+remote+" main", "PUSH")
	if exitIn(screen, "PUSH") == "0" || !strings.Contains(screen, "no one answered git's prompt in 2s") {
		t.Errorf("git push whose prompt no one answers: want a failure that says so:\n%s", screen)
	}
	<-p.gone
}

// TestAskpassProven: a prompt is shown only when the askpass holds the key of the terminal it
// names. A worker's phishing line naming terminal 0 (the app's own gits), another terminal, or
// itself without its key is refused, and never reaches the Prompter; a terminal that does not
// exist is not_found. Of 2,000 prompts naming terminals 1000–2999, none is held or shown, and a
// real git's prompt, raised amid them in the worker's terminal (git ls-remote against a server
// that asks for a password), reaches the Prompter alone and is answered (how long it took is
// logged, not asserted). The terminals of one environment have at most 4 prompts open at once,
// whichever terminals they are.
func TestAskpassProven(t *testing.T) {
	t.Parallel()
	url, _ := gitServer(t)
	h := start(t, withTerminals(app.TerminalSpec{Title: "lead"}, app.TerminalSpec{Title: "worker"}, app.TerminalSpec{Title: "w2"}),
		func(c *app.Config) { c.Askpass = true })
	hold := make(chan struct{})
	var shownAt atomic.Value // when the real git's prompt reached the Prompter
	p := newTestPrompter(func(pr app.Prompt) (string, error) {
		if strings.Contains(pr.Text, "hold") {
			<-hold
		}
		if strings.Contains(pr.Text, "http://me@127.0.0.1:") {
			shownAt.Store(time.Now())
			return gitPassword, nil
		}
		return "hunter2", nil
	})
	h.app.SetPrompter(p)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lead, worker, w2 := h.askKey(1), h.askKey(2), h.askKey(3)
	if lead == worker || worker == w2 {
		t.Fatal("two terminals have the same askpass key")
	}
	phish := "Password for 'https://github.com': "
	for _, c := range []struct {
		what string
		b    api.AskpassBody
		want api.ErrorCode
	}{
		{"terminal 0 without a key", api.AskpassBody{Prompt: phish, Kind: api.AskPassword}, api.CodeForbidden},
		{"terminal 0 with the worker's key", api.AskpassBody{Prompt: phish, Kind: api.AskPassword, Key: worker}, api.CodeForbidden},
		{"the lead without a key", api.AskpassBody{Prompt: phish, Terminal: 1}, api.CodeForbidden},
		{"the lead with the worker's key", api.AskpassBody{Prompt: phish, Terminal: 1, Key: worker}, api.CodeForbidden},
		{"a terminal that does not exist", api.AskpassBody{Prompt: phish, Terminal: 9, Key: worker}, api.CodeNotFound},
	} {
		if _, err := h.call(h.asGit("main"), api.Askpass, &c.b); code(err) != c.want {
			t.Errorf("%s: %v, want %s", c.what, err, c.want)
		}
	}
	// The phishing line as a worker would type it, with the token every terminal has.
	line := fmt.Sprintf(`{"api_version":1,"token":%q,"from":{"Git":"main"},"request":{"Askpass":{"prompt":%q,"kind":"password","terminal":0}}}`+"\n",
		h.token.Reveal(), phish)
	conn, err := net.Dial("tcp", h.bus.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(conn, line)
	got, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if !strings.Contains(got, `"forbidden"`) || !strings.Contains(got, "only the gits the app runs itself") {
		t.Errorf("the phishing line: the bus answered %.300s, want forbidden", got)
	}

	// The flood, and the real prompt amid it. Each prompt is refused as naming no terminal, or,
	// when the bus holds as many connections without a complete line as it takes, dropped before
	// its line is read (the bus's own flood bound): none is held, none reaches the person.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range 2000 {
		wg.Go(func() {
			_, err := h.asGit("main").Call(ctx, api.NewRequest(api.Askpass, &api.AskpassBody{Prompt: phish, Kind: api.AskPassword, Terminal: 1000 + i, Key: worker}))
			var e *api.Error
			outcome := string(code(err))
			if errors.As(err, &e) && api.IsDropped(e) {
				outcome = "dropped"
			}
			mu.Lock()
			codes[outcome]++
			mu.Unlock()
		})
	}
	typed := time.Now()
	remote := strings.Replace(url, "http://", "http://me@", 1) + "/r.git"
	screen := h.typeAndWait(2, "GIT_TERMINAL_PROMPT=0 git ls-remote "+remote, "LSREMOTE")
	seen := time.Now() // the exit status on screen: typeAndWait polls it
	if exitIn(screen, "LSREMOTE") != "0" {
		t.Errorf("the worker's real git amid the flood failed:\n%s", screen)
	}
	<-p.started
	wg.Wait()
	if codes[string(api.CodeNotFound)]+codes["dropped"] != 2000 {
		t.Errorf("2,000 prompts naming no terminal: %v, want each not_found (or dropped by the bus's flood bound)", codes)
	}
	if at, ok := shownAt.Load().(time.Time); ok {
		t.Logf("measured, amid the flood: the worker's git's prompt reached the Prompter %v after the command was typed, and git's exit was on screen %v after that (polled)",
			at.Sub(typed).Round(time.Millisecond), seen.Sub(at).Round(time.Millisecond))
	}

	p.mu.Lock()
	shown := append([]app.Prompt(nil), p.shown...)
	p.mu.Unlock()
	if len(shown) != 1 || shown[0].Terminal != 2 || !strings.HasPrefix(shown[0].Text, "Password for 'http://me@127.0.0.1:") ||
		!strings.Contains(shown[0].Proof, "Proven: the askpass holds the key the app gave that terminal alone") {
		t.Fatalf("the Prompter was shown %+v, want the worker's git's prompt alone, proven", shown)
	}

	// The environment's cap: the lead and the worker hold 2 each; w2's first is refused.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	for _, c := range []struct {
		n   int
		key string
	}{{1, lead}, {1, lead}, {2, worker}, {2, worker}} {
		wg.Go(func() {
			_, _ = h.askpass(cctx, "main", api.AskpassBody{Prompt: "hold: ", Terminal: c.n, Key: c.key})
		})
	}
	for range 4 { // the 4 held (the worker's answered prompt was taken above)
		<-p.started
	}
	if _, err := h.askpass(ctx, "main", api.AskpassBody{Prompt: "Password: ", Terminal: 3, Key: w2}); code(err) != api.CodeConflict || !strings.Contains(err.Error(), "the terminals of main") {
		t.Errorf("a fifth open prompt in main: %v, want conflict, the environment's cap", err)
	}
	close(hold)
	ccancel()
	wg.Wait()
}
