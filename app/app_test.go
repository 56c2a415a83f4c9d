package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/local"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing in CI: scripts/test installs it")
		}
		t.Skip("tmux is missing: apt-get install tmux")
	}
}

// harness is an app on a tmux server of its own, behind a real bus.
type harness struct {
	t      *testing.T
	app    *app.App
	bus    *local.Server
	token  api.Token
	lead   api.Token
	socket string
	env    []string
	cancel context.CancelFunc
	done   chan struct{}
}

type option func(*app.Config)

func start(t *testing.T, opts ...option) *harness {
	t.Helper()
	needTmux(t)
	bin := testbin.Dir(t)
	dir := t.TempDir()
	h := &harness{t: t, socket: filepath.Join(dir, "tmux.sock")}
	h.token, _ = api.NewToken()
	h.lead, _ = api.NewToken()
	h.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "SHELL=/bin/sh", "TERM=xterm-256color", "LANG=C.UTF-8"}
	h.start(bin, opts...)
	t.Cleanup(func() {
		h.stop()
		_ = exec.Command("tmux", "-S", h.socket, "kill-server").Run()
	})
	return h
}

func (h *harness) start(bin string, opts ...option) {
	t := h.t
	ln, err := local.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		Endpoint:   ln.Addr().String(),
		Token:      h.token,
		BinDir:     bin,
		Path:       "/usr/local/bin:/usr/bin:/bin",
		Tmux:       app.TmuxConfig{SocketPath: h.socket, ConfigFile: "/dev/null", Env: h.env},
		Quiet:      500 * time.Millisecond,
		Reaction:   5 * time.Second,
		PasteDelay: 50 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.app = app.New(cfg)
	h.bus, err = local.Listen(local.Config{BusToken: h.token, LeadToken: h.lead, Build: "test", Handler: h.app, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan struct{})
	go func() { _ = h.bus.Serve(ctx) }()
	go func() { defer close(h.done); _ = h.app.Run(ctx) }()
	select {
	case <-h.app.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the environment did not come up in 20 s")
	}
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		h.t.Error("the app did not stop in 10 s")
	}
	h.cancel = nil
}

func withTerminals(specs ...app.TerminalSpec) option {
	return func(c *app.Config) { c.Terminals = specs }
}

// as is a client calling as terminal n of main.
func (h *harness) as(n int) *api.Client {
	from := api.FromClient
	if n > 0 {
		from = api.FromTerminal(api.TerminalID{Environment: "main", Terminal: n})
	}
	return &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: from}
}

func (h *harness) call(c *api.Client, name api.Name, body any) (api.Answer, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	return c.Call(ctx, api.NewRequest(name, body))
}

func (h *harness) agents(c *api.Client) []api.Agent {
	h.t.Helper()
	a, err := h.call(c, api.ListAll, nil)
	if err != nil {
		h.t.Fatalf("ListAll: %v", err)
	}
	var agents []api.Agent
	if err := a.Decode("Agents", &agents); err != nil {
		h.t.Fatal(err)
	}
	return agents
}

func (h *harness) agent(c *api.Client, name api.Name, body any) api.Agent {
	h.t.Helper()
	a, err := h.call(c, name, body)
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	var ag api.Agent
	if err := a.Decode("Agent", &ag); err != nil {
		h.t.Fatal(err)
	}
	return ag
}

func (h *harness) read(c *api.Client, n int) string {
	h.t.Helper()
	a, err := h.call(c, api.Read, &api.ReadBody{Target: api.Target(n)})
	if err != nil {
		h.t.Fatalf("Read %d: %v", n, err)
	}
	var s api.Screen
	if err := a.Decode("Screen", &s); err != nil {
		h.t.Fatal(err)
	}
	return s.Text
}

// waitScreen waits until terminal n's screen contains want.
func (h *harness) waitScreen(c *api.Client, n int, want string) string {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var text string
	for time.Now().Before(deadline) {
		if text = h.read(c, n); strings.Contains(text, want) {
			return text
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("terminal %d never showed %q; its screen:\n%s", n, want, text)
	return ""
}

func secs(n uint32) *uint32 { return &n }

func code(err error) api.ErrorCode {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func lead() option {
	return withTerminals(app.TerminalSpec{Title: "lead", Lead: true})
}

func TestComesUpWithAShell(t *testing.T) {
	h := start(t)
	agents := h.agents(h.as(0))
	if len(agents) != 1 || agents[0].Terminal != 1 || agents[0].Role != api.RoleShell || agents[0].Environment != "main" {
		t.Fatalf("got %+v, want one shell main:1", agents)
	}
	// Its variables are the spec's, set by the app, not by rc files.
	c := h.as(1)
	h.call(c, api.Report, &api.ReportBody{State: api.StateIdle}) // a terminal may report itself
	out, err := exec.Command("tmux", "-S", h.socket, "show-environment", "-t", "main", "KRAD_ADE_ENDPOINT").Output()
	if err != nil || strings.TrimSpace(string(out)) != "KRAD_ADE_ENDPOINT="+h.bus.Addr() {
		t.Errorf("session environment KRAD_ADE_ENDPOINT: %q %v", out, err)
	}
}

func TestTerminalVariablesAndKradInside(t *testing.T) {
	h := start(t, lead())
	c := h.as(1)
	worker := h.agent(c, api.Spawn, &api.SpawnBody{Title: "vars", Command: []string{"sh", "-c",
		`echo "T=$KRAD_ADE_TERMINAL E=$KRAD_ADE_ENDPOINT"; case "$PATH" in ` + testbin.Dir(t) + `:*) echo PATHOK;; esac; krad api; echo "exit=$?"; sleep 30`}})
	screen := h.waitScreen(c, worker.Terminal, "exit=")
	for _, want := range []string{
		fmt.Sprintf("T=main:%d E=%s", worker.Terminal, h.bus.Addr()),
		"PATHOK",
		"agents API v1 · build test",
		"exit=0",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the worker's screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, h.token.Reveal()) {
		t.Error("the screen shows the token")
	}
}

func TestSpawnSendWaitReadClose(t *testing.T) {
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "echo", Command: []string{"sh", "-c", `while read line; do echo "got: $line"; done`}})
	if w.Role != api.RoleWorker || w.Session != "main:1" || w.Title != "echo" {
		t.Errorf("spawned %+v", w)
	}
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "hello there"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)})
	if got.State != api.StateIdle {
		t.Errorf("Wait answered %s, want idle", got.State)
	}
	if screen := h.read(c, w.Terminal); !strings.Contains(screen, "got: hello there") {
		t.Errorf("after Wait, the screen lacks the answer:\n%s", screen)
	}
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, a := range h.agents(h.as(0)) {
		if a.Terminal == w.Terminal {
			t.Errorf("after Close, List still shows %+v", a)
		}
	}
}

// TestWaitAfterSend: a worker that takes a second to react to what it was sent must not be
// answered as idle on the state it had before the Send.
func TestWaitAfterSend(t *testing.T) {
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "slow", Command: []string{"sh", "-c",
		`while read line; do sleep 1; echo "thinking about $line"; sleep 0.3; echo "answer: 42"; done`}})
	// Let it settle first: idle before the Send.
	if a := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)}); a.State != api.StateIdle {
		t.Fatalf("before the Send: %s", a.State)
	}
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "life", Enter: nil}); err != nil {
		t.Fatal(err)
	}
	got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)})
	if got.State != api.StateIdle {
		t.Errorf("Wait answered %s, want idle", got.State)
	}
	if screen := h.read(c, w.Terminal); !strings.Contains(screen, "answer: 42") {
		t.Errorf("Wait returned before the worker answered; its screen:\n%s", screen)
	}
}

func TestExitCodes(t *testing.T) {
	h := start(t, lead())
	c := h.as(1)
	ok := h.agent(c, api.Spawn, &api.SpawnBody{Title: "ok", Command: []string{"true"}})
	bad := h.agent(c, api.Spawn, &api.SpawnBody{Title: "bad", Command: []string{"sh", "-c", "exit 3"}})
	missing := h.agent(c, api.Spawn, &api.SpawnBody{Title: "missing", Command: []string{"no-such-command-krad"}})
	for _, tt := range []struct {
		a     api.Agent
		state string
		code  int
	}{{ok, api.StateDone, 0}, {bad, api.StateFailed, 3}, {missing, api.StateFailed, 127}} {
		got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(tt.a.Terminal), TimeoutSecs: secs(30)})
		if got.State != tt.state || got.ExitCode == nil || *got.ExitCode != tt.code {
			t.Errorf("%s: got %s exit %v, want %s exit %d", tt.a.Title, got.State, got.ExitCode, tt.state, tt.code)
		}
	}
	_, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(bad.Terminal), Text: "x"})
	if code(err) != api.CodeConflict {
		t.Errorf("Send to an exited worker: %v, want conflict", err)
	}
}

func TestRights(t *testing.T) {
	h := start(t, withTerminals(
		app.TerminalSpec{Title: "lead one", Lead: true},
		app.TerminalSpec{Title: "lead two", Lead: true},
		app.TerminalSpec{Title: "shell"},
	))
	one, two, shell := h.as(1), h.as(2), h.as(3)
	w := h.agent(one, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sleep", "60"}})
	tests := []struct {
		name string
		c    *api.Client
		req  api.Name
		body any
		want api.ErrorCode
	}{
		{"another lead's worker", two, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x"}, api.CodeForbidden},
		{"another lead closes it", two, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}, api.CodeForbidden},
		{"a shell sends", shell, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x"}, api.CodeForbidden},
		{"a shell spawns", shell, api.Spawn, &api.SpawnBody{Title: "x", Command: []string{"true"}}, api.CodeForbidden},
		{"a client reads", h.as(0), api.Read, &api.ReadBody{Target: 1}, api.CodeForbidden},
		{"no such target", one, api.Send, &api.SendBody{Target: 99, Text: "x"}, api.CodeNotFound},
		{"read no such target", shell, api.Read, &api.ReadBody{Target: 99}, api.CodeNotFound},
		{"a shell reads the worker", shell, api.Read, &api.ReadBody{Target: api.Target(w.Terminal)}, ""},
		{"its lead sends", one, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x", Enter: new(bool)}, ""},
	}
	for _, tt := range tests {
		_, err := h.call(tt.c, tt.req, tt.body)
		if code(err) != tt.want {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
