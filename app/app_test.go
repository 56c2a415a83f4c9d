package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/kradtest/proctest"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/local"
)

func TestMain(m *testing.M) { testbin.Main(m) }

func needTmux(t testing.TB) {
	t.Helper()
	testbin.Need(t, "tmux", "tmux")
}

// harness is an app on a tmux server of its own, behind a real bus.
type harness struct {
	t      testing.TB
	app    *app.App
	bus    *local.Server
	token  api.Token
	lead   api.Token
	socket string
	dir    string // the test's own folder: the terminals' HOME and TMPDIR, tmux's socket
	env    []string
	served *apptest.Served
}

type option func(*app.Config)

func start(t testing.TB, opts ...option) *harness {
	t.Helper()
	needTmux(t)
	bin := testbin.Dir(t)
	dir := t.TempDir()
	h := &harness{t: t, socket: filepath.Join(dir, "tmux.sock"), dir: dir}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	h.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + tmp, "SHELL=/bin/sh", "TERM=xterm-256color", "LANG=C.UTF-8"}
	h.start(bin, opts...)
	t.Cleanup(func() {
		h.stop()
		killServer(h.socket)
	})
	return h
}

// killServer kills the tmux server at socket and waits up to 5 s for its panes' processes to
// end: a shell or an interpreter that tmux hangs up on writes its history into HOME (the test's
// folder) as it exits, and would race the folder's removal.
func killServer(socket string) {
	out, _ := exec.Command("tmux", "-S", socket, "list-panes", "-a", "-F", "#{pane_pid}").Output()
	_ = exec.Command("tmux", "-S", socket, "kill-server").Run()
	deadline := time.Now().Add(5 * time.Second)
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			continue
		}
		for proctest.Running(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// start starts the app and its bus, with fresh tokens each run, as krad-ade makes them, on the
// port of the run before when it is free.
func (h *harness) start(bin string, opts ...option) {
	t := h.t
	tc := app.TmuxConfig{SocketPath: h.socket, ConfigFile: "/dev/null", Env: h.env}
	ln, err := local.ListenLoopback(app.PreviousEndpoint(context.Background(), tc, app.Local))
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		BinDir:     bin,
		Path:       "/usr/local/bin:/usr/bin:/bin",
		Tmux:       tc,
		Quiet:      500 * time.Millisecond,
		Reaction:   5 * time.Second,
		PasteDelay: 50 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.served = apptest.ServeApp(t, ln, cfg, local.Config{})
	h.app, h.bus, h.token, h.lead = h.served.App, h.served.Bus, h.served.Token, h.served.Lead
}

func (h *harness) stop() { h.served.Stop(h.t) }

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
	return h.waitScreenWithin(c, n, want, 15*time.Second)
}

// waitScreenWithin waits up to d until terminal n's screen contains want.
func (h *harness) waitScreenWithin(c *api.Client, n int, want string, d time.Duration) string {
	h.t.Helper()
	deadline := time.Now().Add(d)
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

// exitOf is an agent's exit code for a test's message: the number, or "none".
func exitOf(a api.Agent) string {
	if a.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*a.ExitCode)
}

func lead() option {
	return withTerminals(app.TerminalSpec{Title: "lead", Lead: true})
}

func TestComesUpWithAShell(t *testing.T) {
	t.Parallel()
	h := start(t)
	agents := h.agents(h.as(0))
	if len(agents) != 1 || agents[0].Terminal != 1 || agents[0].Role != api.RoleShell || agents[0].Environment != "main" {
		t.Fatalf("got %+v, want one shell main:1", agents)
	}
	// A terminal may report itself, and is believed: the shell is needs_input once it says so,
	// whatever its screen did (without the Report it is starting, then idle).
	c := h.as(1)
	if a, err := h.call(c, api.Report, &api.ReportBody{State: api.StateNeedsInput}); err != nil || a.Name != api.OK.Name {
		t.Fatalf("Report as main:1: got %s, %v; want Ok", a.Name, err)
	}
	if got := h.agent(c, api.Check, &api.CheckBody{Target: 1}); got.State != api.StateNeedsInput {
		t.Errorf("after its Report, main:1 is %s, want needs_input", got.State)
	}
	// Its variables are the spec's, set by the app, not by rc files.
	out, err := exec.Command("tmux", "-S", h.socket, "show-environment", "-t", "main", "KRAD_ADE_ENDPOINT").Output()
	if err != nil || strings.TrimSpace(string(out)) != "KRAD_ADE_ENDPOINT="+h.bus.Addr() {
		t.Errorf("session environment KRAD_ADE_ENDPOINT: %q %v", out, err)
	}
}

func TestTerminalVariablesAndKradInside(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	// Silent for 1 s after each line, twice the quiet spell: a Wait right after the Send must wait
	// for that reaction. Its answer then comes at once (a pause there of 0.3 s, against the
	// quiet spell's 500 ms, was once taken for the end on a loaded machine).
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "slow", Command: []string{"sh", "-c",
		`while read line; do sleep 1; echo "thinking about $line"; echo "answer: 42"; done`}})
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
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	ok := h.agent(c, api.Spawn, &api.SpawnBody{Title: "ok", Command: []string{"true"}})
	bad := h.agent(c, api.Spawn, &api.SpawnBody{Title: "bad", Command: []string{"sh", "-c", "exit 3"}})
	missing := h.agent(c, api.Spawn, &api.SpawnBody{Title: "missing", Command: []string{"no-such-command-krad"}})
	if missing.State != api.StateFailed || missing.ExitCode == nil || *missing.ExitCode != 127 {
		t.Errorf("Spawn of a missing command answered %s %s, want failed 127: the lead must be told", missing.State, exitOf(missing))
	}
	for _, tt := range []struct {
		a     api.Agent
		state api.State
		code  int
	}{{ok, api.StateDone, 0}, {bad, api.StateFailed, 3}, {missing, api.StateFailed, 127}} {
		got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(tt.a.Terminal), TimeoutSecs: secs(30)})
		if got.State != tt.state || got.ExitCode == nil || *got.ExitCode != tt.code {
			t.Errorf("%s: got %s exit %s, want %s exit %d", tt.a.Title, got.State, exitOf(got), tt.state, tt.code)
		}
	}
	_, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(bad.Terminal), Text: "x"})
	if code(err) != api.CodeConflict {
		t.Errorf("Send to an exited worker: %v, want conflict", err)
	}
}

// TestEndToldByTmuxsHook: the end of a worker reaches the app through tmux's pane-died hook,
// which runs krad-ade-agents ended, with its exit code: here the app's subscription to pane deaths
// is taken away first, so that nothing else could tell it.
func TestEndToldByTmuxsHook(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", "krad report working; echo ready; read x; exit 3"}})
	k := h.agent(c, api.Spawn, &api.SpawnBody{Title: "k", Command: []string{"sh", "-c", "krad report working; echo ready; sleep 600"}})
	h.waitScreen(c, w.Terminal, "ready")
	h.waitScreen(c, k.Terminal, "ready")
	unsubscribe(t, h.tmux)
	if out, err := h.tmux("send-keys", "-t", h.window(w.Terminal), "Enter").CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys: %v %s", err, out)
	}
	pid := h.panePID(k.Terminal)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// tmux runs pane-died once it has collected the process's status; tmux built with
	// libutempter can miss the SIGCHLD until another child of its own ends, and the app then
	// starts one (collect), which it does only after its subscription saw the pane dead: here
	// the test does, as the app would.
	for _, tt := range []struct {
		a    api.Agent
		code string
	}{{w, "3"}, {k, "143"}} {
		var got api.Agent
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			got = h.agent(c, api.Check, &api.CheckBody{Target: api.Target(tt.a.Terminal), WaitSecs: secs(1)})
			if api.Ended(got.State) {
				break
			}
			_ = h.tmux("display-message", "-p", "#(true)").Run()
		}
		if got.State != api.StateFailed || exitOf(got) != tt.code {
			t.Errorf("%s: got %s exit %s, want failed exit %s", tt.a.Title, got.State, exitOf(got), tt.code)
		}
	}
}

// TestEndedIsNeverIdle: a worker whose process ended is done or failed, with its exit code, and
// never idle, even when nothing has told the app of the end by the time its quiet spell is over:
// here tmux's hook and the app's subscription to pane deaths are both taken away, so that the
// app learns it only by asking tmux as the worker would become idle.
func TestEndedIsNeverIdle(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Command: []string{"sh", "-c", "echo ready; read x; echo bye; exit 5"}})
	h.waitScreen(c, w.Terminal, "ready")
	if out, err := h.tmux("set-hook", "-gu", app.EndedHook).CombinedOutput(); err != nil {
		t.Fatalf("tmux set-hook: %v %s", err, out)
	}
	unsubscribe(t, h.tmux)
	if out, err := h.tmux("send-keys", "-t", h.window(w.Terminal), "Enter").CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys: %v %s", err, out)
	}
	h.waitScreen(c, w.Terminal, "bye")
	if got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)}); got.State != api.StateFailed || exitOf(got) != "5" {
		t.Errorf("the ended worker is %s exit %s, want failed exit 5", got.State, exitOf(got))
	}
}

// unsubscribe takes the app's subscription to pane deaths away from its control client, on the
// tmux server tmux runs commands on.
func unsubscribe(t *testing.T, tmux func(args ...string) *exec.Cmd) {
	t.Helper()
	out, err := tmux("list-clients", "-F", "#{client_control_mode} #{client_name}").Output()
	if err != nil {
		t.Fatalf("tmux list-clients: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ok := strings.CutPrefix(line, "1 "); ok {
			if out, err := tmux("refresh-client", "-t", name, "-B", "krad-dead").CombinedOutput(); err != nil {
				t.Fatalf("tmux refresh-client: %v %s", err, out)
			}
			n++
		}
	}
	if n != 1 {
		t.Fatalf("tmux lists %d control clients, want the app's alone:\n%s", n, out)
	}
}

// panePID is the process of terminal n's window.
func (h *harness) panePID(n int) int {
	h.t.Helper()
	out, err := h.tmux("display-message", "-p", "-t", h.window(n), "#{pane_pid}").Output()
	if err != nil {
		h.t.Fatalf("tmux display-message: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		h.t.Fatal(err)
	}
	return pid
}

// tmux is a tmux command on the app's server.
func (h *harness) tmux(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-S", h.socket}, args...)...)
}

// TestKilledWorkersExitCode: workers killed outside the app (their whole process group) are
// each reported failed with 128+9. tmux built with
// libutempter misses some of these deaths' SIGCHLD and leaves the pane dead without a status
// until another of its children ends; the app must still learn the code, every time.
func TestKilledWorkersExitCode(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	const n = 12
	var workers []api.Agent
	for i := range n {
		workers = append(workers, h.agent(c, api.Spawn, &api.SpawnBody{Title: fmt.Sprintf("victim%d", i), Command: []string{"sleep", "600"}}))
	}
	out, err := exec.Command("tmux", "-S", h.socket, "list-windows", "-t", "main", "-F", "#{@krad_terminal} #{pane_pid}").Output()
	if err != nil {
		t.Fatalf("list-windows: %v", err)
	}
	pids := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, pid, _ := strings.Cut(line, " ")
		if p, err := strconv.Atoi(pid); err == nil {
			pids[id] = p
		}
	}
	for _, w := range workers {
		pid, ok := pids[fmt.Sprintf("main:%d", w.Terminal)]
		if !ok {
			t.Fatalf("no pane for %s in %q", w.Title, out)
		}
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the process group of %s: %v", w.Title, err)
		}
	}
	// A Wait would answer at once: the workers were idle. List until every one has ended.
	byTerminal := map[int]api.Agent{}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ended := 0
		for _, a := range h.agents(h.as(0)) {
			byTerminal[a.Terminal] = a
			if a.Role == api.RoleWorker && api.Ended(a.State) {
				ended++
			}
		}
		if ended == n {
			break
		}
	}
	for _, w := range workers {
		got := byTerminal[w.Terminal]
		if got.State != api.StateFailed || got.ExitCode == nil || *got.ExitCode != 137 {
			t.Errorf("%s killed with SIGKILL: got %s exit %s, want failed exit 137", w.Title, got.State, exitOf(got))
		}
	}
}

func TestRights(t *testing.T) {
	t.Parallel()
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

// events subscribes as a Client and returns a channel of the stream's answers.
func (h *harness) events(ctx context.Context) <-chan api.Answer {
	ch := make(chan api.Answer, 1024)
	go func() {
		defer close(ch)
		_ = h.as(0).Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error {
			ch <- a
			return nil
		})
	}()
	return ch
}

// next waits up to 20 s for the first answer on ch that match accepts.
func next(t *testing.T, ch <-chan api.Answer, what string, match func(api.Answer) bool) api.Answer {
	t.Helper()
	return nextWithin(t, ch, 20*time.Second, what, match)
}

// nextWithin waits up to d for the first answer on ch that match accepts.
func nextWithin(t *testing.T, ch <-chan api.Answer, d time.Duration, what string, match func(api.Answer) bool) api.Answer {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case a, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			if match(a) {
				return a
			}
		case <-timeout:
			t.Fatalf("no %s within %s", what, d)
		}
	}
}

func agentEvent(kind string, n int, state api.State) func(api.Answer) bool {
	return func(a api.Answer) bool {
		var ev api.AgentEvent
		if a.Decode("AgentEvent", &ev) != nil {
			return false
		}
		return ev.Kind == kind && ev.Agent.Terminal == n && (state == "" || ev.Agent.State == state)
	}
}

func appEvent(kind string) func(api.Answer) bool {
	return func(a api.Answer) bool {
		var ev api.AppEvent
		return a.Decode("AppEvent", &ev) == nil && ev.Kind == kind
	}
}

func TestSubscribeAgents(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	snap := next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	var agents []api.Agent
	_ = snap.Decode("Agents", &agents)
	if len(agents) != 1 || agents[0].Role != api.RoleLead {
		t.Fatalf("snapshot %+v, want the lead", agents)
	}
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "quick", Command: []string{"sh", "-c", "echo secret-screen-text; sleep 0.2; exit 4"}})
	next(t, ch, "added", agentEvent(api.AgentAdded, w.Terminal, ""))
	got := next(t, ch, "failed", agentEvent(api.AgentChanged, w.Terminal, api.StateFailed))
	if strings.Contains(string(got.Body), "secret-screen-text") {
		t.Error("an event carries screen contents")
	}
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatal(err)
	}
	next(t, ch, "closed", agentEvent(api.AgentChanged, w.Terminal, api.StateClosed))
	next(t, ch, "removed", agentEvent(api.AgentRemoved, w.Terminal, ""))
}

// TestCheckWaitsForTheNextChange: Check with wait_secs answers the agent after its next change,
// not as it is. The shell reports needs_input, which holds (a reported state is believed); a
// Check with a wait gets no answer while nothing changes, and once the shell reports working it
// gets working. A Check that ignored wait_secs would answer needs_input at once.
func TestCheckWaitsForTheNextChange(t *testing.T) {
	t.Parallel()
	h := start(t)
	c := h.as(1)
	report := func(state api.State) {
		t.Helper()
		if _, err := h.call(c, api.Report, &api.ReportBody{State: state}); err != nil {
			t.Fatalf("Report %s: %v", state, err)
		}
	}
	report(api.StateNeedsInput)
	if now := h.agent(c, api.Check, &api.CheckBody{Target: 1}); now.State != api.StateNeedsInput {
		t.Fatalf("Check without a wait: %s, want needs_input", now.State)
	}
	type answer struct {
		agent api.Agent
		err   error
	}
	answered := make(chan answer, 1)
	go func() {
		var ag api.Agent
		a, err := c.Call(context.Background(), api.NewRequest(api.Check, &api.CheckBody{Target: 1, WaitSecs: secs(30)}))
		if err == nil {
			err = a.Decode("Agent", &ag)
		}
		answered <- answer{ag, err}
	}()
	select {
	case got := <-answered:
		t.Fatalf("Check with a wait answered %s, %v while nothing changed", got.agent.State, got.err)
	case <-time.After(time.Second): // nothing changes meanwhile: the answer must not come
	}
	report(api.StateWorking)
	select {
	case got := <-answered:
		if got.err != nil || got.agent.State != api.StateWorking {
			t.Errorf("Check with a wait answered %s, %v; want working, the change", got.agent.State, got.err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("Check with a wait did not answer the change within 40 s")
	}
}

// TestWindowOpenedByHand: a person who opens a window in the app's tmux gets a numbered terminal
// with the variables.
func TestWindowOpenedByHand(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	if out, err := exec.Command("tmux", "-S", h.socket, "new-window", "-t", "main:").CombinedOutput(); err != nil {
		t.Fatalf("tmux new-window: %v %s", err, out)
	}
	added := next(t, ch, "the new window", func(a api.Answer) bool {
		var ev api.AgentEvent
		return a.Decode("AgentEvent", &ev) == nil && ev.Kind == api.AgentAdded
	})
	var ev api.AgentEvent
	_ = added.Decode("AgentEvent", &ev)
	if ev.Agent.Role != api.RoleShell || ev.Agent.Terminal != 2 {
		t.Errorf("the window came as %+v, want shell main:2", ev.Agent)
	}
	c := h.as(1)
	h.waitScreen(c, 2, "#") // the shell's prompt: a person types once they see it
	// Type into it as its person would: its krad knows which terminal it is.
	if _, err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", h.window(2), `echo "I am $KRAD_ADE_TERMINAL"; krad api >/dev/null && echo BUS-OK`, "Enter").CombinedOutput(); err != nil {
		t.Fatal(err)
	}
	h.waitScreen(c, 2, "I am main:2")
	h.waitScreen(c, 2, "BUS-OK")
}

// window is the tmux window id of terminal n of main.
func (h *harness) window(n int) string {
	h.t.Helper()
	out, err := exec.Command("tmux", "-S", h.socket, "list-windows", "-t", "main", "-F", "#{window_id} #{@krad_terminal}").Output()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if id, term, ok := strings.Cut(line, " "); ok && term == fmt.Sprintf("main:%d", n) {
			return id
		}
	}
	h.t.Fatalf("no window for main:%d in\n%s", n, out)
	return ""
}

// TestTmuxKilled: tmux killed from outside closes the terminals, says the environment went down,
// and the app brings the environment back and keeps serving.
func TestTmuxKilled(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	if err := exec.Command("tmux", "-S", h.socket, "kill-server").Run(); err != nil {
		t.Fatal(err)
	}
	next(t, ch, "the lead closed", agentEvent(api.AgentChanged, 1, api.StateClosed))
	next(t, ch, "environment down", appEvent(api.EnvironmentDown))
	next(t, ch, "environment up", appEvent(api.EnvironmentUp))
	agents := h.agents(h.as(0))
	if len(agents) != 1 || agents[0].Terminal < 2 || agents[0].Role != api.RoleShell {
		t.Errorf("after the restart: %+v, want one new shell with a new number", agents)
	}
	if _, err := h.call(h.as(0), api.Hello, nil); err != nil {
		t.Errorf("Hello after the restart: %v", err)
	}
}

// TestRestartAdopts: a new app on the same tmux server adopts the live windows with their numbers,
// roles and sessions.
func TestRestartAdopts(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "survivor", Command: []string{"sh", "-c", "sleep 60"}})
	h.stop()
	h.start(testbin.Dir(t), lead()) // the same socket: the same tmux server
	agents := h.agents(h.as(0))
	if len(agents) != 2 {
		t.Fatalf("after the restart: %+v, want the lead and its worker", agents)
	}
	if agents[0].Terminal != 1 || agents[0].Role != api.RoleLead || agents[1].Terminal != w.Terminal || agents[1].Role != api.RoleWorker || agents[1].Session != "main:1" || agents[1].Title != "survivor" {
		t.Errorf("after the restart: %+v", agents)
	}
	// The lead still directs its worker, and new terminals get new numbers.
	if _, err := h.call(h.as(1), api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x", Enter: new(bool)}); err != nil {
		t.Errorf("Send after the restart: %v", err)
	}
	w2 := h.agent(h.as(1), api.Spawn, &api.SpawnBody{Title: "new", Command: []string{"sleep", "60"}})
	if w2.Terminal <= w.Terminal {
		t.Errorf("a new worker got number %d, not after %d", w2.Terminal, w.Terminal)
	}
	// The lead's shell outlived the first run: its KRAD_ADE_TOKEN is that run's, and its krad
	// says so.
	if err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", h.window(1), "krad list; echo rc=$?", "Enter").Run(); err != nil {
		t.Fatal(err)
	}
	screen := h.waitScreen(h.as(1), 1, "\nrc=")
	if !strings.Contains(screen, "rc=3") || !strings.Contains(screen, "KRAD_ADE_TOKEN is from an earlier run of krad-ade") {
		t.Errorf("krad in a terminal from the earlier run:\n%s", screen)
	}
}

// TestSpawnCloseLoop: workers spawned and closed one after another leave no process, file
// descriptor or goroutine behind. The counts may grow by 2 fds and 5 goroutines (the runtime's
// and the test's own), so 60 rounds show a leak of one per round many times over, and one every
// tenth round still.
func TestSpawnCloseLoop(t *testing.T) {
	const rounds = 60
	if testing.Short() {
		t.Skip("spawns workers in a loop")
	}
	h := start(t, lead())
	c := h.as(1)
	fds := func() int { ents, _ := os.ReadDir("/proc/self/fd"); return len(ents) }
	panes := func() int {
		out, _ := exec.Command("tmux", "-S", h.socket, "list-panes", "-a", "-F", "#{pane_pid}").Output()
		return len(strings.Fields(string(out)))
	}
	// The workers sleep for a time no other test's processes sleep for (GNU sleep takes a
	// fraction), so that counting them by their command line counts this test's only.
	nap := fmt.Sprintf("4242.%d", os.Getpid())
	// One round first, so that lazily made things (connections, buffers) exist before counting.
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "warm", Command: []string{"sleep", nap}})
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fd0, g0, p0 := fds(), runtime.NumGoroutine(), panes()
	for i := range rounds {
		w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "loop", Command: []string{"sleep", nap}})
		if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
	}
	if n := len(h.agents(h.as(0))); n != 1 {
		t.Errorf("%d agents after the loop, want the lead alone", n)
	}
	sleeps := func() int {
		out, _ := exec.Command("pgrep", "-f", "sleep "+nap).Output()
		return len(strings.Fields(string(out)))
	}
	leaked := func() bool {
		return fds() > fd0+2 || runtime.NumGoroutine() > g0+5 || panes() > p0 || sleeps() > 0
	}
	// Closing a window hangs up its process, which then takes a moment to exit.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && leaked() {
		time.Sleep(100 * time.Millisecond)
	}
	if leaked() {
		t.Errorf("after %d rounds: %d fds (was %d), %d goroutines (was %d), %d panes (was %d), %d worker processes left",
			rounds, fds(), fd0, runtime.NumGoroutine(), g0, panes(), p0, sleeps())
		// Which processes, and where they hang: their parent, group, session, state and command.
		out, _ := exec.Command("sh", "-c", `for p in $(pgrep -f "$1"); do ps -o pid=,ppid=,pgid=,sid=,tty=,stat=,wchan:20=,args= -p "$p"; grep -E '^(Sig|Shd)' /proc/$p/status; ls -l /proc/$p/fd; done`, "sh", "sleep "+nap).CombinedOutput()
		t.Logf("left:\n%s", out)
	}
}

// TestShellExitCloses: a shell's window closes when its person types exit; an agent's stays to
// show how it ended.
func TestShellExitCloses(t *testing.T) {
	t.Parallel()
	h := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	h.waitScreen(h.as(1), 1, "#")
	if err := exec.Command("tmux", "-S", h.socket, "send-keys", "-t", h.window(1), "exit 5", "Enter").Run(); err != nil {
		t.Fatal(err)
	}
	next(t, ch, "the shell closed", agentEvent(api.AgentChanged, 1, api.StateClosed))
	next(t, ch, "the shell removed", agentEvent(api.AgentRemoved, 1, ""))
}

// TestClientLost: when only the way to tmux breaks (its control client dies; over SSH, the
// connection drops), the terminals live on in tmux: they keep their numbers and states, and the
// app attaches again.
func TestClientLost(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "long", Command: []string{"sh", "-c", "krad report working; sleep 60"}})
	h.agent(c, api.Check, &api.CheckBody{Target: api.Target(w.Terminal), WaitSecs: secs(5)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	// The client is this process's child; the server, which shows the same command line, is not.
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", "tmux -u -S "+h.socket+" .*-C").Output()
	if err != nil {
		t.Fatalf("no control client found: %v", err)
	}
	for _, pid := range strings.Fields(string(out)) {
		_ = exec.Command("kill", "-9", pid).Run()
	}
	next(t, ch, "environment down", appEvent(api.EnvironmentDown))
	next(t, ch, "environment up", appEvent(api.EnvironmentUp))
	agents := h.agents(h.as(0))
	if len(agents) != 2 || agents[1].Terminal != w.Terminal || agents[1].State != api.StateWorking {
		t.Errorf("after the client came back: %+v, want the lead and its worker, working", agents)
	}
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x", Enter: new(bool)}); err != nil {
		t.Errorf("Send after the client came back: %v", err)
	}
}

// TestSendIsLiteralThenEnter: the text arrives as typed, nothing in it interpreted by tmux or a
// shell, and Enter comes after the paste pause, as its own key.
func TestSendIsLiteralThenEnter(t *testing.T) {
	t.Parallel()
	h := start(t, lead())
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "echo", Command: []string{"sh", "-c", `IFS= read -r line; printf 'got<%s>\n' "$line"; sleep 30`}})
	text := `it's $HOME; "quoted" \back #{session_name} ~ -t`
	began := time.Now()
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: text}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 50*time.Millisecond {
		t.Errorf("Send with Enter took %v, less than the paste pause (50 ms here)", took)
	}
	h.waitScreen(c, w.Terminal, "got<"+text+">")
}

// stopTmux stops the harness's tmux server (SIGSTOP), as a hung host would, until resume is
// called or the test ends.
func (h *harness) stopTmux() (resume func()) {
	h.t.Helper()
	out, err := exec.Command("tmux", "-S", h.socket, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		h.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		h.t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				h.t.Error(err)
			}
		})
	}
	h.t.Cleanup(resume)
	return resume
}

// TestStoppedTmux: a tmux server that stops answering (SIGSTOP, as a hung host would) takes the
// environment down with a message; meanwhile its agents are unreachable, not idle, and a Wait
// does not take that for settled. Once tmux answers again the app attaches by itself and the
// agents have their own states back.
func TestStoppedTmux(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), func(c *app.Config) { c.TmuxTimeout = 2 * time.Second })
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "busy", Command: []string{"sh", "-c", "krad report working; sleep 120"}})
	h.agent(c, api.Check, &api.CheckBody{Target: api.Target(w.Terminal), WaitSecs: secs(5)})
	h.agent(c, api.Wait, &api.WaitBody{Target: 1, TimeoutSecs: secs(20)}) // the lead's shell at its prompt, idle
	before := h.agents(h.as(0))
	if len(before) != 2 || before[0].State != api.StateIdle || before[1].State != api.StateWorking {
		t.Fatalf("before: %+v, want the lead idle and its worker working", before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.events(ctx)
	next(t, ch, "the snapshot", func(a api.Answer) bool { return a.Name == "Agents" })
	resume := h.stopTmux()
	down := next(t, ch, "environment down", appEvent(api.EnvironmentDown))
	var ev api.AppEvent
	_ = down.Decode("AppEvent", &ev)
	if !strings.Contains(ev.Message, "tmux stopped answering") {
		t.Errorf("environment down: %q, want it to say that tmux stopped answering", ev.Message)
	}
	for _, ag := range h.agents(h.as(0)) {
		if ag.State != api.StateUnreachable {
			t.Errorf("while tmux is stopped: %s is %s, want unreachable", ag.ID(), ag.State)
		}
	}
	if a, err := h.call(c, api.Wait, &api.WaitBody{Target: 1, TimeoutSecs: secs(1)}); !errors.Is(err, api.ErrTimedOut) {
		t.Errorf("Wait on an unreachable agent: got %s %s, %v; want TimedOut", a.Name, a.Body, err)
	}

	resume()
	next(t, ch, "environment up", appEvent(api.EnvironmentUp))
	after := h.agents(h.as(0))
	if len(after) != 2 || after[0].State != api.StateIdle || after[1].State != api.StateWorking || after[1].Terminal != w.Terminal {
		t.Errorf("after: %+v, want the lead idle and its worker working again", after)
	}
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(w.Terminal), Text: "x", Enter: new(bool)}); err != nil {
		t.Errorf("Send once tmux answers again: %v", err)
	}
}
